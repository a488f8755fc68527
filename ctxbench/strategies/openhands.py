"""OpenHands V0 rolling condensers: ``openhands_summarizing`` and ``openhands_amortized``.

Source: OpenHands/OpenHands (V0), ``openhands/memory/condenser/impl/llm_summarizing_condenser.py``,
``amortized_forgetting_condenser.py``, ``openhands/core/config/condenser_config.py`` and
``openhands/events/serialization/event.py`` (``truncate_content``); docs/sources.md.

OpenHands counts **events**. ctxbench maps one non-system message to one event (an assistant
message with parallel calls is one event here, where OpenHands has one action event per call);
system messages are the agent's system prompt, always kept and not counted. ``keep_first`` events
are the head (by default the first user message, "the best guess is that it's the user task").

``openhands_summarizing`` (``LLMSummarizingCondenser``):

- Trigger: ``len(events) > max_size`` (before a call).
- Result: head (``keep_first``) + one summary event + tail of
  ``max_size // 2 - keep_first - 1`` events; everything between is forgotten and summarised
  together with the previous summary (the summary event at ``keep_first``; "No events
  summarized" when there is none yet).
- Prompt: OpenHands' text, the ``<PREVIOUS SUMMARY>`` block and one ``<EVENT id=N>`` block per
  forgotten event, each truncated in the middle to ``max_event_length`` characters with
  ``"\\n[... Observation truncated due to length ...]\\n"``. Sections: USER_CONTEXT,
  TASK_TRACKING, COMPLETED, PENDING, CURRENT_STATE, CODE_STATE, TESTS, CHANGES, DEPS,
  VERSION_CONTROL_STATUS. The summary event is a user message (``AgentCondensationObservation``
  renders as one). OpenHands sets no output limit; ``summary_max_tokens`` None keeps that.
- A failing summarizer raises in OpenHands (the agent errors); ctxbench leaves the prompt
  unchanged and tries again at the next call.

``openhands_amortized`` (``AmortizedForgettingCondenser``): when ``len(events) > max_size``,
keep the head (``keep_first``) and a tail of up to ``max_size // 2 - keep_first`` events; the
middle is forgotten without a summary. ``keep_first`` is 1 in the config class and 0 in the
condenser's signature; the default here is the config's 1.

Tool pairs: OpenHands builds messages with ``_filter_unmatched_tool_calls``, silently dropping a
result whose action was forgotten. ctxbench instead moves the tail boundary forward past such
results (so they are forgotten, and summarised, with their call) and moves the head boundary back
before an assistant whose results would be forgotten; :func:`drop_unpaired` is the final net.

Knobs (defaults): max_size 100, keep_first 1, max_event_length 10000 and summary_max_tokens None
(summarizing only). Both require ``keep_first < max_size // 2``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxbench.engine.context import ReplayContext
from ctxbench.engine.strategy import Starter
from ctxbench.errors import SummarizerError
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.layers import (
    drop_unpaired,
    safe_end_backward,
    safe_start_forward,
    split_system,
)
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import Message

SUMMARY_PROMPT = """You are maintaining a context-aware state summary for an interactive agent.
You will be given a list of events corresponding to actions taken by the agent, and the most recent previous summary if one exists.
If the events being summarized contain ANY task-tracking, you MUST include a TASK_TRACKING section to maintain continuity.
When referencing tasks make sure to preserve exact task IDs and statuses.

Track:

USER_CONTEXT: (Preserve essential user requirements, goals, and clarifications in concise form)

TASK_TRACKING: {Active tasks, their IDs and statuses - PRESERVE TASK IDs}

COMPLETED: (Tasks completed so far, with brief results)
PENDING: (Tasks that still need to be done)
CURRENT_STATE: (Current variables, data structures, or relevant state)

For code-specific tasks, also include:
CODE_STATE: {File paths, function signatures, data structures}
TESTS: {Failing cases, error messages, outputs}
CHANGES: {Code edits, variable updates}
DEPS: {Dependencies, imports, external calls}
VERSION_CONTROL_STATUS: {Repository state, current branch, PR status, commit history}

