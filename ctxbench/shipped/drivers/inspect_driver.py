"""Driver for inspect's compaction (``inspect-ai`` 0.3.285).

Run with the python of the ``inspect-ai`` environment; it imports nothing from ctxbench.

The framework's code (the installed wheel, unmodified): ``compaction()``
(``inspect_ai/model/_compaction/_compaction.py:76``) and its handler's ``compact_input`` /
``record_output``: the threshold resolved against the model's input tokens
(``_resolve_threshold``, ``:440``; ``threshold=0.9`` in ``types.py:42``), the baseline from
the last generate's reported input tokens plus ``Model.count_tokens`` of what is new, the
iterating ``_perform_compaction`` (``:372``), the prefix (system messages and the sample's
input) put back in front; the strategies ``CompactionSummary`` (``summary.py:34``),
``CompactionTrim`` (``trim.py:25``, ``preserve=0.8``) and ``CompactionEdit`` (``edit.py:35``,
``keep_tool_uses=3``, ``keep_tool_inputs=True``, ``keep_thinking_turns=1``). The counter is
the release's ``ModelAPI.count_text_tokens``: tiktoken ``o200k_base`` plus 10% (the
environment's tiktoken cache holds ctxbench's vendored file).

Emulated: the ``react`` agent around it (``agent/_react.py``): before each model call the whole
history goes through ``compact_input``, a summary it returns is appended to the history, and
the generate's usage (ctxbench's verdict on the previous call) is recorded with
``record_output``; on an overflow the history is compacted once more with ``force=True`` and
the call retried (``_handle_overflow``; a second overflow in a row ends the agent). The model is
a ``ModelAPI`` registered as ``ctxbench/replayed`` whose context window is the knob (None: the
run window) and whose ``generate`` answers the summary call with ctxbench's summarizer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import wire
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelAPI,
    ModelInfo,
    ModelOutput,
    ModelUsage,
    get_model,
    modelapi,
    set_model_info,
)
from inspect_ai.model._compaction import (
    CompactionEdit,
    CompactionSummary,
    CompactionTrim,
    compaction,
)
from inspect_ai.tool import ToolCall, ToolInfo

VERSION = wire.installed_version("inspect-ai")

MODEL = "ctxbench/replayed"
CURRENT: dict[str, Any] = {}


class ReplayAPI(ModelAPI):
    """The model: it is only ever asked for summaries (the recorded turns are the answers)."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig | None = None, **model_args: Any) -> None:  # fmt: skip
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())

    async def generate(self, input: list, tools: list, tool_choice: Any,
                       config: GenerateConfig) -> ModelOutput:  # fmt: skip
        replay = CURRENT["replay"]
        prompt = "\n\n".join(m.text for m in input)
        reply = wire.ask_summary(
            "summary", prompt, messages=replay.items(input[:-1]), send_max_tokens=False
        )
        if not reply.get("ok"):
            raise RuntimeError(str(reply.get("error") or "summary failed"))
        return ModelOutput.from_content(model=MODEL, content=reply["text"])


@modelapi(name="ctxbench")
def _ctxbench() -> type[ModelAPI]:
    return ReplayAPI


def _message(message: dict) -> Any:
    ident, role, text = str(message["id"]), message["role"], message.get("content") or ""
    if role == "system":
        return ChatMessageSystem(content=text, id=ident)
    if role == "assistant":
        calls = []
        for call in message.get("tool_calls") or ():
            try:
                args = json.loads(call["arguments"] or "{}")
            except ValueError:
                args = {"input": call["arguments"]}
            calls.append(ToolCall(id=call["id"] or f"call-{ident}", function=call["name"],
                                  arguments=args if isinstance(args, dict) else {"input": args}))  # fmt: skip
        return ChatMessageAssistant(content=text, tool_calls=calls or None, id=ident, model=MODEL)
    if role == "tool":
        return ChatMessageTool(content=text, tool_call_id=message.get("tool_call_id") or "",
                               function=message.get("name"), id=ident)  # fmt: skip
    return ChatMessageUser(content=text, id=ident)


