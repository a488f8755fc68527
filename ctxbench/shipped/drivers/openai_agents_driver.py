"""Driver for the OpenAI Agents SDK's ``ToolOutputTrimmer`` (``openai-agents`` 0.24.0).

Run with the python of the ``openai-agents`` environment; it imports nothing from ctxbench.

The library's code: ``agents.extensions.ToolOutputTrimmer.__call__``
(``agents/extensions/tool_output_trimmer.py:136``), the ``call_model_input_filter`` the
``Runner`` calls before each model call with a ``CallModelData`` holding the run's input items;
defaults ``recent_turns=2``, ``max_output_chars=500``, ``preview_chars=200``,
``trimmable_tools=None`` (``:112-115``). It is deterministic and stateless: the filter never
edits the run's items, so each call trims the whole history again. The SDK counts no tokens
(the rest of its compaction is the provider's, server side).

Emulated: the Runner's history as Responses input items built from the recorded chat messages
(a user message ``{"role": "user"}``; an assistant turn as its ``{"role": "assistant"}``
message and one ``function_call`` per tool call; a tool result as ``function_call_output``
with its ``call_id``; the system prompt as the ``instructions``, which the filter passes on).
"""

from __future__ import annotations

import wire
from agents.extensions import ToolOutputTrimmer
from agents.run_config import CallModelData, ModelInputData

VERSION = wire.installed_version("openai-agents")


class Replay:
    def __init__(self, request: dict) -> None:
        cfg = dict(request["config"])
        tools = cfg.get("trimmable_tools")
        self.trimmer = ToolOutputTrimmer(
            recent_turns=cfg["recent_turns"],
            max_output_chars=cfg["max_output_chars"],
            preview_chars=cfg["preview_chars"],
            trimmable_tools=frozenset(tools) if tools is not None else None,
        )
        self.system: list[int] = []
        self.instructions: list[str] = []
        self.items: list[dict] = []  # the Runner's input items
        self.hid: list[int] = []  # the history position each item stands for

    def _add(self, message: dict) -> None:
        hid, role, text = message["id"], message["role"], message.get("content") or ""
        if role == "system":
            self.system.append(hid)
            self.instructions.append(text)
        elif role == "tool":
            self.items.append(
                {"type": "function_call_output", "call_id": message.get("tool_call_id") or "",
                 "output": text}
            )  # fmt: skip
            self.hid.append(hid)
        elif role == "assistant":
            if text or not message.get("tool_calls"):
                self.items.append({"role": "assistant", "content": text})
                self.hid.append(hid)
            for call in message.get("tool_calls") or ():
                self.items.append(
                    {"type": "function_call", "call_id": call["id"] or "", "name": call["name"],
                     "arguments": call["arguments"] or ""}
                )  # fmt: skip
                self.hid.append(hid)
        else:
            self.items.append({"role": "user", "content": text})
            self.hid.append(hid)

    def call(self, request: dict) -> dict:
        for message in request["append"]:
            self._add(message)
        data = ModelInputData(input=list(self.items), instructions="\n".join(self.instructions))
        out = self.trimmer(CallModelData(model_data=data, agent=None, context=None))
        base = self._prompt(self.items)
        after = self._prompt(out.input)
        trimmed = sum(a is not b for a, b in zip(out.input, self.items, strict=True))
        steps = (
            [{"layer": "tool_output_trimmer", "messages": after, "note": f"{trimmed} output(s)"}]
            if after != base
            else []
        )
        info = {"items": len(self.items), "trimmed_outputs": trimmed,
                "input_chars": sum(len(str(i.get("output", i.get("content", "")))) for i in out.input)}  # fmt: skip
        return {"op": "prompt", "base": base, "steps": steps, "info": info}

    def _prompt(self, items: list) -> list[dict]:
        """The items as protocol messages: a trimmed output is its result rewritten."""
        out: list[dict] = [{"ref": i} for i in self.system]
        for hid, item, original in zip(self.hid, items, self.items, strict=True):
            if out and out[-1].get("ref") == hid and item.get("type") == "function_call":
                continue  # the assistant turn's calls travel with its message
            if item is original:
                out.append({"ref": hid})
            else:
                out.append({"ref": hid, "content": str(item.get("output", ""))})
        return out


if __name__ == "__main__":
    wire.serve_replays(Replay, "openai-agents", VERSION)
