"""Driver for Strands Agents' conversation managers (``strands-agents`` 1.62.0).

Run with the python of the ``strands-agents`` environment; it imports nothing from ctxbench.

The framework's code (the installed wheel, unmodified): ``SummarizingConversationManager``
(``strands/agent/conversation_manager/summarizing_conversation_manager.py:42``: ``summary_ratio
=0.3`` clamped to [0.1, 0.8], ``preserve_recent_messages=10``, ``pin_first=None``,
``proactive_compression=None``) with ``_summarize_oldest`` (``:147``),
``adjust_split_point_for_tool_pairs`` and ``generate_summary`` (``compression/
context_compression.py:62``, ``:149``: the summary is a user-role message);
``SlidingWindowConversationManager`` (``sliding_window_conversation_manager.py:36``:
``window_size=40``, ``should_truncate_results=True``, ``per_turn=False``); the proactive
check ``ConversationManager._on_before_model_call_threshold`` (``conversation_manager.py:112``,
``DEFAULT_COMPRESSION_THRESHOLD = 0.7`` at ``:16``) registered through a real ``HookRegistry``
and fired with a ``BeforeModelCallEvent``; the projected tokens from the event loop's own
``_estimate_input_tokens`` (``event_loop/event_loop.py:126``: the last assistant turn's
reported usage plus ``Model.count_tokens`` of what follows; ``count_tokens`` is the release's
heuristic, text chars/4 and JSON chars/2, ``models/model.py:95``) and
``Model.estimate_utilization`` (its ``context_window_limit``, else 200,000).

Emulated: the ``Agent`` around the manager (``agent/agent.py``): its ``messages`` in Strands'
shape (text, ``toolUse`` and ``toolResult`` blocks; the results answering one assistant turn in
one user message, as the tool executor appends them), ``apply_management`` when an invocation
ends (a recorded user message after the agent answered, ``agent.py:1766``), ``reduce_context``
with the provider's ``ContextWindowOverflowException`` and a retry on an overflow
(``agent.py:1913-1921``); the model, a ``Model`` whose ``stream`` answers the summary call with
ctxbench's summarizer and whose config holds the ``context_window_limit`` knob; the recorded
assistant turns carry the provider's usage (``metadata.usage``) of the call that produced them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import wire
from strands.agent.conversation_manager import (
    SlidingWindowConversationManager,
    SummarizingConversationManager,
)
from strands.event_loop.event_loop import _estimate_input_tokens
from strands.hooks import BeforeModelCallEvent, HookRegistry
from strands.models.model import Model
from strands.types.exceptions import ContextWindowOverflowException

VERSION = wire.installed_version("strands-agents")


class ReplayModel(Model):
    """The agent's model: its config holds the window; it only ever writes summaries."""

    def __init__(self, replay: Replay, context_window_limit: int | None) -> None:
        self.replay = replay
        self.config: dict[str, Any] = {"model_id": "replayed-model"}
        if context_window_limit:
            self.config["context_window_limit"] = context_window_limit

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError("the replayed model writes no structured output")

    async def stream(self, messages: list, tool_specs: Any = None, system_prompt: Any = None,
                     **kwargs: Any) -> Any:  # fmt: skip
        summarized = messages[:-1]  # generate_summary adds "Please summarize this conversation."
        prompt = "\n\n".join([system_prompt or ""] + [_text(m) for m in messages])
        reply = wire.ask_summary(
            "summarizing", prompt, messages=self.replay.items(summarized), send_max_tokens=False
        )
        if not reply.get("ok"):
            raise RuntimeError(str(reply.get("error") or "summary failed"))
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": reply["text"]}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


def _text(message: dict) -> str:
    parts: list[str] = []
    for block in message["content"]:
        if "text" in block:
            parts.append(block["text"])
        elif "toolResult" in block:
            parts += [c.get("text", "") for c in block["toolResult"]["content"]]
        elif "toolUse" in block:
            parts.append(json.dumps(block["toolUse"]["input"]))
    return "\n".join(parts)


