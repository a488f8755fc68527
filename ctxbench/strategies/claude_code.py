"""``claude_code``: Claude Code's auto-compact (and optional microcompact).

Sources: deobfuscated-source analyses of Claude Code's ``services/compact/autoCompact.ts``,
``compact.ts`` and ``prompt.ts`` (**secondary**, docs/sources.md: zhanghandong
"harness-engineering" ch. 9; manavgup shipai; gist sam-saffron-jarvis (v2.1.68); ccstatusline
PR #319), checked against **records**: the ``compact_boundary`` entries of real Claude Code
2.1.39 sessions (``compactMetadata.preTokens``, marot/spotter test fixtures; see
``ctxbench recorded``). Where the records and a secondary source disagree, the records win:
the rule below is the one that reproduces the recorded ``preTokens`` and call, and the
secondary reading it replaces is named.

Rules reproduced:

- Window: ``effective_window = window - reserve``, where the window may be lowered by
  ``auto_compact_window`` (``CLAUDE_CODE_AUTO_COMPACT_WINDOW``) and ``max_output_tokens`` is the
  model's output limit (None = the run's ``--reserved``). The reserve depends on the CLI version
  (``cli_version``, the ``version`` a session file carries; None = the newest rule):

  - from 2.1.21: ``min(max_output_tokens, 20_000)`` (``MAX_OUTPUT_TOKENS_FOR_SUMMARY``;
    changelog 2.1.21 "Fixed auto-compact triggering too early on models with large output
    token limits"; ``/context`` shows a 33k buffer). Records: three 2.1.39 sessions, Opus 4.6,
    compact when the count first reaches 200,000 - 20,000 - 13,000 = 167,000 (preTokens
    167,117 and 167,094, at exactly the calls where the count crosses it);
  - before 2.1.21: the whole ``max_output_tokens`` (v2.0.30 ``/context``: "Autocompact buffer:
    45.0k" = 32,000 + 13,000; v2.1.19 binary: threshold = (window - max output) - 13,000, per
    r/ClaudeCode 2026-01-26). No records of these versions are available.
- Threshold: ``effective_window - 13_000`` (``AUTOCOMPACT_BUFFER_TOKENS``), about 167K on a
  200K window; ``autocompact_pct_override`` (``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``, 0 < p <= 100)
  gives ``floor(effective_window x p / 100)`` and can only lower the threshold. Compaction runs
  when the count is >= the threshold; ``enabled`` False is ``DISABLE_AUTO_COMPACT``.
- Count (``usage_anchored``, on by default): Claude Code's ``tokenCountWithEstimation``: the
  newest API usage in the history (input + cache read + cache creation + output tokens of that
  call) plus ``ceil(chars / 4)`` per content block of every newer message. Records: this gives
  the recorded ``preTokens`` to the token on one session (167,060 + 34). The secondary sources
  pad the newer messages by 4/3 (the ``claude_code`` estimator); the records disagree (the
  padding would give 167,105), so the records win and newer messages count ``ceil(chars / 4)``.
  Session files keep a streaming snapshot of ``output_tokens`` (1 for calls that wrote
  thousands of tokens, in 21 to 77 of a session's calls), so a recorded output below the
  estimator's count of what the call wrote is raised to that count (the other session:
  166,874 + 38 + 99 = 167,011 against 167,117; the 106 left are not in the file).
- Anchor: ``after_call`` keeps each accepted attempt and :meth:`ClaudeCode.observe_call`
  anchors the count on it once the call's message is in the view: on the call's recorded usage
  while that describes the replayed view, else (after our compaction, after the recorded
  agent's, seen as a recorded prompt that shrinks, or with no recorded usage) on the simulated
  provider's count of the prompt plus the **hidden prefix**: the system prompt and tool
  schemas, absent from session files, which the first call's usage reveals (its recorded
  prompt minus the provider's count of what the file shows of that request; about 26k tokens
  for Claude Code 2.1). Before the first call, or with ``usage_anchored`` False, the count is
  the estimator's plus the hidden prefix by the estimator. Each call emits a
  ``strategy.decision`` event with the count and the threshold.
- Summary: one call (``maxTurns=1``, no tools) with the 9-section prompt (Primary Request and
  Intent, Key Technical Concepts, Files and Code Sections, Errors and fixes, Problem Solving, All
  user messages, Pending Tasks, Current Work, Optional Next Step) over the whole history; the
  ``<analysis>`` scratchpad is stripped; the summary **replaces the whole history** as one user
  message after the system prompt.
- Circuit breaker: after 3 consecutive failed compactions (``MAX_CONSECUTIVE_AUTOCOMPACT_
  FAILURES``) auto-compact stops for the rest of the session; a success resets the count.
- Reactive compact: a context-overflow rejection ("prompt is too long") triggers one
  compaction and a retry (``reactive_compact``).
- Microcompact (``microcompact``, off by default): results of Read, Bash, Grep, Glob,
  WebSearch, WebFetch, Edit and Write older than the last ``microcompact_keep_recent`` (5) such
  results become ``"[Old tool result content cleared]"``. Claude Code runs the time-based variant
  after a gap of more than 60 minutes; a replay has no clock, so when on it runs before every call.

Left out: re-attaching recently read files, todo lists and plans after compaction; session-memory
compaction; the warning/error UI thresholds (20,000 tokens below the threshold).

Knobs (defaults): enabled True, cli_version None, usage_anchored True, max_output_tokens None,
auto_compact_window None, autocompact_pct_override None, buffer_tokens 13000,
summary_output_reserve 20000,
max_consecutive_failures 3, reactive_compact True, microcompact False,
microcompact_keep_recent 5, microcompact_tools (Read, Bash, Grep, Glob, WebSearch, WebFetch, Edit,
Write), summary_max_tokens 20000.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxbench.config import require_non_negative, require_positive
from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.events import RECORDED_SOURCE
from ctxbench.engine.provider import is_overflow_error
from ctxbench.engine.strategy import TraceDefault
from ctxbench.errors import ProviderOverflowError, SummarizerError
from ctxbench.memo import ObjectMemo, shared_memo
from ctxbench.strategies.base import ProviderCall, Strategy
from ctxbench.strategies.layers import (
    split_system,
    transcript,
    transcript_request,
    with_placeholder,
)
from ctxbench.summarizers.base import SummaryRequest, summary_source
from ctxbench.trace import Message

COMPACT_PROMPT = """\
Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.
This summary should be thorough in capturing technical details, code patterns, and architectural decisions that would be essential for continuing development work without losing context.

