"""``summarize_half``: the ContextManager design document's ``build_for_llm`` / ``_compact`` contract.

Source: the ContextManager article ("Why Agent Conversations Aren't Just Chat Logs"), "Minimal ContextManager
Contract": ``build_for_llm`` compacts when ``estimate_tokens(system, messages) > token_budget``;
``_compact`` keeps the system message, summarises the oldest 50% of rounds and keeps the recent
full tool rounds (``split_messages(messages, keep_recent_tool_rounds=3)``), then
``messages = [summary_message(summary)] + recent``. docs/sources.md: the article's source is not
identified, so this is a reproduction of the document's contract, not of a shipped system.

Rules reproduced:

- Trigger: the strategy's estimate of the whole prompt is over ``token_budget`` (strictly
  greater, as in ``build_for_llm``); ``None`` means the run's ``window - reserved``.
- Split: rounds come from :func:`ctxbench.pairing.rounds`, so a tool call and its results are one
  unit. The oldest ``floor(summarize_fraction x rounds)`` rounds are summarised, but never any of
  the last ``keep_recent_tool_rounds`` rounds.
- Summary: one summarizer call over the old rounds with a prompt asking to keep unfinished
  tasks and key facts (the document's launch checklist: "Does summarization retain unfinished
  tasks and key facts?"); it goes in as one ``summary_role`` message before the recent rounds.
  A previous summary is part of the old rounds, so it is folded into the next one (also
  when ``summary_role`` is ``"system"``).
- No summarizer: ``summary_message`` is omitted and the old rounds are simply dropped
  (``[summary_message(summary)] if summary else []``). The document has no error handling for a
  failing summarizer; ``on_summary_failure`` chooses between dropping the old rounds like the
  no-summarizer path (``"drop"``, default) and leaving the prompt unchanged (``"keep"``).

Knobs (defaults): token_budget None (= window - reserved), summarize_fraction 0.5,
keep_recent_tool_rounds 3, summary_max_tokens 1000, summary_role "user",
on_summary_failure "drop". The prompt wording and the summary heading are ctxbench's; the
document gives none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ctxbench.config import require_non_negative, require_positive
from ctxbench.engine.context import ReplayContext
from ctxbench.errors import SummarizerError
from ctxbench.pairing import rounds
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.layers import CONTEXT_MANAGER_ARTICLE, split_system, transcript
from ctxbench.trace import Message

SUMMARY_PROMPT = """\
Summarize the older part of this agent conversation into a single message that will replace it.
Keep every unfinished task and every key fact needed to continue: exact names, file paths, \
identifiers, values, decisions and their reasons, and errors with how they were resolved. \
Drop completed sub-task attempts and duplicate tool error details.

## Conversation
{conversation}

## Output format (use exactly these headings)
Unfinished tasks: <what remains to be done>
Key facts: <exact values, paths, names and decisions>
"""

SUMMARY_SECTIONS = ("Unfinished tasks", "Key facts")
SUMMARY_HEADING = "[Summary of earlier conversation]"


@dataclass(frozen=True)
class SummarizeHalfConfig:
    token_budget: int | None = field(
        default=None, metadata={"help": "compact above this estimate (None = window - reserved)"}
    )
    summarize_fraction: float = field(
        default=0.5, metadata={"help": "share of the oldest rounds summarised"}
    )
    keep_recent_tool_rounds: int = field(
        default=3, metadata={"help": "recent full rounds never summarised"}
    )
    summary_max_tokens: int = field(default=1000, metadata={"help": "summary length budget"})
    summary_role: Literal["user", "system"] = field(
        default="user", metadata={"help": "role of the summary message"}
    )
    on_summary_failure: Literal["drop", "keep"] = field(
        default="drop",
        metadata={"help": "'drop' old rounds as with no summarizer, or 'keep' the prompt"},
    )

    def __post_init__(self) -> None:
        require_positive(self, "token_budget")
        if not 0.0 < self.summarize_fraction <= 1.0:
            raise ValueError(
                f"summarize_fraction must be within (0, 1], not {self.summarize_fraction}"
            )
        require_non_negative(self, "keep_recent_tool_rounds")
        require_positive(self, "summary_max_tokens")


def split_old_recent(
    messages: list[Message], fraction: float, keep_recent: int
) -> tuple[list[Message], list[Message]]:
    """(old, recent) non-system messages: the oldest ``fraction`` of rounds, never touching the
    last ``keep_recent`` rounds."""
    segs = rounds(messages)
    n_old = min(int(len(segs) * fraction), max(0, len(segs) - keep_recent))
    if n_old <= 0:
        return [], list(messages)
    cut = segs[n_old].first if n_old < len(segs) else len(messages)
    return list(messages[:cut]), list(messages[cut:])


class SummarizeHalf(Strategy[SummarizeHalfConfig]):
    name = "summarize_half"
    summary = "ContextManager article: over budget, summarise the oldest half of the rounds."
    source = f"{CONTEXT_MANAGER_ARTICLE}, build_for_llm / _compact"
    Config = SummarizeHalfConfig
    default_estimator = "chars4"

    def budget(self, ctx: ReplayContext) -> int:
        cfg = self.config
        return cfg.token_budget if cfg.token_budget is not None else ctx.window - ctx.reserved

    def before_call(self, ctx: ReplayContext) -> None:
        if ctx.view.estimated_tokens <= self.budget(ctx):
            return
        compacted = self.compact(ctx.view.messages, ctx)
        if compacted is not None:
            ctx.apply("summarize_half", compacted)

    def compact(self, messages: tuple[Message, ...], ctx: ReplayContext) -> list[Message] | None:
        """``_compact``: system + summary of the old rounds + recent rounds (None = unchanged)."""
        cfg = self.config
        system, rest = split_system(messages)
        previous = [m for m in system if m.content.startswith(SUMMARY_HEADING)]
        system = [m for m in system if not m.content.startswith(SUMMARY_HEADING)]
        old, recent = split_old_recent(rest, cfg.summarize_fraction, cfg.keep_recent_tool_rounds)
        if not old:
            return None
        old = previous + old
        request = ctx.summary_request(
            self.name,
            "summarize_half",
            old,
            prompt=SUMMARY_PROMPT.format(conversation=transcript(old)),
            sections=SUMMARY_SECTIONS,
            max_tokens=cfg.summary_max_tokens,
        )
        try:
            text = ctx.summarize(request)
        except SummarizerError as exc:
            if exc.kind != "missing" and cfg.on_summary_failure == "keep":
                return None
            return [*system, *recent]
        note = Message(cfg.summary_role, f"{SUMMARY_HEADING}\n{text}")
        return [*system, note, *recent]