class Agent:
    """What the conversation managers and ``_estimate_input_tokens`` read of an ``Agent``."""

    def __init__(self, model: ReplayModel, tools: list[dict]) -> None:
        self.messages: list[dict] = []
        self.model = model
        self.aux_model = model
        self.system_prompt: str | None = None
        self._system_prompt_content = None
        specs = [{"name": t["name"], "description": t.get("description") or "",
                  "inputSchema": {"json": t.get("parameters") or {}}} for t in tools]  # fmt: skip

        class Registry:
            def get_all_tool_specs(self) -> list[dict]:
                return specs

        self.tool_registry = Registry()


class Replay:
    def __init__(self, request: dict) -> None:
        cfg = dict(request["config"])
        proactive = cfg.get("proactive_compression")
        proactive_arg = {"compression_threshold": proactive} if proactive is not None else None
        if cfg["manager"] == "sliding_window":
            self.manager: Any = SlidingWindowConversationManager(
                window_size=cfg["window_size"], should_truncate_results=cfg["should_truncate_results"],
                per_turn=cfg["per_turn"] if cfg["per_turn"] else False,
                proactive_compression=proactive_arg,
            )  # fmt: skip
        else:
            self.manager = SummarizingConversationManager(
                summary_ratio=cfg["summary_ratio"],
                preserve_recent_messages=cfg["preserve_recent_messages"],
                pin_first=cfg.get("pin_first"), proactive_compression=proactive_arg,
            )  # fmt: skip
        limit = cfg.get("context_window_limit") or int(request["window"])
        self.model = ReplayModel(self, limit)
        self.agent = Agent(self.model, list(request["tools"]))
        self.hooks = HookRegistry()
        self.manager.register_hooks(self.hooks)
        self.loop = asyncio.new_event_loop()
        self.system: list[int] = []
        self.system_text: list[str] = []
        self.hid: dict[int, int] = {}  # id(message dict) -> history position
        self.held: list[dict] = []
        self.result_hid: dict[str, int] = {}  # toolUseId -> the result's history position
        self.tool_text: dict[int, str] = {}  # a result's text as recorded
        self.answered = False  # the last assistant turn called no tool: the invocation ended
        self.estimate = 0

    # -- Strands messages ----------------------------------------------------------------------------
    def _message(self, role: str, content: list, hid: int) -> dict:
        message = {"role": role, "content": content}
        self.hid[id(message)] = hid
        self.held.append(message)  # held: no later dict takes a freed one's id
        return message

    def _append(self, message: dict, last: dict) -> None:
        hid, role, text = message["id"], message["role"], message.get("content") or ""
        msgs = self.agent.messages
        if role == "system":
            self.system.append(hid)
            self.system_text.append(text)
            self.agent.system_prompt = "\n".join(self.system_text)
        elif role == "assistant":
            content: list = [{"text": text}] if text else []
            for call in message.get("tool_calls") or ():
                try:
                    args = json.loads(call["arguments"] or "{}")
                except ValueError:
                    args = {"input": call["arguments"]}
                content.append({"toolUse": {"toolUseId": call["id"] or "", "name": call["name"],
                                            "input": args}})  # fmt: skip
            turn = self._message("assistant", content or [{"text": ""}], hid)
            if last.get("ok"):
                out = asyncio.run(self.model.count_tokens([turn]))
                turn["metadata"] = {"usage": {"inputTokens": int(last.get("prompt_tokens") or 0),
                                              "outputTokens": out,
                                              "totalTokens": int(last.get("prompt_tokens") or 0) + out}}  # fmt: skip
            msgs.append(turn)
            self.answered = not message.get("tool_calls")
        elif role == "tool":
            call_id = message.get("tool_call_id") or f"unanswered-{hid}"
            self.result_hid[call_id] = hid
            self.tool_text[hid] = text
            block = {"toolResult": {"toolUseId": call_id,
                                    "status": "error" if message.get("failed") else "success",
                                    "content": [{"text": text}]}}  # fmt: skip
            previous = msgs[-1] if msgs else None
            if (
                previous
                and previous["role"] == "user"
                and all("toolResult" in b for b in previous["content"])
            ):
                previous["content"].append(block)
            else:
                msgs.append(self._message("user", [block], hid))
        else:
            if self.answered:  # the agent answered: the invocation ended (agent.py:1766)
                self.manager.apply_management(self.agent)
                self.answered = False
            msgs.append(self._message("user", [{"text": text}], hid))

    # -- protocol items ------------------------------------------------------------------------------
    def items(self, messages: list) -> list[dict]:
        out: list[dict] = []
        for message in messages:
            results = [b["toolResult"] for b in message["content"] if "toolResult" in b]
            if results:  # each result is its history message, its text as it now stands
                for result in results:
                    hid = self.result_hid[result.get("toolUseId", "")]
                    text = "\n".join(c.get("text", "") for c in result.get("content", []))
                    item: dict = {"ref": hid}
                    if text != self.tool_text[hid]:
                        item["content"] = text
                    out.append(item)
            elif id(message) in self.hid:
                out.append({"ref": self.hid[id(message)]})
            else:  # a summary
                out.append({"role": message["role"], "content": _text(message)})
        return out

    def prompt(self) -> list[dict]:
        return [{"ref": i} for i in self.system] + self.items(self.agent.messages)

    # -- protocol ------------------------------------------------------------------------------------
    def call(self, request: dict) -> dict:
        last = request.get("last_call") or {}
        prior = self.prompt()
        for message in request["append"]:
            self._append(message, last)
        # the prompt had nothing been managed: what the model saw plus what was appended
        base = prior + [{"ref": m["id"]} for m in request["append"]]
        steps: list[dict] = []
        managed = self.prompt()
        if managed != base:  # apply_management ran at the end of the invocation
            steps.append({"layer": self.layer(), "messages": managed, "note": "invocation end"})
        self.estimate = self.loop.run_until_complete(_estimate_input_tokens(self.agent))
        event = BeforeModelCallEvent(agent=self.agent, invocation_state={},
                                     projected_input_tokens=self.estimate)  # fmt: skip
        self.hooks.invoke_callbacks(event)
        after = self.prompt()
        if after != managed:
            steps.append({"layer": self.layer(), "messages": after, "note": "before the call"})
        return {"op": "prompt", "base": base, "steps": steps, "info": self.info()}

    def layer(self) -> str:
        return (
            "summarizing"
            if isinstance(self.manager, SummarizingConversationManager)
            else "sliding_window"
        )

    def overflow(self, request: dict) -> dict:
        """``Agent._execute_event_loop_cycle``: reduce_context with the overflow, then retry."""
        before = self.prompt()
        error = ContextWindowOverflowException(str(request.get("error", "context overflow")))
        try:
            self.manager.reduce_context(self.agent, e=error)
        except Exception as exc:  # nothing left to reduce: the overflow ends the invocation
            return {"op": "prompt", "steps": [], "retry": False, "info": self.info(),
                    "exception": wire.exception_text(exc)}  # fmt: skip
        after = self.prompt()
        steps = (
            [{"layer": self.layer(), "messages": after, "note": "overflow"}]
            if after != before
            else []
        )
        return {"op": "prompt", "base": before, "steps": steps, "retry": True, "info": self.info()}

    def info(self) -> dict:
        return {
            "strands_projected_tokens": self.estimate,
            "messages": len(self.agent.messages),
            "removed_message_count": self.manager.removed_message_count,
        }


if __name__ == "__main__":
    wire.serve_replays(Replay, "strands-agents", VERSION)
