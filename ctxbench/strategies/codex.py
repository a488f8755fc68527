"""``codex``: OpenAI Codex CLI's local auto-compaction.

Source: openai/codex ``codex-rs/core/src/compact.rs`` (``run_compact_task_inner``,
``collect_user_messages``, ``build_compacted_history``), ``codex-rs/core/templates/compact/
prompt.md`` and ``summary_prefix.md``, ``codex-rs/core/src/truncate.rs`` (``approx_token_count``,
``truncate_text``) and ``codex-rs/protocol/src/openai_models.rs`` (``auto_compact_token_limit``);
docs/sources.md.

Rules reproduced:

- Trigger: the token count reaches ``auto_compact_token_limit`` = 90% of the context window
  (``window * 9 / 10``). A configured limit can only lower it (``min``, current code); older code
  (``model_family.rs``) let a configured limit replace it (``configured_limit_mode="replace"``).
  Codex compares the provider-reported usage; ctxbench compares the strategy's estimate
  (``chars4``, close to codex's own ``approx_token_count`` = ceil(UTF-8 bytes / 4)).
- Summary: the history plus the compaction prompt ("CONTEXT CHECKPOINT COMPACTION ... handoff
  summary": goal, progress and decisions, constraints and preferences, remaining steps, critical
  data) goes to the summarizer. If that request is over the window (``ContextWindowExceeded``),
  the oldest history item is removed (with the results of its calls, ``remove_first_item``) and
  it retries; a retry is judged with the strategy's estimate against ``window - reserved``
  because the replay engine does not send summary calls to the simulated provider.
- New history: the initial context (the system messages) + the most recent user messages,
  newest first up to ``user_message_max_tokens`` (20,000) by ``approx_token_count``, the one that
  does not fit truncated in the middle (``[…N tokens truncated…]``), restored to chronological
  order + one summary message ``SUMMARY_PREFIX + "\\n" + summary``; all role user, text only.
  Earlier summary messages and tool observations are not user messages.
- A failing summarizer (codex retries the stream, then reports an error) leaves the history
  unchanged. Each compaction's note carries codex's "Heads up" warning and how many items were
  trimmed before compacting.

Left out: ghost snapshots (no git state in a trace), remote compaction (OpenAI's opaque
``compaction`` item), the 95% ``effective_context_window_percent`` shown to users.

Knobs (defaults): auto_compact_token_limit None (= 90% of the window), configured_limit_mode
"min", user_message_max_tokens 20000, summary_max_tokens None.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ctxbench.config import require_non_negative, require_positive
from ctxbench.engine.context import ReplayContext
from ctxbench.errors import SummarizerError
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.layers import (
    drop_unpaired,
    split_system,
    transcript,
    transcript_request,
)
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import Message

SUMMARIZATION_PROMPT = """\
You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.

Include:
- Goal / user objective
- Current progress and key decisions made
- Important context, constraints, or user preferences
- What remains to be done (clear next steps)
- Any critical data, examples, or references needed to continue

