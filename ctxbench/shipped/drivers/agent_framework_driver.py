"""Driver for Microsoft Agent Framework's ``ContextWindowCompactionStrategy``
(``agent-framework-core`` 1.26.0).

Run with the python of the ``agent-framework-core`` environment; it imports nothing from
ctxbench.

The framework's code (the installed wheel, unmodified): ``ContextWindowCompactionStrategy``
(``agent_framework/_compaction.py:2824``: ``DEFAULT_TOOL_EVICTION_THRESHOLD = 0.5`` and
``DEFAULT_TRUNCATION_THRESHOLD = 0.8`` of the input budget ``max_context_window_tokens -
max_output_tokens``, ``keep_last_tool_call_groups=4``, ``preserve_first_user_group=False``)
with its two phases, ``ToolResultCompactionStrategy`` (``:1950``: an older tool-call group
collapses into an assistant message ``[Tool results: name: result; ...]`` of at most 4,096
characters) and ``TruncationStrategy`` (``:1767``: the oldest non-system groups excluded down
to the eviction threshold); the grouping and token annotations (``annotate_message_groups``,
``annotate_token_counts``) with the release's own counter ``CharacterEstimatorTokenizer``
(``:139``: ``len(serialized message) // 4``); ``apply_compaction`` (``:2650``) and
``project_included_messages``.

Emulated: the harness around it (``_harness/_agent.py:_assemble_compaction``): the same
strategy runs before each model call on the loaded history (``compaction_strategy`` of
``BaseChatClient.get_response``, so that phase never edits the stored history) and after each
run on the stored session history in place (``CompactionProvider.after_run``: its exclusions
and summaries stay); a run ends when a recorded user message follows the agent's answer. The
history is built from the recorded chat messages (``Message`` with text, ``function_call`` and
``function_result`` contents; the system prompt as a system message, which the strategy never
excludes).
"""

from __future__ import annotations

import asyncio
import copy

import wire
from agent_framework import Content, Message
from agent_framework._compaction import (
    CharacterEstimatorTokenizer,
    ContextWindowCompactionStrategy,
    annotate_message_groups,
    annotate_token_counts,
    apply_compaction,
    included_token_count,
)

VERSION = wire.installed_version("agent-framework-core")


def _message(message: dict) -> Message:
    hid, role, text = message["id"], message["role"], message.get("content") or ""
    if role == "tool":
        contents = [
            Content.from_function_result(
                message.get("tool_call_id") or f"unknown-{hid}", result=text,
                **({"exception": "the tool failed"} if message.get("failed") else {}),
            )
        ]  # fmt: skip
    elif role == "assistant":
        contents = [Content.from_text(text)] if text else []
        contents += [
            Content.from_function_call(c["id"] or f"call-{hid}-{n}", c["name"],
                                       arguments=c["arguments"] or "")
            for n, c in enumerate(message.get("tool_calls") or ())
        ]  # fmt: skip
        contents = contents or [Content.from_text("")]
    else:
        contents = [Content.from_text(text)]
    return Message(role=role, contents=contents, message_id=str(hid))


def _text(message: Message) -> str:
    return "".join(c.text or "" for c in message.contents if c.type == "text")


class Replay:
    def __init__(self, request: dict) -> None:
        cfg = dict(request["config"])
        window = cfg.get("max_context_window_tokens") or int(request["window"])
        output = cfg.get("max_output_tokens")
        self.tokenizer = CharacterEstimatorTokenizer()
        self.strategy = ContextWindowCompactionStrategy(
            max_context_window_tokens=int(window),
            max_output_tokens=int(output if output is not None else request["reserved"]),
            tokenizer=self.tokenizer,
            tool_eviction_threshold=cfg["tool_eviction_threshold"],
            truncation_threshold=cfg["truncation_threshold"],
            keep_last_tool_call_groups=cfg["keep_last_tool_call_groups"],
            preserve_first_user_group=cfg["preserve_first_user_group"],
        )
        self.after_run = bool(cfg.get("after_run", True))
        self.loop = asyncio.new_event_loop()
        self.history: list[Message] = []  # the stored session history
        self.answered = False
        self.tokens = 0
        self.runs_compacted = 0

    def _end_run(self) -> bool:
        """``CompactionProvider.after_run``: the strategy on the stored history, in place."""
        annotate_message_groups(self.history)
        annotate_token_counts(self.history, tokenizer=self.tokenizer)
        changed: bool = self.loop.run_until_complete(self.strategy(self.history))
        self.runs_compacted += int(changed)
        return changed

    def items(self, messages: list[Message]) -> list[dict]:
        out: list[dict] = []
        for message in messages:
            ident = message.message_id or ""
            if ident.isdigit():
                out.append({"ref": int(ident)})
            else:  # a tool-results summary
                out.append({"role": str(message.role), "content": _text(message)})
        return out

    def call(self, request: dict) -> dict:
        prior = self.items(_projected(self.history))
        ended = False
        for message in request["append"]:
            if message["role"] == "user" and self.answered and self.after_run:
                ended = self._end_run() or ended
                self.answered = False
            self.history.append(_message(message))
            if message["role"] == "assistant":
                self.answered = not message.get("tool_calls")
        base = prior + [{"ref": m["id"]} for m in request["append"]]
        stored = self.items(_projected(self.history))
        steps: list[dict] = []
        if ended and stored != base:
            steps.append({"layer": "after_run", "messages": stored, "note": "stored history"})
        loaded = copy.deepcopy(self.history)
        sent = self.loop.run_until_complete(apply_compaction(loaded, strategy=self.strategy))
        after = self.items(sent)
        if after != stored:
            steps.append({"layer": "context_window", "messages": after, "note": "before the call"})
        annotate_token_counts(loaded, tokenizer=self.tokenizer)
        self.tokens = included_token_count(loaded)
        info = {"agent_framework_tokens": self.tokens, "history": len(self.history),
                "runs_compacted": self.runs_compacted}  # fmt: skip
        return {"op": "prompt", "base": base, "steps": steps, "info": info}


def _projected(messages: list[Message]) -> list[Message]:
    from agent_framework._compaction import project_included_messages

    return list(project_included_messages(messages))


if __name__ == "__main__":
    wire.serve_replays(Replay, "agent-framework-core", VERSION)
