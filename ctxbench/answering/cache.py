"""The answer cache: one JSON file per request body, under ``DIR/ab/abcdef....json``.

The key is the SHA-256 of the canonical JSON of the whole request body: the model id the
endpoint serves, the messages (the prompt's bytes and the question), the tools offered and the
sampling settings. The endpoint's URL and the API key are not part of it and never written.
A file is written to a temporary name and renamed, so a killed run leaves whole entries only;
an unreadable entry is a miss (asked again), an unwritable cache costs a repeat request.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CACHE_SCHEMA = "ctxbench.answer-cache/1"


@dataclass(frozen=True)
class ToolChoice:
    """A tool call the model made: its name and its arguments (JSON text, as sent)."""

    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    """What the endpoint answered: the text, its tool calls, and the tokens it reported."""

    content: str
    tool_calls: tuple[ToolChoice, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> Reply:
        """From a chat-completion body (``choices[0].message`` and ``usage``)."""
        message = payload["choices"][0]["message"]
        content = message.get("content") or ""
        if isinstance(content, list):  # content parts
            content = "".join(
                str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
            )
        calls = []
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                arguments = function.get("arguments", "")
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
                calls.append(ToolChoice(str(function.get("name", "")), arguments))
        usage = payload.get("usage") or {}
        return cls(
            str(content),
            tuple(calls),
            _count(usage.get("prompt_tokens")),
            _count(usage.get("completion_tokens")),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in self.tool_calls],
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reply:
        return cls(
            str(data["content"]),
            tuple(ToolChoice(str(c["name"]), str(c["arguments"])) for c in data["tool_calls"]),
            _count(data.get("prompt_tokens")),
            _count(data.get("completion_tokens")),
        )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class AnswerCache:
    """Replies on disk by request body (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @staticmethod
    def key(body: Mapping[str, Any]) -> str:
        material = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Reply | None:
        try:
            entry = json.loads(self.path(key).read_text("utf-8"))
            if entry.get("schema") != CACHE_SCHEMA:
                return None
            return Reply.from_dict(entry["reply"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def put(self, key: str, reply: Reply, *, model: str) -> None:
        path = self.path(key)
        entry = {"schema": CACHE_SCHEMA, "model": model, "reply": reply.to_dict()}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(entry, ensure_ascii=False, indent=1), "utf-8")
            os.replace(tmp, path)
        except OSError:
            return


__all__ = ["CACHE_SCHEMA", "AnswerCache", "Reply", "ToolChoice"]
