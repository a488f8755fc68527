"""Reasoning as providers bill it: which earlier turns' reasoning a request is charged for.

Reasoning models return their chain of thought next to the answer (``reasoning_content``,
Anthropic ``thinking`` blocks, OpenAI reasoning items). Agents send some of it back, and the
provider then counts, or silently drops, what came back. Each family documents its own rule:

- ``tool_turns`` (DeepSeek thinking mode, https://api-docs.deepseek.com/guides/thinking_mode,
  "Input and Output Parameters"): between two user messages, when the model made tool calls,
  the ``reasoning_content`` of those assistant messages must be passed back in all later
  requests and is part of the context; when the model made no tool call, the reasoning is
  ignored if sent back. The legacy ``deepseek-reasoner`` (R1) rejected any returned reasoning
  (https://api-docs.deepseek.com/guides/reasoning_model, "Multi-round Conversation"): ``none``.
- ``current_turn`` (Anthropic extended thinking,
  https://docs.anthropic.com/en/docs/build-with-claude/context-windows, "The context window
  with extended thinking" and "... with extended thinking and tool use"): thinking blocks of
  previous turns are stripped from the context window (``context_window = (input_tokens -
  previous_thinking_tokens) + current_turn_tokens``); the thinking block returned with a
  ``tool_result`` in the current tool-use loop counts as input. This holds for Claude Sonnet
  4.5 and earlier, Opus 4.1 and earlier and every Haiku through 4.5; Opus 4.5+ and Sonnet 4.6+
  keep all prior thinking blocks (https://platform.claude.com/docs/en/build-with-claude/
  extended-thinking, "Thinking block preservation"): ``all``. OpenAI reasoning models
  (https://platform.openai.com/docs/guides/reasoning, "How reasoning works", and the cookbook
  https://cookbook.openai.com/examples/responses_api/reasoning_items): reasoning tokens are
  discarded between turns; reasoning items passed back during function calling are used (and
  counted) until the next user message. Qwen3 (its ``chat_template``: ``reasoning_content``
  is rendered only for assistant messages after the last user query; QwenLM/Qwen3 discussion
  #1398: "the thinking content of the previous turns should be removed except for multi-step
  tool calls"): the same rule.
- ``all``: every reasoning field that travels back is counted (what a counter without a rule
  did before, and a provider that keeps all thinking, such as Qwen3.6 with
  ``preserve_thinking``); ``none``: reasoning is never counted (OpenAI Chat Completions, where
  reasoning is never returned; DeepSeek R1).

A turn is what follows a user message (tool results are not user turns). The replay engine
sums per-message counts (``count_message``), which cannot look at later messages, so there
``current_turn`` and ``tool_turns`` keep the reasoning of an assistant message that made tool
calls: exact for DeepSeek except the reasoning of a turn's final answer after tool calls, and
exact for the current-turn rule until the next user message arrives. ``count_prompt`` applies
the rules exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, get_args

from ctxbench.counting.base import TokenCounter
from ctxbench.trace import Message, ToolSpec

ReasoningRule = Literal["all", "none", "tool_turns", "current_turn"]
REASONING_RULES: tuple[str, ...] = get_args(ReasoningRule)

#: Replay fields that carry reasoning (the other replay fields are always counted).
#: ``codex_reasoning_items`` hold only ``encrypted_content``: no text to count, so their size
#: is the reasoning tokens the provider recorded (:func:`recorded_reasoning_tokens`).
REASONING_KEYS: tuple[str, ...] = (
    "reasoning_content",
    "reasoning",
    "reasoning_details",
    "thinking_blocks",
    "codex_reasoning_items",
)

RULE_SOURCES: Mapping[str, str] = {
    "tool_turns": "DeepSeek thinking mode: https://api-docs.deepseek.com/guides/thinking_mode",
    "current_turn": (
        "Anthropic: https://docs.anthropic.com/en/docs/build-with-claude/context-windows; "
        "OpenAI: https://platform.openai.com/docs/guides/reasoning; Qwen3 chat_template"
    ),
    "all": "every returned reasoning field counts",
    "none": "reasoning is never counted (OpenAI Chat Completions, DeepSeek R1)",
}


def check_rule(rule: str) -> ReasoningRule:
    """``rule`` as a :data:`ReasoningRule`, or a ConfigError with did-you-mean."""
    from ctxbench.errors import ConfigError

    if rule not in REASONING_RULES:
        import difflib

        close = difflib.get_close_matches(rule, REASONING_RULES, n=1)
        raise ConfigError(
            f"unknown reasoning rule {rule!r}",
            key="reasoning",
            hint=f"did you mean {close[0]!r}?"
            if close
            else f"use one of {', '.join(REASONING_RULES)}",
        )
    return rule  # type: ignore[return-value]


def _block_text(value: Any) -> str:
    """The model-visible text of a reasoning field: strings as-is, ``thinking`` / ``text`` /
    ``summary`` of blocks (signatures and encrypted content are not text the model reads)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        if value.get("type") == "redacted_thinking" or "encrypted_content" in value:
            return ""
        for key in ("thinking", "text", "content", "summary"):
            if key in value:
                return _block_text(value[key])
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Sequence):
        return "\n".join(t for t in (_block_text(v) for v in value) if t)
    return ""


