"""``anthropic_clear_tool_uses``: Anthropic's server-side ``clear_tool_uses_20250919`` edit.

Sources: docs.claude.com/en/docs/build-with-claude/context-editing (beta header
``context-management-2025-06-27``) and the API types (``BetaClearToolUses20250919Edit``:
``trigger``, ``keep``, ``clear_at_least``, ``exclude_tools``, ``clear_tool_inputs``; the response's
``cleared_tool_uses`` and ``cleared_input_tokens``); docs/sources.md. LangChain's
``ClearToolUsesEdit`` (``langchain/agents/middleware/context_editing.py``), which "mirrors
Anthropic's clear_tool_uses_20250919 behavior", fills in what the docs leave open.

Rules reproduced:

- The edit runs server-side on every request: the client keeps the full history, so ctxbench
  recomputes the prompt from the full history before every call.
- Trigger: the request's input tokens are over ``trigger`` (100,000 by default). The API counts
  exactly; ctxbench decides with the strategy's estimator (run with ``--estimator`` equal to
  ``--counter`` to reproduce the exact server-side decision).
- Clearing: tool results, oldest first, except the last ``keep`` tool uses (3) and uses of the
  tools in ``exclude_tools``; each cleared result becomes the placeholder text. With
  ``clear_tool_inputs`` the call's input is cleared too (``{}``).
- ``clear_at_least``: the docs say the edit must clear at least that many tokens each time it
  runs, or it is not applied (``clear_at_least_mode="skip"``, default). LangChain's mirror instead
  stops clearing as soon as that many tokens are freed (``"stop"``). None = no minimum.
- Report: each change's compaction note carries ``cleared_tool_uses`` and
  ``cleared_input_tokens`` (by the strategy's estimator).

Anthropic does not publish its placeholder text; the default is LangChain's ``"[cleared]"``.
A text-ReAct ``Observation:`` message counts as a tool use of the action it answers.

Knobs (defaults): trigger 100000, keep 3, clear_at_least None, clear_at_least_mode "skip",
exclude_tools (), clear_tool_inputs False, placeholder "[cleared]".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from ctxbench.config import require_non_negative
from ctxbench.counting.base import TokenCounter
from ctxbench.engine.context import ReplayContext
from ctxbench.strategies.layers import RebuiltFromHistory, is_tool_result, with_placeholder
from ctxbench.trace import Message

_ACTION = re.compile(r"^[ \t]*Action:\s*(.+)$", re.M)  # [ \t]*, not \s*: linear on blank lines


@dataclass(frozen=True)
class ClearToolUsesConfig:
    trigger: int = field(default=100_000, metadata={"help": "input tokens that trigger clearing"})
    keep: int = field(default=3, metadata={"help": "most recent tool uses never cleared"})
    clear_at_least: int | None = field(
        default=None, metadata={"help": "minimum tokens each clearing must free (None = any)"}
    )
    clear_at_least_mode: Literal["skip", "stop"] = field(
        default="skip",
        metadata={"help": "'skip' (docs) unless freed >= minimum; 'stop' (LangChain) once freed"},
    )
    exclude_tools: tuple[str, ...] = field(
        default=(), metadata={"help": "tool names whose uses are never cleared"}
    )
    clear_tool_inputs: bool = field(default=False, metadata={"help": "also clear call inputs"})
    placeholder: str = field(default="[cleared]", metadata={"help": "text of a cleared result"})

    def __post_init__(self) -> None:
        if self.trigger < 0 or self.keep < 0:
            raise ValueError(f"trigger and keep must be >= 0 (got {self.trigger}, {self.keep})")
        require_non_negative(self, "clear_at_least")


@dataclass(frozen=True)
class ToolUse:
    """One tool use: the result's index, its call's assistant index, and the tool name."""

    result: int
    call: int | None
    call_id: str | None
    tool: str


def tool_uses(messages: Sequence[Message]) -> list[ToolUse]:
    """Every tool result with the call that made it, in order."""
    uses: list[ToolUse] = []
    last_assistant: int | None = None
    for i, msg in enumerate(messages):
        if msg.role == "assistant":
            last_assistant = i
        elif is_tool_result(msg):
            name = msg.name or ""
            if msg.role == "tool" and last_assistant is not None:
                call = next(
                    (c for c in messages[last_assistant].tool_calls if c.id == msg.tool_call_id),
                    None,
                )
                name = call.name if call is not None else name
            elif last_assistant is not None:
                found = _ACTION.search(messages[last_assistant].content)
                name = found.group(1).strip() if found else name
            uses.append(ToolUse(i, last_assistant, msg.tool_call_id, name))
    return uses


def clear_input(message: Message, call_id: str | None) -> Message:
    calls = tuple(replace(c, arguments="{}") if c.id == call_id else c for c in message.tool_calls)
    return replace(message, tool_calls=calls)


def clear_tool_uses(
    messages: Sequence[Message], cfg: ClearToolUsesConfig, counter: TokenCounter
) -> tuple[list[Message], int, int]:
    """(edited messages, cleared tool uses, cleared tokens) for a prompt over the trigger."""
    uses = tool_uses(messages)
    candidates = uses[: max(0, len(uses) - cfg.keep)]
    excluded = set(cfg.exclude_tools)
    out = list(messages)
    cleared = freed = 0
    stop_at = cfg.clear_at_least if cfg.clear_at_least_mode == "stop" else None
    for use in candidates:
        if use.tool in excluded:
            continue
        before = counter.count_message(out[use.result])
        out[use.result] = with_placeholder(out[use.result], cfg.placeholder)
        freed += before - counter.count_message(out[use.result])
        if cfg.clear_tool_inputs and use.call is not None and use.call_id is not None:
            before = counter.count_message(out[use.call])
            out[use.call] = clear_input(out[use.call], use.call_id)
            freed += before - counter.count_message(out[use.call])
        cleared += 1
        if stop_at is not None and stop_at > 0 and freed >= stop_at:
            break
    return out, cleared, freed


class ClearToolUses(RebuiltFromHistory[ClearToolUsesConfig]):
    name = "anthropic_clear_tool_uses"
    summary = "Anthropic clear_tool_uses_20250919: over the trigger, clear old tool results."
    source = "docs.claude.com/en/docs/build-with-claude/context-editing (clear_tool_uses_20250919)"
    Config = ClearToolUsesConfig
    default_estimator = "chars4"
    layer = "clear_tool_uses"

    def rebuild(self, history: list[Message], ctx: ReplayContext) -> tuple[list[Message], str]:
        tokens = ctx.view.est_overhead + sum(ctx.estimator.count_message(m) for m in history)
        out: list[Message] = list(history)
        note = ""
        if tokens > self.config.trigger:
            edited, cleared, freed = clear_tool_uses(history, self.config, ctx.estimator)
            minimum = self.config.clear_at_least
            skip = self.config.clear_at_least_mode == "skip" and minimum and freed < minimum
            if cleared and not skip:
                out = edited
                note = f"cleared_tool_uses={cleared} cleared_input_tokens={freed}"
        return out, note