class Replay:
    def __init__(self, request: dict) -> None:
        cfg = dict(request["config"])
        window = cfg.get("context_window") or int(request["window"])
        set_model_info(MODEL, ModelInfo(context_length=int(window)))
        self.model = get_model(MODEL)
        threshold = cfg["threshold"]
        kind = cfg["strategy"]
        if kind == "trim":
            self.strategy: Any = CompactionTrim(threshold=threshold, preserve=cfg["preserve"])
        elif kind == "edit":
            self.strategy = CompactionEdit(threshold=threshold, keep_tool_uses=cfg["keep_tool_uses"],
                                           keep_tool_inputs=cfg["keep_tool_inputs"])  # fmt: skip
        else:
            self.strategy = CompactionSummary(threshold=threshold)
        self.kind = kind
        self.tools = [
            ToolInfo.model_validate({"name": t["name"], "description": t.get("description") or t["name"],
                                     "parameters": t.get("parameters") or {"type": "object", "properties": {}}})
            for t in request["tools"]
        ]  # fmt: skip
        self.loop = asyncio.new_event_loop()
        self.history: list = []
        self.original: dict[str, str] = {}
        self.result_of: dict[str, str] = {}  # tool_call_id -> the result's id
        self.handler: Any = None
        self.sent: list = []
        self.summaries = 0
        CURRENT["replay"] = self

    def items(self, messages: list) -> list[dict]:
        out: list[dict] = []
        for msg in messages:
            hid = msg.id if msg.id in self.original else None
            if hid is None and msg.role == "tool":  # CompactionEdit's copy of a result
                hid = self.result_of.get(msg.tool_call_id)
            if hid is not None:
                item: dict = {"ref": int(hid)}
                if msg.text != self.original[hid]:
                    item["content"] = msg.text
                out.append(item)
            else:
                role = msg.role if msg.role in ("system", "user", "assistant") else "user"
                out.append({"role": role, "content": msg.text})
        return out

    def _compact(self, force: bool = False) -> list[dict]:
        assert self.handler is not None
        sent, extra = self.loop.run_until_complete(self.handler.compact_input(self.history, force))
        if extra is not None:
            self.history.append(extra)
            self.summaries += 1
        self.sent = list(sent)
        return self.items(sent)

    def call(self, request: dict) -> dict:
        last = request.get("last_call") or {}
        if self.handler is not None and last.get("ok") and self.sent:
            usage = ModelUsage(input_tokens=int(last.get("prompt_tokens") or 0))
            output = ModelOutput.from_content(model=MODEL, content="")
            output.usage = usage
            self.loop.run_until_complete(self.handler.record_output(self.sent, output))
        for message in request["append"]:
            msg = _message(message)
            self.original[msg.id] = msg.text
            if msg.role == "tool":
                self.result_of[msg.tool_call_id] = msg.id
            self.history.append(msg)
        if self.handler is None:  # react: the prefix is the system messages and the input
            prefix = [m for m in self.history if m.role in ("system", "user")]
            self.handler = compaction(
                self.strategy, prefix=prefix, tools=self.tools, model=self.model
            )
        base = self.items(self.history)
        try:
            after = self._compact()
        except Exception as exc:  # _perform_compaction could not get under the threshold
            reply = {"op": "prompt", "base": base, "steps": [], "info": self.info()}
            return {**reply, "exception": wire.exception_text(exc)}
        steps = [{"layer": self.kind, "messages": after, "note": ""}] if after != base else []
        return {"op": "prompt", "base": base, "steps": steps, "info": self.info()}

    def overflow(self, request: dict) -> dict:
        before = self.items(self.sent)
        try:
            after = self._compact(force=True)
        except Exception as exc:  # compaction could not get under the threshold
            return {"op": "prompt", "steps": [], "retry": False, "info": self.info(),
                    "exception": wire.exception_text(exc)}  # fmt: skip
        steps = (
            [{"layer": self.kind, "messages": after, "note": "forced"}] if after != before else []
        )
        return {
            "op": "prompt",
            "base": before,
            "steps": steps,
            "retry": bool(steps),
            "info": self.info(),
        }

    def info(self) -> dict:
        return {"history": len(self.history), "sent": len(self.sent), "summaries": self.summaries}


if __name__ == "__main__":
    wire.serve_replays(Replay, "inspect-ai", VERSION)