Before providing your final summary, wrap your analysis in <analysis> tags to organize your thoughts and ensure you've covered all necessary points.

Your summary should include the following sections:

1. Primary Request and Intent: Capture all of the user's explicit requests and intents in detail
2. Key Technical Concepts: List all important technical concepts, technologies, and frameworks discussed.
3. Files and Code Sections: Enumerate specific files and code sections examined, modified, or created. Pay special attention to the most recent messages and include full code snippets where applicable.
4. Errors and fixes: List all errors that you ran into, and how you fixed them. Pay special attention to specific user feedback.
5. Problem Solving: Document problems solved and any ongoing troubleshooting efforts.
6. All user messages: List ALL user messages that are not tool results. These are critical for understanding the users' feedback and changing intent.
7. Pending Tasks: Outline any pending tasks that you have explicitly been asked to work on.
8. Current Work: Describe in detail precisely what was being worked on immediately before this summary request.
9. Optional Next Step: List the next step that you will take that is related to the most recent work you were doing.
"""

SUMMARY_SECTIONS = (
    "1. Primary Request and Intent",
    "2. Key Technical Concepts",
    "3. Files and Code Sections",
    "4. Errors and fixes",
    "5. Problem Solving",
    "6. All user messages",
    "7. Pending Tasks",
    "8. Current Work",
    "9. Optional Next Step",
)

CONTINUATION = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)
MICROCOMPACT_PLACEHOLDER = "[Old tool result content cleared]"
MICROCOMPACT_TOOLS = ("Read", "Bash", "Grep", "Glob", "WebSearch", "WebFetch", "Edit", "Write")
_ANALYSIS = re.compile(r"<analysis>.*?</analysis>\s*", re.S)
#: First CLI version whose output reserve is capped at MAX_OUTPUT_TOKENS_FOR_SUMMARY (changelog
#: 2.1.21; the 2.1.39 records confirm the cap).
CAPPED_RESERVE_SINCE = (2, 1, 21)
#: Claude Code's output limit unless CLAUDE_CODE_MAX_OUTPUT_TOKENS says otherwise.
CLAUDE_CODE_MAX_OUTPUT = 32_000


def parse_version(text: str) -> tuple[int, ...]:
    """``"2.1.39"`` -> ``(2, 1, 39)``; a suffix such as ``-beta`` is ignored."""
    head = re.match(r"\d+(?:\.\d+)*", text.strip())
    if head is None:
        raise ValueError(f"cli_version must look like 2.1.39, not {text!r}")
    return tuple(int(n) for n in head.group(0).split("."))


def rough_tokens(message: Message) -> int:
    """Claude Code's ``roughTokenCountEstimation``: ``ceil(chars / 4)`` per content block
    (text, tool input as JSON, tool-result text, thinking)."""
    blocks: list[str] = [p.text for p in message.parts or () if p.is_text] or [message.content]
    blocks += [call.name + call.arguments for call in message.tool_calls]
    for value in message.replay.values():
        items = value if isinstance(value, list) else [value]
        blocks += [str(b.get("thinking", "")) if isinstance(b, dict) else str(b) for b in items]
    return sum(-(-len(b) // 4) for b in blocks if b)


def rough_memo() -> ObjectMemo[Message, int]:
    """Each message's :func:`rough_tokens`, once per message object (a shared memo)."""
    return shared_memo(("claude_code.rough",), rough_tokens)