PRIORITIZE:
1. Adapt tracking format to match the actual task type
2. Capture key user requirements and goals
3. Distinguish between completed and pending tasks
4. Keep all sections concise and relevant

SKIP: Tracking irrelevant details for the current task type

Example formats:

For code tasks:
USER_CONTEXT: Fix FITS card float representation issue
COMPLETED: Modified mod_float() in card.py, all tests passing
PENDING: Create PR, update documentation
CODE_STATE: mod_float() in card.py updated
TESTS: test_format() passed
CHANGES: str(val) replaces f"{val:.16G}"
DEPS: None modified
VERSION_CONTROL_STATUS: Branch: fix-float-precision, Latest commit: a1b2c3d

For other tasks:
USER_CONTEXT: Write 20 haikus based on coin flip results
COMPLETED: 15 haikus written for results [T,H,T,H,T,H,T,T,H,T,H,T,H,T,H]
PENDING: 5 more haikus needed
CURRENT_STATE: Last flip: Heads, Haiku count: 15/20"""

SUMMARY_SECTIONS = (
    "USER_CONTEXT",
    "TASK_TRACKING",
    "COMPLETED",
    "PENDING",
    "CURRENT_STATE",
    "CODE_STATE",
    "TESTS",
    "CHANGES",
    "DEPS",
    "VERSION_CONTROL_STATUS",
)
NO_SUMMARY = "No events summarized"
TRUNCATION_MARKER = "\n[... Observation truncated due to length ...]\n"


def truncate_content(content: str, max_chars: int) -> str:
    """OpenHands ``truncate_content``: keep both halves, cut the middle."""
    if max_chars < 0 or len(content) <= max_chars:
        return content
    half = max_chars // 2
    return content[:half] + TRUNCATION_MARKER + content[len(content) - half :]


def event_text(message: Message) -> str:
    """A stand-in for ``str(event)``: the role, the text and the calls of one message."""
    text = f"{message.role}: {message.content}"
    for call in message.tool_calls:
        text += f"\n{call.name}({call.arguments})"
    return text


def summary_prompt(previous: str, events: list[Message], max_event_length: int) -> str:
    prompt = SUMMARY_PROMPT + "\n\n"
    prompt += (
        f"<PREVIOUS SUMMARY>\n{truncate_content(previous, max_event_length)}\n</PREVIOUS SUMMARY>\n"
    )
    prompt += "\n\n"
    for i, event in enumerate(events):
        body = truncate_content(event_text(event), max_event_length)
        prompt += f"<EVENT id={i}>\n{body}\n</EVENT>\n"
    return prompt + "Now summarize the events using the rules above."


@dataclass(frozen=True)
class OpenHandsSummarizingConfig:
    max_size: int = field(default=100, metadata={"help": "events before condensing"})
    keep_first: int = field(default=1, metadata={"help": "initial events always kept"})
    max_event_length: int = field(
        default=10_000, metadata={"help": "characters per event in the summary prompt"}
    )
    summary_max_tokens: int | None = field(
        default=None, metadata={"help": "summary length budget (None: OpenHands sets none)"}
    )

    def __post_init__(self) -> None:
        _check_sizes(self.max_size, self.keep_first)


@dataclass(frozen=True)
class OpenHandsAmortizedConfig:
    max_size: int = field(default=100, metadata={"help": "events before forgetting"})
    keep_first: int = field(
        default=1, metadata={"help": "initial events always kept (config 1; class 0)"}
    )

    def __post_init__(self) -> None:
        _check_sizes(self.max_size, self.keep_first)


def _check_sizes(max_size: int, keep_first: int) -> None:
    if max_size < 2:
        raise ValueError(f"max_size must be >= 2, not {max_size}")
    if keep_first < 0:
        raise ValueError(f"keep_first ({keep_first}) cannot be negative")
    if keep_first >= max_size // 2:
        raise ValueError(
            f"keep_first ({keep_first}) must be less than half of max_size ({max_size})"
        )


def head_tail_cut(events: list[Message], keep_first: int, tail: int) -> tuple[int, int]:
    """(end of the head, start of the tail), moved so that no tool pair is split."""
    head_end = safe_end_backward(events, min(keep_first, len(events)))
    tail_start = max(head_end, len(events) - tail) if tail > 0 else len(events)
    return head_end, safe_start_forward(events, tail_start)


class OpenHandsSummarizing(Strategy[OpenHandsSummarizingConfig]):
    name = "openhands_summarizing"
    summary = "OpenHands V0 LLMSummarizingCondenser: head + summary + tail by event count."
    source = "OpenHands/OpenHands openhands/memory/condenser/impl/llm_summarizing_condenser.py"
    Config = OpenHandsSummarizingConfig
    default_estimator = "chars4"
    reproduces = ("openhands",)
    starter = Starter(3, "OpenHands' head + summary + tail")
    reproduces_why = "OpenHands' condenser: these are OpenHands event streams"

    @classmethod
    def recorded_summary_request(
        cls, history: tuple[Message, ...], *, trace_id: str, call: int, first: bool
    ) -> SummaryRequest:
        """The condenser prompt over the events after the ``keep_first`` head (the kept tail
        is not known from the record, so the whole rest counts as forgotten); after the first
        condensation the head holds the previous summary."""
        cfg = OpenHandsSummarizingConfig()
        _, rest = split_system(history)
        head, forgotten = rest[: cfg.keep_first], rest[cfg.keep_first :]
        summaries = [m.content for m in head if m.role == "user" and not first]
        previous = summaries[0] if summaries else None
        return SummaryRequest(
            strategy=cls.name,
            layer=cls.name,
            prompt=summary_prompt(previous or NO_SUMMARY, list(forgotten), cfg.max_event_length),
            messages=tuple(forgotten),
            sections=SUMMARY_SECTIONS,
            max_tokens=cfg.summary_max_tokens,
            previous_summary=previous,
            key=f"{trace_id}:{call}:{cls.name}:0",
        )

    def __init__(self, config: OpenHandsSummarizingConfig | None = None) -> None:
        super().__init__(config)
        self.summary_message: Message | None = None

    def before_call(self, ctx: ReplayContext) -> None:
        system, events = split_system(ctx.view.messages)
        if len(events) <= self.config.max_size:
            return
        condensed = self.condense(events, ctx)
        if condensed is not None:
            ctx.apply("openhands_summarizing", [*system, *condensed])

    def condense(self, events: list[Message], ctx: ReplayContext) -> list[Message] | None:
        cfg = self.config
        tail_size = cfg.max_size // 2 - cfg.keep_first - 1
        previous = self.summary_message
        head_end, tail_start = head_tail_cut(events, cfg.keep_first, tail_size)
        head = [m for m in events[:head_end] if m is not previous]
        forgotten = [m for m in events[head_end:tail_start] if m is not previous]
        if not forgotten:
            return None
        previous_text = previous.content if previous is not None else NO_SUMMARY
        request = ctx.summary_request(
            self.name,
            "openhands_summarizing",
            forgotten,
            prompt=summary_prompt(previous_text, forgotten, cfg.max_event_length),
            sections=SUMMARY_SECTIONS,
            max_tokens=cfg.summary_max_tokens,
            previous_summary=previous.content if previous is not None else None,
        )
        try:
            text = ctx.summarize(request)
        except SummarizerError:
            return None
        self.summary_message = Message("user", text)
        return drop_unpaired([*head, self.summary_message, *events[tail_start:]])


class OpenHandsAmortized(Strategy[OpenHandsAmortizedConfig]):
    name = "openhands_amortized"
    summary = "OpenHands V0 AmortizedForgettingCondenser: head + tail by event count."
    source = "OpenHands/OpenHands openhands/memory/condenser/impl/amortized_forgetting_condenser.py"
    Config = OpenHandsAmortizedConfig
    default_estimator = "chars4"

    def before_call(self, ctx: ReplayContext) -> None:
        cfg = self.config
        system, events = split_system(ctx.view.messages)
        if len(events) <= cfg.max_size:
            return
        tail_size = cfg.max_size // 2 - min(cfg.keep_first, len(events))
        head_end, tail_start = head_tail_cut(events, cfg.keep_first, tail_size)
        if tail_start <= head_end:
            return
        kept = drop_unpaired([*events[:head_end], *events[tail_start:]])
        ctx.apply("openhands_amortized", [*system, *kept])