Be concise, structured, and focused on helping the next LLM seamlessly continue the work.
"""

SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by that "
    "language model. Use this to build on the work that has already been done and avoid "
    "duplicating work. Here is the summary produced by the other language model, use the "
    "information in this summary to  assist with your own analysis:"
)

SUMMARY_SECTIONS = (
    "Goal / user objective",
    "Current progress and key decisions made",
    "Important context, constraints, or user preferences",
    "What remains to be done (clear next steps)",
    "Any critical data, examples, or references needed to continue",
)

WARNING = (
    "Heads up: Long conversations and multiple compactions can cause the model to be less "
    "accurate. Start a new conversation when possible to keep conversations small and targeted."
)
BYTES_PER_TOKEN = 4


def approx_token_count(text: str) -> int:
    """Codex ``approx_token_count``: UTF-8 bytes / 4, rounded up."""
    return -(-len(text.encode("utf-8", "surrogatepass")) // BYTES_PER_TOKEN)


def truncate_text(text: str, max_tokens: int) -> str:
    """Codex ``truncate_text(.., TruncationPolicy::Tokens(n))``: keep a prefix and a suffix
    within ``4 n`` bytes (cut after a newline when there is one) around
    ``[…N tokens truncated…]``, N being the removed bytes / 4, rounded up."""
    data = text.encode("utf-8", "surrogatepass")
    max_bytes = max_tokens * BYTES_PER_TOKEN
    if not data:
        return text
    if max_bytes <= 0:
        return _marker(len(data))
    if len(data) <= max_bytes:
        return text
    guess = _marker(len(data) - max_bytes).encode("utf-8")
    if len(guess) >= max_bytes:
        return _decode(guess[:max_bytes])
    keep = max_bytes - len(guess)
    left = keep // 2
    right = keep - left
    newline = data[:left].rfind(b"\n")
    prefix_end = newline + 1 if newline >= 0 else _char_end(data, left)
    start_tail = len(data) - right
    newline = data[start_tail:].find(b"\n")
    suffix_start = start_tail + newline + 1 if newline >= 0 else _char_start(data, start_tail)
    suffix_start = max(suffix_start, prefix_end)
    marker = _marker(suffix_start - prefix_end).encode("utf-8")
    return _decode((data[:prefix_end] + marker + b"\n" + data[suffix_start:])[:max_bytes])


def _marker(removed_bytes: int) -> str:
    return f"[…{-(-removed_bytes // BYTES_PER_TOKEN)} tokens truncated…]"


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "ignore")


def _char_end(data: bytes, index: int) -> int:
    """The largest character boundary <= ``index``."""
    while 0 < index < len(data) and (data[index] & 0xC0) == 0x80:
        index -= 1
    return index


def _char_start(data: bytes, index: int) -> int:
    while index < len(data) and (data[index] & 0xC0) == 0x80:
        index += 1
    return index


def is_summary_message(text: str) -> bool:
    return text.startswith(SUMMARY_PREFIX + "\n")


def collect_user_messages(messages: Sequence[Message]) -> list[str]:
    """The text of real user messages (no observations, no earlier summaries)."""
    return [
        m.content
        for m in messages
        if m.role == "user" and not m.is_observation and not is_summary_message(m.content)
    ]


def build_compacted_history(
    initial: list[Message], user_messages: list[str], summary_text: str, max_tokens: int
) -> list[Message]:
    """Initial context + recent user messages (newest first within ``max_tokens``) + summary."""
    selected: list[str] = []
    remaining = max_tokens
    for text in reversed(user_messages):
        if remaining == 0 or max_tokens <= 0:
            break
        tokens = approx_token_count(text)
        if tokens <= remaining:
            selected.append(text)
            remaining -= tokens
        else:
            selected.append(truncate_text(text, remaining))
            break
    selected.reverse()
    summary = summary_text or "(no summary available)"
    return [*initial, *(Message("user", t) for t in selected), Message("user", summary)]


@dataclass(frozen=True)
class CodexConfig:
    auto_compact_token_limit: int | None = field(
        default=None, metadata={"help": "configured limit (None = 90% of the window)"}
    )
    configured_limit_mode: Literal["min", "replace"] = field(
        default="min",
        metadata={"help": "'min' (current code: can only lower 90%) or 'replace' (older code)"},
    )
    user_message_max_tokens: int = field(
        default=20_000, metadata={"help": "COMPACT_USER_MESSAGE_MAX_TOKENS"}
    )
    summary_max_tokens: int | None = field(
        default=None, metadata={"help": "summary length budget (None: codex sets none)"}
    )

    def __post_init__(self) -> None:
        require_positive(self, "auto_compact_token_limit")
        require_non_negative(self, "user_message_max_tokens")


def remove_first_item(messages: list[Message]) -> list[Message]:
    """Codex ``remove_first_item``: drop the oldest item and its call/output counterpart."""
    return drop_unpaired(messages[1:])


class Codex(Strategy[CodexConfig]):
    name = "codex"
    summary = "Codex CLI: at 90% of the window, recent user messages + a handoff summary."
    source = "openai/codex codex-rs/core/src/compact.rs"
    Config = CodexConfig
    default_estimator = "chars4"
    reproduces = ("codex",)
    reproduces_why = "Codex CLI's compaction: these are Codex rollouts"

    @classmethod
    def recorded_summary_request(
        cls, history: tuple[Message, ...], *, trace_id: str, call: int, first: bool
    ) -> SummaryRequest:
        """The summarization prompt over the transcript, with the default summary budget
        (layer ``auto_compact``, as the rollouts name it)."""
        budget, key = CodexConfig().summary_max_tokens, f"{trace_id}:{call}:auto_compact:0"
        return transcript_request(
            cls.name, "auto_compact", history, SUMMARIZATION_PROMPT, SUMMARY_SECTIONS, budget, key
        )

    def limit(self, ctx: ReplayContext) -> int:
        """``auto_compact_token_limit`` for the run's window."""
        cfg = self.config
        context_limit = ctx.window * 9 // 10
        if cfg.auto_compact_token_limit is None:
            return context_limit
        if cfg.configured_limit_mode == "replace":
            return cfg.auto_compact_token_limit
        return min(cfg.auto_compact_token_limit, context_limit)

    def budget(self, ctx: ReplayContext) -> int:
        return self.limit(ctx)

    def before_call(self, ctx: ReplayContext) -> None:
        if ctx.view.estimated_tokens < self.limit(ctx):
            return
        self.compact(ctx)

    def compact(self, ctx: ReplayContext) -> bool:
        """Run codex's compaction task; False when the summary could not be made."""
        cfg = self.config
        system, history = split_system(ctx.view.messages)
        system_tokens = ctx.view.est_overhead + sum(ctx.estimator.count_message(m) for m in system)
        prompt_tokens = ctx.estimator.count(SUMMARIZATION_PROMPT)
        trimmed = 0
        while (
            len(history) > 1
            and system_tokens + sum(ctx.estimator.count_message(m) for m in history) + prompt_tokens
            > ctx.window - ctx.reserved
        ):
            history = remove_first_item(history)
            trimmed += 1
        request = ctx.summary_request(
            self.name,
            "codex",
            history,
            prompt=transcript(history) + "\n\n[user]: " + SUMMARIZATION_PROMPT,
            sections=SUMMARY_SECTIONS,
            max_tokens=cfg.summary_max_tokens,
        )
        try:
            summary = ctx.summarize(request)
        except SummarizerError:
            return False
        new_history = build_compacted_history(
            system,
            collect_user_messages(ctx.view.messages),
            f"{SUMMARY_PREFIX}\n{summary}",
            cfg.user_message_max_tokens,
        )
        note = WARNING if not trimmed else f"trimmed {trimmed} item(s) before compacting. {WARNING}"
        ctx.apply("codex", new_history, note=note)
        return True