def format_summary(text: str) -> str:
    """Strip the ``<analysis>`` scratchpad and a ``<summary>`` wrapper."""
    text = _ANALYSIS.sub("", text)
    text = re.sub(r"</?summary>", "", text)
    return text.strip()


@dataclass(frozen=True)
class ClaudeCodeConfig:
    enabled: bool = field(default=True, metadata={"help": "auto-compact on (DISABLE_AUTO_COMPACT)"})
    cli_version: str | None = field(
        default=None,
        metadata={"help": "Claude Code version whose threshold rule applies (None = newest)"},
    )
    usage_anchored: bool = field(
        default=True,
        metadata={"help": "count = last call's usage + chars/4 of newer messages (Claude Code)"},
    )
    max_output_tokens: int | None = field(
        default=None, metadata={"help": "model output limit (None = the run's --reserved)"}
    )
    auto_compact_window: int | None = field(
        default=None, metadata={"help": "CLAUDE_CODE_AUTO_COMPACT_WINDOW (can only lower)"}
    )
    autocompact_pct_override: float | None = field(
        default=None, metadata={"help": "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE, (0, 100]"}
    )
    buffer_tokens: int = field(default=13_000, metadata={"help": "AUTOCOMPACT_BUFFER_TOKENS"})
    summary_output_reserve: int = field(
        default=20_000, metadata={"help": "MAX_OUTPUT_TOKENS_FOR_SUMMARY"}
    )
    max_consecutive_failures: int = field(default=3, metadata={"help": "circuit breaker"})
    reactive_compact: bool = field(
        default=True, metadata={"help": "compact and retry once on 'prompt is too long'"}
    )
    microcompact: bool = field(default=False, metadata={"help": "clear old tool results"})
    microcompact_keep_recent: int = field(default=5, metadata={"help": "results kept"})
    microcompact_tools: tuple[str, ...] = field(
        default=MICROCOMPACT_TOOLS, metadata={"help": "tools whose results may be cleared"}
    )
    summary_max_tokens: int = field(
        default=20_000, metadata={"help": "summary output budget (the summary reserve)"}
    )

    def __post_init__(self) -> None:
        if self.cli_version is not None:
            parse_version(self.cli_version)
        pct = self.autocompact_pct_override
        if pct is not None and not 0 < pct <= 100:
            raise ValueError(f"autocompact_pct_override must be within (0, 100], not {pct}")
        require_positive(self, "max_output_tokens", "auto_compact_window")
        require_non_negative(
            self,
            "buffer_tokens",
            "summary_output_reserve",
            "max_consecutive_failures",
            "microcompact_keep_recent",
            "summary_max_tokens",
        )


