"""``claude_code``: Claude Code's auto-compact (and optional microcompact).

Sources: **secondary only** (REFERENCE.md B marks them [2nd]): deobfuscated-source analyses of
Claude Code's ``services/compact/autoCompact.ts``, ``compact.ts`` and ``prompt.ts``
(zhanghandong "harness-engineering" ch. 9; manavgup shipai; gist sam-saffron-jarvis; ccstatusline
PR #319). There is no official specification, so every rule below may differ from a given
Claude Code release.

Rules reproduced:

- Window: ``effective_window = window - min(max_output_tokens, 20_000)``, where the window may be
  lowered by ``auto_compact_window`` (``CLAUDE_CODE_AUTO_COMPACT_WINDOW``) and
  ``max_output_tokens`` is the model's output limit (None = the run's ``--reserved``).
- Threshold: ``effective_window - 13_000`` (``AUTOCOMPACT_BUFFER_TOKENS``), about 167K on a
  200K window; ``autocompact_pct_override`` (``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``, 0 < p <= 100)
  gives ``floor(effective_window x p / 100)`` and can only lower the threshold. Compaction runs
  when the estimate is >= the threshold; ``enabled`` False is ``DISABLE_AUTO_COMPACT``.
- Estimate: the ``claude_code`` counter, ``chars / 4 x 4 / 3`` (Claude Code adds this estimate
  for messages newer than the last API usage; a replay has no usage, so all are estimated).
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

Knobs (defaults): enabled True, max_output_tokens None, auto_compact_window None,
autocompact_pct_override None, buffer_tokens 13000, summary_output_reserve 20000,
max_consecutive_failures 3, reactive_compact True, microcompact False,
microcompact_keep_recent 5, microcompact_tools (Read, Bash, Grep, Glob, WebSearch, WebFetch, Edit,
Write), summary_max_tokens 20000.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ctxbench.engine.context import ReplayContext
from ctxbench.engine.provider import is_overflow_error
from ctxbench.errors import ProviderOverflowError, SummarizerError
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.layers import split_system, transcript, with_placeholder
from ctxbench.summarizers.base import SummaryRequest
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


def format_summary(text: str) -> str:
    """Strip the ``<analysis>`` scratchpad and a ``<summary>`` wrapper."""
    text = _ANALYSIS.sub("", text)
    text = re.sub(r"</?summary>", "", text)
    return text.strip()


@dataclass(frozen=True)
class ClaudeCodeConfig:
    enabled: bool = field(default=True, metadata={"help": "auto-compact on (DISABLE_AUTO_COMPACT)"})
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
        pct = self.autocompact_pct_override
        if pct is not None and not 0 < pct <= 100:
            raise ValueError(f"autocompact_pct_override must be within (0, 100], not {pct}")
        for name in ("max_output_tokens", "auto_compact_window"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0, not {value}")
        for name in (
            "buffer_tokens",
            "summary_output_reserve",
            "max_consecutive_failures",
            "microcompact_keep_recent",
            "summary_max_tokens",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, not {getattr(self, name)}")


class ClaudeCode(Strategy[ClaudeCodeConfig]):
    name = "claude_code"
    summary = "Claude Code auto-compact: 9-section summary at effective window - 13K (2nd-hand)."
    source = "Claude Code autoCompact.ts via deobfuscated-source analyses (secondary)"
    Config = ClaudeCodeConfig
    default_estimator = "claude_code"

    def __init__(self, config: ClaudeCodeConfig | None = None) -> None:
        super().__init__(config)
        self.failures = 0
        self.reactive_tried = False

    # -- thresholds -----------------------------------------------------------------------------
    def effective_window(self, ctx: ReplayContext) -> int:
        cfg = self.config
        window = ctx.window
        if cfg.auto_compact_window is not None:
            window = min(window, cfg.auto_compact_window)
        max_output = ctx.reserved if cfg.max_output_tokens is None else cfg.max_output_tokens
        return window - min(max_output, cfg.summary_output_reserve)

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

    # -- hooks ----------------------------------------------------------------------------------
    def before_call(self, ctx: ReplayContext) -> None:
        self.reactive_tried = False
        if self.config.microcompact:
            cleared = microcompact(
                ctx.view.messages,
                self.config.microcompact_tools,
                self.config.microcompact_keep_recent,
            )
            if cleared != list(ctx.view.messages):
                ctx.apply("microcompact", cleared)
        if not self.config.enabled or self.breaker_tripped:
            return
        if ctx.view.estimated_tokens >= self.threshold(ctx):
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
        request = SummaryRequest(
            strategy=self.name,
            layer=layer,
            prompt=transcript(history) + "\n\n[user]: " + COMPACT_PROMPT,
            messages=tuple(history),
            sections=SUMMARY_SECTIONS,
            max_tokens=self.config.summary_max_tokens,
            key=ctx.request_key(layer),
        )
        try:
            text = format_summary(ctx.summarize(request))
        except SummarizerError:
            self.failures += 1
            return False
        self.failures = 0
        ctx.apply(layer, [*system, Message("user", CONTINUATION + text)])
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