def reasoning_text(message: Message) -> str:
    """The reasoning text a message carries in its replay fields."""
    return "".join(_block_text(message.replay[k]) for k in REASONING_KEYS if k in message.replay)


def recorded_reasoning_tokens(message: Message) -> int:
    """Reasoning tokens the provider recorded for the call that wrote ``message`` (OpenAI's
    ``completion_tokens_details.reasoning_tokens``, Codex's ``reasoning_output_tokens``): the
    size of reasoning that travels back encrypted, with no text to count."""
    meta = message.usage.meta if message.usage is not None else {}
    details = meta.get("completion_tokens_details") or meta.get("output_tokens_details") or {}
    for value in (
        meta.get("reasoning_output_tokens"),
        details.get("reasoning_tokens") if isinstance(details, Mapping) else None,
    ):
        if isinstance(value, int) and value > 0:
            return value
    return 0


def without_reasoning(message: Message) -> Message:
    """``message`` with its reasoning replay fields removed (other replay fields kept)."""
    if not any(k in message.replay for k in REASONING_KEYS):
        return message
    return replace(
        message, replay={k: v for k, v in message.replay.items() if k not in REASONING_KEYS}
    )


def kept(messages: Sequence[Message], rule: ReasoningRule) -> list[bool]:
    """Per message of one request: is its reasoning counted under ``rule``."""
    if rule == "all":
        return [True] * len(messages)
    if rule == "none":
        return [False] * len(messages)
    out = [False] * len(messages)
    if rule == "current_turn":
        last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        return [i > last_user and m.role == "assistant" for i, m in enumerate(messages)]
    # tool_turns: every assistant message of a user turn in which the model called a tool
    start = 0
    for i in range(len(messages) + 1):
        if i == len(messages) or messages[i].role == "user":
            turn = range(start, i)
            if any(messages[j].tool_calls for j in turn):
                for j in turn:
                    out[j] = messages[j].role == "assistant"
            start = i + 1
    return out


def kept_alone(message: Message, rule: ReasoningRule) -> bool:
    """The rule for one message seen without its conversation (the engine's per-message sum)."""
    if rule in ("all", "none"):
        return rule == "all"
    return message.role == "assistant" and bool(message.tool_calls)


class ReasoningCounter(TokenCounter):
    """A base counter whose reasoning replay fields follow a provider's rule."""

    def __init__(self, base: TokenCounter, rule: ReasoningRule) -> None:
        super().__init__(base.name, f"{base.source}; reasoning rule {rule}")
        self.kind = base.kind  # type: ignore[misc]
        self.base = base
        self.rule = rule

    @property
    def tokenizer_name(self) -> str:
        return self.base.tokenizer_name

    def count(self, text: str) -> int:
        return self.base.count(text)

    def reasoning_tokens(self, message: Message) -> int:
        """Tokens of the message's reasoning: its text, or, when it travels back encrypted,
        the reasoning tokens the provider recorded for the call that wrote it."""
        if not any(k in message.replay for k in REASONING_KEYS):
            return 0
        text = reasoning_text(message)
        return self.base.count(text) if text else recorded_reasoning_tokens(message)

    def message_tokens(self, message: Message) -> int:
        tokens = self.base.count_message(without_reasoning(message))
        if kept_alone(message, self.rule):
            tokens += self.reasoning_tokens(message)
        return tokens

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        return self.base.prompt_overhead(tools)

    def count_prompt(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
        """Exact under the rule: the base count of the stripped request plus the kept reasoning."""
        bare = [without_reasoning(m) for m in messages]
        flags = kept(messages, self.rule)
        extra = sum(self.reasoning_tokens(m) for m, keep in zip(messages, flags) if keep)
        return self.base.count_prompt(bare, tools) + extra

    def describe(self) -> dict[str, Any]:
        return {**self.base.describe(), "reasoning": self.rule}


def with_reasoning(counter: TokenCounter, rule: str | None) -> TokenCounter:
    """``counter`` under reasoning ``rule``; ``None`` leaves the counter as it is."""
    if rule is None:
        return counter
    base = counter.base if isinstance(counter, ReasoningCounter) else counter
    return ReasoningCounter(base, check_rule(rule))
