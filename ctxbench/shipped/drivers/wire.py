"""The driver side of ctxbench's line protocol (stdlib only: it runs in a release's env).

The protocol's stdout is taken over before the framework is imported: file descriptor 1 is
pointed at stderr, so whatever the framework prints or logs lands in the stderr tail ctxbench
shows on failure, and only :func:`send` writes protocol lines.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

_OUT = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="surrogatepass")
os.dup2(2, 1)
sys.stdout = sys.stderr

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def installed_version(distribution: str, unknown: str = "?") -> str:
    """The version of ``distribution`` installed in this environment (``unknown`` without
    metadata)."""
    from importlib.metadata import version

    try:
        return version(distribution)
    except Exception:  # pragma: no cover - metadata always present in the env
        return unknown


def send(payload: dict[str, Any]) -> None:
    _OUT.write(json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n")
    _OUT.flush()


def receive() -> dict[str, Any] | None:
    line = sys.stdin.readline()
    if not line:
        return None
    data: dict[str, Any] = json.loads(line)
    return data


def ask_summary(
    layer: str,
    prompt: str,
    *,
    messages: list | None = None,
    max_tokens: int | None = None,
    sections: list | None = None,
    previous_summary: str | None = None,
    send_max_tokens: bool = True,
    key: str | None = None,
) -> dict[str, Any]:
    """Ask ctxbench for a summary (the run's summarizer answers): {ok, text, error}."""
    send(
        {
            "op": "summarize",
            "layer": layer,
            "prompt": prompt,
            "messages": messages or [],
            "max_tokens": max_tokens,
            "sections": sections or [],
            "previous_summary": previous_summary,
            "send_max_tokens": send_max_tokens,
            "key": key,
        }
    )
    reply = receive()
    if reply is None or reply.get("op") != "summary":
        raise SystemExit("ctxbench closed the pipe while a summary was pending")
    return reply


def exception_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def serve_replays(make: Callable[[dict[str, Any]], Any], framework: str, version: str) -> None:
    """Serve one replay object per ``start``: its ``call`` answers calls and its ``overflow``
    (when it has one) overflows; without one, the framework does not react to an overflow."""
    state: dict[str, Any] = {}

    def start(request: dict[str, Any]) -> dict[str, Any]:
        state["replay"] = make(request)
        return {"op": "ready", "framework": framework, "version": version, "notes": []}

    def call(request: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = state["replay"].call(request)
        return reply

    def overflow(request: dict[str, Any]) -> dict[str, Any]:
        react = getattr(state["replay"], "overflow", None)
        if react is None:
            return {"op": "prompt", "steps": [], "retry": False, "info": {}}
        reply: dict[str, Any] = react(request)
        return reply

    serve({"start": start, "call": call, "overflow": overflow})


def serve(handlers: dict[str, Handler]) -> None:
    """Answer requests until stdin closes; a handler's bug is an ``error`` line, then exit."""
    while True:
        request = receive()
        if request is None:
            return
        handler = handlers.get(request.get("op", ""))
        if handler is None:
            send({"op": "error", "message": f"unknown op {request.get('op')!r}"})
            return
        try:
            send(handler(request))
        except Exception as exc:  # a driver bug: ctxbench makes the cell an error row
            traceback.print_exc(file=sys.stderr)
            send({"op": "error", "message": exception_text(exc)})
            return
