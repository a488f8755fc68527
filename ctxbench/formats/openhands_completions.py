"""OpenHands SDK completion logs (``log_completions``): one JSON file per LLM call.

A file is ``{messages, tools, kwargs, context_window, response, cost, timestamp,
latency_sec}`` (OpenHands/software-agent-sdk ``openhands/sdk/llm/utils/telemetry.py``):
``messages`` is the **exact request** sent through litellm and ``response`` the raw litellm
response with the provider's usage. With prompt-based tool calling (``raw_messages`` present)
the request carries tool calls as text, and ``raw_messages`` holds the same conversation with
native tool calls.

A file imports as the conversation up to and including its call: the request (the native-call
view, ``raw_messages``, when present, so strategies see tool pairs) plus the response as the
last assistant message, with its usage. A run is the sequence of files of one conversation:
files beside it with the same name prefix (``<provider>__<model>-<timestamp>.json``) and an
earlier timestamp whose response appears in this conversation give that earlier assistant
message its usage. Every call keeps, in ``meta.request``, its file and, when the exact request
differs from the conversation before the message (prompt-based tool calling), the exact request
messages themselves, so a counter can be checked against what was really sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ctxbench.errors import CtxbenchError
from ctxbench.formats import openai_chat
from ctxbench.formats.document import Document
from ctxbench.formats.importer import Importer, ImportOptions
from ctxbench.formats.location import At, rest
from ctxbench.trace import Message, Trace

NAME = "openhands_completions"
MAPPED = ("messages", "raw_messages", "tools", "response", "raw_response")
_FILE = re.compile(r"^(?P<prefix>.+)-(?P<ts>\d+(?:\.\d+)?)\.json$")


def detect(doc: Document) -> bool:
    head = doc.head
    return (
        doc.layout == "json"
        and isinstance(head, dict)
        and isinstance(head.get("messages"), list)
        and isinstance(head.get("response"), dict)
        and ("kwargs" in head or "context_window" in head)
    )


def response_message(data: dict[str, Any], at: At) -> Message:
    """The response's first choice as an assistant message with the call's usage."""
    r_at = at.key("response")
    response = r_at.obj(at.need(data, "response"))
    choices_at = r_at.key("choices")
    choices = choices_at.arr(r_at.need(response, "choices"))
    if not choices:
        raise choices_at.error("the response has no choices", hint="a logged call has one choice")
    c_at = choices_at.index(0)
    choice = c_at.obj(choices[0])
    msg = openai_chat.message(
        {"role": "assistant", **c_at.key("message").obj(c_at.need(choice, "message"))},
        c_at.key("message"),
    )
    calls = tuple(replace(c, meta=rest(c.meta, ("index",))) for c in msg.tool_calls)
    meta = rest(msg.meta, ("function_call", "provider_specific_fields"))
    meta.update(rest(response, ("choices", "usage")))
    meta["finish_reason"] = choice.get("finish_reason")
    usage = openai_chat.usage(response.get("usage"), r_at.key("usage"))
    return replace(msg, tool_calls=calls, usage=usage, meta=meta)


def _same_response(a: Message, b: Message) -> bool:
    if a.tool_calls or b.tool_calls:
        return [c.id for c in a.tool_calls] == [c.id for c in b.tool_calls]
    return a.content.strip() == b.content.strip()


def _siblings(path: Path) -> list[Path]:
    """Earlier files of the same model in the same folder, oldest first."""
    match = _FILE.match(path.name)
    if match is None:
        return []
    prefix, stamp = match.group("prefix"), float(match.group("ts"))
    found = []
    for other in path.parent.glob(f"{prefix}-*.json"):
        m = _FILE.match(other.name)
        if m and m.group("prefix") == prefix and float(m.group("ts")) < stamp:
            found.append((float(m.group("ts")), other))
    return [p for _, p in sorted(found)]


def _request_meta(data: dict[str, Any], file: str, prefix: tuple[Message, ...]) -> dict[str, Any]:
    """Where the call's exact request is: its file, and the messages when they are not the
    conversation before the call."""
    meta: dict[str, Any] = {"file": file, "messages": len(data.get("messages") or [])}
    exact = data.get("messages")
    if "raw_messages" in data or not isinstance(exact, list) or len(exact) != len(prefix):
        meta["exact_messages"] = exact
    meta.update(rest(data, (*MAPPED, "kwargs")))
    return meta


def _earlier_usage(messages: list[Message], path: Path) -> None:
    """Give earlier assistant messages the usage their own log file recorded."""
    for sibling in _siblings(path):
        try:
            data = At.start(sibling, format=NAME).obj(json.loads(sibling.read_text("utf-8")))
            earlier = response_message(data, At.start(sibling, format=NAME))
        except (OSError, ValueError, RecursionError, CtxbenchError):
            continue  # unreadable, or not a log: this conversation does not need it
        for i, msg in enumerate(messages):
            if msg.role == "assistant" and msg.usage is None and _same_response(msg, earlier):
                request = _request_meta(data, sibling.name, tuple(messages[:i]))
                messages[i] = replace(
                    msg, usage=earlier.usage, meta={**msg.meta, "request": request}
                )
                break


def read(doc: Document, options: ImportOptions) -> Iterator[Trace]:
    at = At.start(doc.path, format=NAME)
    data = at.obj(doc.head)
    key = "raw_messages" if isinstance(data.get("raw_messages"), list) else "messages"
    history = list(openai_chat.messages(at.need(data, key), at.key(key)))
    openai_chat.messages(at.need(data, "messages"), at.key("messages"))  # the exact request reads
    response = response_message(data, at)
    request = _request_meta(data, doc.path.name, tuple(history))
    history.append(replace(response, meta={**response.meta, "request": request}))
    _earlier_usage(history, doc.path)
    tools_at = at.key("tools")
    tools = tuple(
        openai_chat.tool_spec(t, tools_at.index(i))
        for i, t in enumerate(tools_at.opt_arr(data.get("tools")))
    )
    kwargs = data.get("kwargs")
    meta: dict[str, Any] = {"kwargs": rest(kwargs, ("tools",))} if isinstance(kwargs, dict) else {}
    model = response.meta.get("model")
    if isinstance(model, str):
        meta["model"] = model
    if isinstance(data.get("context_window"), int):
        meta["context_window"] = data["context_window"]
    yield Trace(doc.path.name.removesuffix(".json"), tuple(history), tools=tools, meta=meta)


IMPORTER = Importer(
    name=NAME,
    expects="an OpenHands SDK completion log {messages, tools, kwargs, context_window, response, ...}",
    detect=detect,
    read=read,
)
