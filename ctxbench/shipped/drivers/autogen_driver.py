"""Driver for autogen-core's model contexts: ``HeadAndTailChatCompletionContext`` and
``TokenLimitedChatCompletionContext``, whose ``get_messages`` builds every prompt.

Run with the python of the ``autogen-core`` environment; it imports nothing from ctxbench.

The library's code: the model context classes (``add_message``, ``get_messages``) on
``UserMessage`` / ``AssistantMessage`` (tool calls as ``FunctionCall`` content, the text as
``thought``) / ``FunctionExecutionResultMessage`` (all results of one turn in one message)
built from the recorded history. Emulated: the agent around it (the system message is not part
of an AutoGen context: the agent prepends it), and, for the token-limited context, the model
client it asks for ``count_tokens`` / ``remaining_tokens``: ctxbench's ``chars4`` estimate of
each recorded message the AutoGen message holds (``len // 4`` of its text, call names and
arguments and provider replay fields, per recorded message, as the reproduction's estimator
counts them; the configured ``token_limit``, or the window when None).
"""

from __future__ import annotations

import asyncio
from typing import Any

import wire
from autogen_core import FunctionCall
from autogen_core.model_context import (
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
)
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    UserMessage,
)

VERSION = wire.installed_version("autogen-core", "0.7.5")


def _chars(message: Any) -> int:
    content = message.content
    if isinstance(content, str):
        return len(content)
    total = 0
    for item in content:
        total += len(getattr(item, "content", "") or "") + len(getattr(item, "arguments", "") or "")
    return total + len(getattr(message, "thought", "") or "")


def _chars4(message: dict) -> int:
    """ctxbench's ``chars4`` of one recorded message (``Chars4Counter.message_tokens``)."""
    text = (message.get("content") or "") + (message.get("replay_text") or "")
    for call in message.get("tool_calls") or ():
        text += call["name"] + call["arguments"]
    return len(text) // 4


class ReplayClient:
    """What ``TokenLimitedChatCompletionContext`` asks of its model client."""

    def __init__(self, window: int, tokens: dict) -> None:
        self.window = window
        self.tokens = tokens  # id(AutoGen message) -> its recorded messages' chars4

    def count_tokens(self, messages: Any, *, tools: Any = ()) -> int:
        return sum(self.tokens[id(m)] if id(m) in self.tokens else _chars(m) // 4 for m in messages)

    def remaining_tokens(self, messages: Any, *, tools: Any = ()) -> int:
        return self.window - self.count_tokens(messages, tools=tools)


class Replay:
    def __init__(self, request: dict) -> None:
        cfg = dict(request["config"])
        self.kind = cfg.pop("context")
        self.tokens: dict = {}  # id(autogen message) -> chars4 of its recorded messages
        if self.kind == "head_tail":
            self.context: Any = HeadAndTailChatCompletionContext(**cfg)
        else:
            self.context = TokenLimitedChatCompletionContext(
                ReplayClient(int(request["window"]), self.tokens),
                token_limit=cfg.get("token_limit"),
            )
        self.system: list = []
        self.units: dict = {}  # id(autogen message) -> history ids
        self.all: list = []
        self.loop = asyncio.new_event_loop()

    def _add(self, message: Any, recorded: list) -> None:
        ids = [m["id"] for m in recorded]
        self.tokens[id(message)] = sum(_chars4(m) for m in recorded)
        self.units[id(message)] = ids
        self.all.append(message)
        self.loop.run_until_complete(self.context.add_message(message))

    def call(self, request: dict) -> dict:
        pending: list = []
        for m in request["append"]:
            role = m["role"]
            if role == "tool":
                pending.append(m)
                continue
            self._flush(pending)
            if role == "system":
                self.system.append(m["id"])
            elif role == "assistant" and m.get("tool_calls"):
                calls = [FunctionCall(id=c["id"], arguments=c["arguments"], name=c["name"])
                         for c in m["tool_calls"]]  # fmt: skip
                self._add(AssistantMessage(content=calls, thought=m.get("content") or None,
                                           source="assistant"), [m])  # fmt: skip
            elif role == "assistant":
                self._add(AssistantMessage(content=m.get("content") or "", source="assistant"),
                          [m])  # fmt: skip
            else:
                self._add(UserMessage(content=m.get("content") or "", source="user"), [m])
        self._flush(pending)
        kept = self.loop.run_until_complete(self.context.get_messages())
        items = [{"ref": i} for i in self.system]
        for msg in kept:
            ids = self.units.get(id(msg))
            if ids is None:
                items.append({"role": "user", "content": str(msg.content)})
            else:
                items += [{"ref": i} for i in ids]
        base = [{"ref": i} for i in self.system] + [
            {"ref": i} for msg in self.all for i in self.units[id(msg)]
        ]
        steps = [] if items == base else [{"layer": f"autogen_{self.kind}", "messages": items}]
        return {
            "op": "prompt",
            "base": base,
            "steps": steps,
            "info": {"context_messages": len(kept)},
        }

    def _flush(self, pending: list) -> None:
        if not pending:
            return
        results = [FunctionExecutionResult(content=m.get("content") or "", call_id=m.get("tool_call_id") or "",
                                           name=m.get("name") or "", is_error=False) for m in pending]  # fmt: skip
        self._add(FunctionExecutionResultMessage(content=results), list(pending))
        pending.clear()


if __name__ == "__main__":
    wire.serve_replays(Replay, "autogen-core", VERSION)