class ClaudeCode(Strategy[ClaudeCodeConfig]):
    name = "claude_code"
    summary = (
        "Claude Code auto-compact: 9-section summary at effective window - 13K, usage-anchored."
    )
    source = (
        "Claude Code autoCompact.ts via deobfuscated-source analyses (secondary),"
        " checked against recorded 2.1.39 compact_boundary entries"
    )
    Config = ClaudeCodeConfig
    default_estimator = "claude_code"
    reproduces = ("claude_code",)
    reproduces_why = (
        "Claude Code's auto-compact: these are Claude Code sessions; each session's CLI "
        "version and Claude Code's 32,000 output limit come from the trace (`run` prints them)"
    )

    @classmethod
    def recorded_summary_request(
        cls, history: tuple[Message, ...], *, trace_id: str, call: int, first: bool
    ) -> SummaryRequest:
        """The 9-section compact prompt over the transcript, with the default summary budget
        (layer ``autocompact``)."""
        budget = ClaudeCodeConfig().summary_max_tokens
        key = f"{trace_id}:{call}:autocompact:0"
        return transcript_request(
            cls.name, "autocompact", history, COMPACT_PROMPT, SUMMARY_SECTIONS, budget, key
        )

    @classmethod
    def trace_defaults(cls, meta: Mapping[str, Any]) -> tuple[TraceDefault, ...]:
        """On a Claude Code session: its CLI version (the threshold rule is that version's) and
        Claude Code's output limit, 32,000 (``CLAUDE_CODE_MAX_OUTPUT_TOKENS``' default; v2.0.30
        ``/context`` shows the 45.0k buffer = 32,000 + 13,000), so a replay of the session
        compacts where Claude Code did whatever the run's ``--reserved``."""
        source = meta.get("imported_from")
        if not (isinstance(source, Mapping) and source.get("format") == "claude_code"):
            return ()
        out = []
        version = meta.get("version")
        if isinstance(version, str):
            out.append(
                TraceDefault("cli_version", version, "the Claude Code version the session recorded")
            )
        out.append(
            TraceDefault(
                "max_output_tokens",
                CLAUDE_CODE_MAX_OUTPUT,
                "Claude Code's default output limit (CLAUDE_CODE_MAX_OUTPUT_TOKENS)",
            )
        )
        return tuple(out)

    def __init__(self, config: ClaudeCodeConfig | None = None) -> None:
        super().__init__(config)
        self.failures = 0
        self.reactive_tried = False
        #: (fingerprint of the assistant message of the newest anchored call, its tokens)
        self.anchor: tuple[str, int] | None = None
        #: the accepted attempt of the call just made, until its message is in the view
        self.pending: ProviderCall | None = None
        #: tokens the trace does not show (system prompt, tools), by the true counter and the
        #: estimator: the first recorded prompt minus their counts of what the trace shows
        self.hidden_prefix: int | None = None
        self.hidden_estimate: int | None = None
        self.recorded_usage_valid = True
        self.last_recorded_prompt = 0

    # -- thresholds -----------------------------------------------------------------------------
    def effective_window(self, ctx: ReplayContext) -> int:
        cfg = self.config
        window = ctx.window
        if cfg.auto_compact_window is not None:
            window = min(window, cfg.auto_compact_window)
        max_output = ctx.reserved if cfg.max_output_tokens is None else cfg.max_output_tokens
        capped = cfg.cli_version is None or parse_version(cfg.cli_version) >= CAPPED_RESERVE_SINCE
        return window - (min(max_output, cfg.summary_output_reserve) if capped else max_output)

    def threshold(self, ctx: ReplayContext) -> int:
        effective = self.effective_window(ctx)
        threshold = effective - self.config.buffer_tokens
        pct = self.config.autocompact_pct_override
        if pct is not None:
            return min(int(effective * pct / 100), threshold)
        return threshold

    def budget(self, ctx: ReplayContext) -> int:
        return self.threshold(ctx)

    @property
    def breaker_tripped(self) -> bool:
        return self.failures >= self.config.max_consecutive_failures

    # -- the count ------------------------------------------------------------------------------
    def after_call(self, call: ProviderCall, ctx: ReplayContext) -> None:
        """Keep the accepted attempt: its usage anchors the count once the call's message is in."""
        if call.accepted:
            self.pending = call

    def observe_call(self, message: Message, call: ProviderCall, ctx: ReplayContext) -> None:
        """Anchor the count on the call that produced ``message``: its recorded usage while that
        describes the replayed view (neither we nor the recorded agent have compacted: a
        recorded prompt that shrinks means the agent did), else the simulated provider's count
        plus the hidden prefix. The first call with recorded usage reveals the hidden prefix."""
        usage = call.recorded_usage
        # Session files keep a streaming snapshot of output_tokens (often 1 for a long tool
        # call); the final count is at least the estimate of what the call wrote.
        recorded_output = usage.completion_tokens if usage is not None else None
        output = max(recorded_output or 0, ctx.estimator.count_message(message))
        prompt = usage.prompt_tokens if usage is not None else None
        if prompt is not None:
            if self.hidden_prefix is None:
                self.hidden_prefix = max(0, prompt - call.true_tokens)
                self.hidden_estimate = max(0, prompt - call.estimated_tokens)
            if prompt < self.last_recorded_prompt:
                self.recorded_usage_valid = False
            self.last_recorded_prompt = prompt
            if self.recorded_usage_valid:
                self.anchor = (message.fingerprint, prompt + output)
                return
        self.anchor = (message.fingerprint, (self.hidden_prefix or 0) + call.true_tokens + output)

    def context_tokens(self, ctx: ReplayContext) -> int:
        """The count Claude Code compares with the threshold (see the module docstring)."""
        messages = ctx.view.messages
        if self.config.usage_anchored and self.anchor is not None:
            fingerprint, tokens = self.anchor
            for i in range(len(messages) - 1, -1, -1):
                if messages[i].fingerprint == fingerprint:
                    return tokens + sum(rough_memo().many(messages[i + 1 :]))
        return (self.hidden_estimate or 0) + ctx.view.estimated_tokens

    def _observe_new_call(self, ctx: ReplayContext) -> None:
        """The call replayed since the last decision, now that its message is in the view."""
        last = next((m for m in reversed(ctx.view.messages) if m.role == "assistant"), None)
        if last is not None and self.pending is not None:
            self.observe_call(last, self.pending, ctx)
        self.pending = None

    # -- hooks ----------------------------------------------------------------------------------
    def before_call(self, ctx: ReplayContext) -> None:
        self.reactive_tried = False
        self._observe_new_call(ctx)
        if self.config.microcompact:
            cleared = microcompact(
                ctx.view.messages,
                self.config.microcompact_tools,
                self.config.microcompact_keep_recent,
            )
            if not ctx.view.shows(cleared):
                ctx.apply("microcompact", cleared)
        tokens, threshold = self.context_tokens(ctx), self.threshold(ctx)
        active = self.config.enabled and not self.breaker_tripped
        ctx.emit(
            ev.StrategyDecision(
                tokens=tokens,
                threshold=threshold,
                anchored=self.anchor is not None and self.config.usage_anchored,
                compact=active and tokens >= threshold,
            )
        )
        if active and tokens >= threshold:
            self.compact(ctx, "autocompact")

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        if not self.config.reactive_compact or self.reactive_tried or self.breaker_tripped:
            return False
        if not is_overflow_error(str(error)):
            return False
        self.reactive_tried = True
        return self.compact(ctx, "reactive_compact")

    def compact(self, ctx: ReplayContext, layer: str) -> bool:
        """Replace the whole history by the summary; count failures toward the breaker."""
        system, history = split_system(ctx.view.messages)
        if not history:
            return False
        request = ctx.summary_request(
            self.name,
            layer,
            history,
            prompt=transcript(history) + "\n\n[user]: " + COMPACT_PROMPT,
            sections=SUMMARY_SECTIONS,
            max_tokens=self.config.summary_max_tokens,
        )
        try:
            raw = ctx.summarize(request)
        except SummarizerError:
            self.failures += 1
            return False
        self.failures = 0
        # the recorded session's own summary message is kept as it was written
        verbatim = summary_source(raw).get("source") == RECORDED_SOURCE
        text = raw if verbatim else CONTINUATION + format_summary(raw)
        ctx.apply(layer, [*system, Message("user", text)])
        self.recorded_usage_valid = False  # the recorded usage now describes another context
        self.anchor = None
        return True


def microcompact(messages: tuple[Message, ...], tools: tuple[str, ...], keep: int) -> list[Message]:
    """Clear the results of ``tools`` older than the last ``keep`` such results."""
    names = {call.id: call.name for m in messages for call in m.tool_calls}
    eligible = [
        i
        for i, m in enumerate(messages)
        if m.role == "tool" and names.get(m.tool_call_id or "", m.name or "") in tools
    ]
    old = eligible[: max(0, len(eligible) - keep)]
    out = list(messages)
    for i in old:
        if messages[i].content != MICROCOMPACT_PLACEHOLDER:
            out[i] = with_placeholder(messages[i], MICROCOMPACT_PLACEHOLDER)
    return out
