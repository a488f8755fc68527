"""Driver for langchain-core's ``trim_messages``, called on the whole history before each call.

Run with the python of the ``langchain-core`` environment; it imports nothing from ctxbench.

The library's code: ``langchain_core.messages.trim_messages`` with
``count_tokens_approximately`` as its token counter, on ``SystemMessage`` / ``HumanMessage`` /
``AIMessage`` (tool calls as ``tool_calls``) / ``ToolMessage`` built from the recorded history.
Emulated: the LangGraph ``pre_model_hook`` around it (the stored history is never edited; each
call trims it again and sends the result). The library does not look at tool pairs, so what it
returns is sent as is: a kept part that starts on a tool result keeps it.
"""

from __future__ import annotations

import json
from typing import Any

import wire
from langchain_core import __version__ as VERSION
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately


def _lc_message(message: dict) -> Any:
    ident, role, text = str(message["id"]), message["role"], message.get("content") or ""
    if role == "system":
        return SystemMessage(text, id=ident)
    if role == "assistant":
        calls = []
        for call in message.get("tool_calls") or []:
            try:
                args = json.loads(call["arguments"] or "{}")
            except ValueError:
                args = {"input": call["arguments"]}
            calls.append(
                {
                    "id": call["id"],
                    "name": call["name"],
                    "args": args if isinstance(args, dict) else {"input": args},
                }
            )
        return AIMessage(text, tool_calls=calls, id=ident)
    if role == "tool":
        return ToolMessage(text, tool_call_id=message.get("tool_call_id") or "", id=ident)
    return HumanMessage(text, id=ident)


class Replay:
    def __init__(self, request: dict) -> None:
        cfg = dict(request["config"])
        if cfg.get("max_tokens") is None:
            cfg["max_tokens"] = int(request["window"]) - int(request["reserved"])
        cfg["start_on"] = list(cfg.get("start_on") or ()) or None
        cfg["end_on"] = list(cfg.get("end_on") or ()) or None
        self.cfg = cfg
        self.history: list = []

    def call(self, request: dict) -> dict:
        self.history += [_lc_message(m) for m in request["append"]]
        kept = trim_messages(self.history, token_counter=count_tokens_approximately, **self.cfg)
        items: list = []
        for msg in kept:
            original = next((m for m in self.history if m.id == msg.id), None)
            if original is None:
                items.append({"role": "user", "content": str(msg.content)})
            elif msg.content == original.content:
                items.append({"ref": int(msg.id)})
            else:
                items.append({"ref": int(msg.id), "content": str(msg.content)})
        tokens = count_tokens_approximately(self.history)
        step = [{"layer": "trim_messages", "messages": items}] if len(kept) != len(self.history) or any(
            "content" in i for i in items) else []  # fmt: skip
        base = [{"ref": int(m.id)} for m in self.history]
        return {"op": "prompt", "base": base, "steps": step, "info": {"history_tokens": tokens}}


if __name__ == "__main__":
    wire.serve_replays(Replay, "langchain-core", VERSION)
