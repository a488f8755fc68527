"""``hermes``: Hermes Agent's ``ContextCompressor``.

Source: NousResearch/hermes-agent ``agent/context_compressor.py`` (``ContextCompressor``:
``__init__``, ``_compute_threshold_tokens``, ``_prune_old_tool_results``,
``_find_tail_cut_by_tokens``, ``_generate_summary``, ``_build_static_fallback_summary``,
``compress``, ``_sanitize_tool_pairs``, ``update_from_response``) and the overflow handling of
``agent/conversation_loop.py`` as described in REFERENCE.md A4 and seeds/004. Counting is
Hermes' own estimate by default (``hermes``: ``(len+3)//4 + 10`` per message, the whole
tool-call envelope, replay keys, 1600 per image).

Rules reproduced:

- Threshold: ``threshold_tokens = max(int((ctx - max_tokens) * pct), MINIMUM_CONTEXT_LENGTH)``
  with ``pct = threshold_percent`` (or the longest matching ``model_thresholds`` key), raised to
  at least 0.75 for windows under 512K; when that floor reaches the effective window, 85% of it
  (#14690); then capped by ``threshold_tokens_cap``. ``tail_token_budget = threshold *
  summary_target_ratio`` (clamped to 0.10-0.80); summaries target ``max(2000, min(20% of the
  summarised tokens, min(5% of ctx, 10000)))`` tokens (guidance only: no wire cap).
- Guards: at most ``head + 3 + 1`` messages is an ineffective no-op; automatic compaction is
  blocked while ``ineffective_compression_count >= 2`` or the fallback streak is ``>= 2``; a
  compaction is ineffective when the provider's next reported prompt count is still at or over
  the threshold, and any reading under it resets the count. Before a call, up to
  ``max_compression_attempts`` passes run while over the threshold and making progress.
- Cheap prune (every compaction): identical tool outputs of >= 200 chars are deduplicated by
  md5 anywhere, keeping the newest (``[Duplicate tool output — same content as a more recent
  call]``); outside the protected tail (token budget, floor ``min(protect_last_n, 8)``), tool
  results over 200 chars become one-line summaries (``[terminal] ran `cmd` -> exit 0, N lines
  output``, ``[read_file] read PATH from line N (N chars)``, generic ``[tool] k=v (N chars
  result)``), tool-call arguments over 500 chars get their JSON string leaves cut to 200 chars +
  ``...[truncated]`` (still valid JSON, #11762) and images in tool results become
  ``[screenshot removed to save context]``; if the protected tail exceeds 1.5x the budget, bulky
  tool bodies inside it are demoted too, always keeping the last 3 messages (#61932).
- Head: the system prompt plus ``protect_first_n`` messages, decayed to the system prompt only
  after the first compaction (#11996); the start moves past leading tool results.
- Tail: walk back to a soft ceiling of 1.5x the budget with a minimum tail of
  ``max(3, min(protect_last_n, 8))``; if everything fits, re-walk with the raw budget (#40803);
  never split a tool group; keep the last user message (with the causal-coupling push, #22523)
  and the last assistant reply (#29824) in the tail; optionally the last N user messages; keep
  an actionable user turn out of the merge position; final forward alignment.
- Summary: the middle serialised as ``[TOOL RESULT id]``, ``[ASSISTANT]`` (with ``[Tool calls:
  name(args)]``, args capped at 1500 -> 1200 chars), ``[USER]`` lines, each capped at 6000 chars
  (4000 head + 1500 tail), the whole at 160,000 chars (45% head / 55% tail around an omitted
  middle marker); ``MEDIA:`` directives and ``<think>`` blocks removed; the structured template
  (``## Historical Task Snapshot`` ... ``## Critical Context``), the iterative-update prompt when
  a previous summary exists, the auto-derived focus topic of the last 3 user turns; the task
  snapshot is then overwritten with the newest real user turn. It goes in as ``SUMMARY_PREFIX``
  (reference only) + body + the END marker, with a role that avoids consecutive same roles
  (``user`` after assistant/tool or a system-only head or when no user message survives), and
  is merged into the first tail message between ``[PRIOR CONTEXT ...]`` / ``[END OF PRIOR
  CONTEXT ...]`` when both roles collide. The system prompt gets the compaction note.
- Failure: a deterministic fallback summary (user asks, tool actions, up to 12 path mentions,
  error lines, the last 8 dropped turns; <= 8,000 chars), or no change when
  ``abort_on_summary_failure`` or the failure was access/quota (401/402/403) or network
  (summarizer error kind ``auth``, ``connection`` or ``network``, #29559).
- After assembly: tool results whose call is gone are dropped and orphan calls stripped (an
  emptied assistant says ``(tool call removed)``); images before the newest image-bearing user
  message become ``[Attached image — stripped after compression]``.
- Overflow: on a context-length error, compress again (not blocked by the guards), up to
  ``max_compression_attempts`` per call; retry only if the message count dropped or the estimate
  fell below 95% of the original (#62605, PR #50726).
- Proactive prune (``proactive_prune_tokens`` > 0): the deterministic prune alone, protecting the
  last ``protect_last_n`` messages, committed only when it reclaims
  ``proactive_prune_min_reclaim_tokens``.

Hermes works on native tool calls: text-ReAct ``Observation:`` messages are user messages to it
(never pruned, and counted as user turns). Left out, and why: the 600 s summary-failure cooldown and its timeout ladder (no clock in a
replay; repeated failures are still stopped by the fallback streak), the fallback from an
auxiliary summary model to the main model (one summarizer per run), secret redaction and the
user-provenance check of summaries (the redactor is a separate module; the check would reject
offline summaries), the temporal-anchoring date (no clock: Hermes omits the rule when the date
cannot be resolved), blank platform-echo removal, session-store markers and the context-probe
step-down tiers (secondary sources only). ``MINIMUM_CONTEXT_LENGTH`` is 64,000 per secondary
references to ``agent/model_metadata.py``; it is the ``minimum_context_length`` knob.
``max_tokens`` (the output reservation subtracted from the window, #43547) defaults to the
run's ``--reserved``; Hermes' own default (None) means no reservation, which is ``0`` here.

Knobs (defaults): context_length None (the run window), max_tokens None (the run's reserved),
threshold_percent 0.50, protect_first_n 3, protect_last_n 20, summary_target_ratio 0.20,
abort_on_summary_failure False, model "", model_thresholds {}, threshold_tokens_cap None,
proactive_prune_tokens 0, proactive_prune_min_result_chars 8000,
proactive_prune_min_reclaim_tokens 4096, min_tail_user_messages 1, max_compression_attempts 3,
minimum_context_length 64000.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ctxbench.counting.base import TokenCounter
from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext
from ctxbench.errors import ProviderOverflowError, SummarizerError
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.layers import safe_start_forward
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import Message, Part, ToolCall

MINIMUM_CONTEXT_LENGTH = 64_000
MIN_CTX_TRIGGER_RATIO = 0.85
SMALL_CTX_WINDOW_LIMIT = 512_000
SMALL_CTX_THRESHOLD_PERCENT = 0.75
MAX_TAIL_MESSAGE_FLOOR = 8
PRESSURE_KEEP_RECENT_MESSAGES = 3
MIN_SUMMARY_TOKENS = 2000
SUMMARY_RATIO = 0.20
SUMMARY_TOKENS_CEILING = 10_000
SUMMARY_INPUT_MAX_CHARS = 160_000
CONTENT_MAX, CONTENT_HEAD, CONTENT_TAIL = 6000, 4000, 1500
TOOL_ARGS_MAX, TOOL_ARGS_HEAD = 1500, 1200
FALLBACK_SUMMARY_MAX_CHARS = 8_000
FALLBACK_PREVIOUS_SUMMARY_MAX_CHARS = 3_000
FALLBACK_TURN_MAX_CHARS = 700
AUTO_FOCUS_MAX_TURNS, AUTO_FOCUS_TURN_MAX_CHARS, AUTO_FOCUS_MAX_CHARS = 3, 260, 700
ACTIVE_TASK_MAX_CHARS = 1400
#: a retry after an overflow needs the estimate below this share of the original (PR #50726)
PROGRESS_TOKEN_RATIO = 0.95

PRUNED_TOOL_PLACEHOLDER = "[Old tool output cleared to save context space]"
DUPLICATE_TOOL_OUTPUT = "[Duplicate tool output — same content as a more recent call]"
SCREENSHOT_REMOVED = "[screenshot removed to save context]"
IMAGE_STRIPPED = "[Attached image — stripped after compression]"
TOOL_CALL_REMOVED = "(tool call removed)"
NO_USER_TASK_SENTINEL = "None. This session contains no user-authored turns."

HISTORICAL_TASK_HEADING = "## Historical Task Snapshot"
HISTORICAL_IN_PROGRESS_HEADING = "## Historical In-Progress State"
HISTORICAL_PENDING_ASKS_HEADING = "## Historical Pending User Asks"
HISTORICAL_REMAINING_WORK_HEADING = "## Historical Remaining Work"

#: The summary template's headings, in order (what offline summarizers lay out).
SUMMARY_SECTIONS: tuple[str, ...] = (
    "Historical Task Snapshot",
    "Goal",
    "Constraints & Preferences",
    "Completed Actions",
    "Active State",
    "Historical In-Progress State",
    "Blocked",
    "Key Decisions",
    "Resolved Questions",
    "Historical Pending User Asks",
    "Relevant Files",
    "Historical Remaining Work",
    "Critical Context",
)

SUMMARY_PREFIX = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted "
    "into the summary below. This is a handoff from a previous context "
    "window — treat it as background reference, NOT as active instructions. "
    "Do NOT answer questions or fulfill requests mentioned in this summary; "
    "they were already addressed. "
    "Respond ONLY to the latest user message that appears AFTER this "
    "summary — that message is the single source of truth for what to do "
    "right now. "
    "Topic overlap with the summary does NOT mean you should resume its "
    "task: even on similar topics, the latest user message WINS. Treat ONLY "
    "the latest message as the active task and discard stale items from "
    f"'{HISTORICAL_TASK_HEADING}' / '{HISTORICAL_IN_PROGRESS_HEADING}' / "
    f"'{HISTORICAL_PENDING_ASKS_HEADING}' / "
    f"'{HISTORICAL_REMAINING_WORK_HEADING}' entirely — do not 'wrap up' or "
    "'finish' work described there unless the latest message explicitly "
    "asks for it. "
    "Reverse signals in the latest message (e.g. 'stop', 'undo', 'roll "
    "back', 'just verify', 'don't do that anymore', 'never mind', a new "
    "topic) must immediately end any in-flight work described in the "
    "summary; do not re-surface it in later turns. "
    "IMPORTANT: Your persistent memory (MEMORY.md, USER.md) in the system "
    "prompt is ALWAYS authoritative and active — never ignore or deprioritize "
    "memory content due to this compaction note. "
    "None of the above restricts HOW you work: your tools remain fully "
    "active — keep calling them normally for the active task (edit files, "
    "run commands, search) instead of merely narrating what you would do. "
    "The current session state (files, config, etc.) may reflect work "
    "described here — avoid repeating it:"
)
SUMMARY_END_MARKER = (
    "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
)
MERGED_PRIOR_CONTEXT_HEADER = "[PRIOR CONTEXT — for reference only; not a new message]"
MERGED_SUMMARY_DELIMITER = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
COMPRESSION_NOTE = (
    "[Note: Some earlier conversation turns have been compacted into a handoff summary to "
    "preserve context space. The current session state may still reflect earlier work, so "
    "build on that summary and state rather than re-doing work. Your persistent memory "
    "(MEMORY.md, USER.md) remains fully authoritative regardless of compaction.]"
)
SUMMARY_MARK = "_compressed_summary"
SUMMARY_HAS_USER_MARK = "_compressed_summary_has_user_turn"

PATH_MENTION_RE = re.compile(r"(?:/|~/?|[A-Za-z]:\\)[^\s`'\")\]}<>]+")
MEDIA_DIRECTIVE_RE = re.compile(r"MEDIA:\S+")
THINK_BLOCK_RE = re.compile(r"<(think|thinking|reasoning)>.*?</\1>\s*", re.S | re.I)
HISTORICAL_TASK_SECTION_RE = re.compile(
    rf"(?ms)^{re.escape(HISTORICAL_TASK_HEADING)}\s*\n.*?(?=^## |\Z)"
)
ERROR_LINE_RE = re.compile(r"\b(error|failed|exception|traceback|timeout|timed out|fatal)\b", re.I)
#: Lower-cased substrings of a provider error that Hermes treats as a context overflow.
CONTEXT_ERROR_PHRASES = (
    "context length",
    "context size",
    "maximum context",
    "token limit",
    "too many tokens",
    "reduce the length",
    "exceeds the limit",
    "context window",
    "request entity too large",
    "payload too large",
    "prompt is too long",
    "prompt exceeds max length",
)
#: Summarizer failures after which Hermes aborts instead of inserting a fallback summary.
TERMINAL_FAILURE_KINDS = ("auth", "quota", "connection", "network")
_ACCESS_FAILURE_RE = re.compile(r"\b(401|402|403)\b|insufficient_quota|quota exceeded|no api key")
IMAGE_PART_TYPES = frozenset({"image_url", "input_image", "image"})


@dataclass(frozen=True)
class HermesConfig:
    context_length: int | None = field(
        default=None, metadata={"help": "model window (None = the run window)"}
    )
    max_tokens: int | None = field(
        default=None,
        metadata={"help": "output reservation subtracted from the window (None = --reserved)"},
    )
    threshold_percent: float = field(
        default=0.50, metadata={"help": "compress at this share of the effective window"}
    )
    protect_first_n: int = field(
        default=3, metadata={"help": "messages after the system prompt kept (first compaction)"}
    )
    protect_last_n: int = field(default=20, metadata={"help": "tail message floor (capped at 8)"})
    summary_target_ratio: float = field(
        default=0.20, metadata={"help": "tail budget as a share of the threshold (0.10-0.80)"}
    )
    abort_on_summary_failure: bool = field(
        default=False, metadata={"help": "no change (instead of a fallback) when summarising fails"}
    )
    model: str = field(default="", metadata={"help": "model name matched by model_thresholds"})
    model_thresholds: dict[str, float] = field(
        default_factory=dict,
        metadata={"help": "threshold_percent by model substring (longest key wins)"},
    )
    threshold_tokens_cap: int | None = field(
        default=None, metadata={"help": "absolute cap on the threshold (tokens)"}
    )
    proactive_prune_tokens: int = field(
        default=0, metadata={"help": "prune-only pass from this many tokens (0 = off)"}
    )
    proactive_prune_min_result_chars: int = field(
        default=8000, metadata={"help": "proactive prune: results longer than this"}
    )
    proactive_prune_min_reclaim_tokens: int = field(
        default=4096, metadata={"help": "proactive prune commits only if it saves this much"}
    )
    min_tail_user_messages: int = field(
        default=1, metadata={"help": "user messages always kept in the tail"}
    )
    max_compression_attempts: int = field(
        default=3, metadata={"help": "compression passes per call (proactive and on overflow)"}
    )
    minimum_context_length: int = field(
        default=MINIMUM_CONTEXT_LENGTH, metadata={"help": "threshold floor (model_metadata.py)"}
    )

    def __post_init__(self) -> None:
        if not 0 < self.threshold_percent <= 1:
            raise ValueError(
                f"threshold_percent must be within (0, 1], not {self.threshold_percent}"
            )
        for name in (
            "protect_first_n",
            "protect_last_n",
            "proactive_prune_tokens",
            "proactive_prune_min_result_chars",
            "proactive_prune_min_reclaim_tokens",
            "min_tail_user_messages",
            "minimum_context_length",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, not {getattr(self, name)}")
        if self.max_compression_attempts < 1:
            raise ValueError(
                f"max_compression_attempts must be >= 1, not {self.max_compression_attempts}"
            )
        for name in ("context_length", "threshold_tokens_cap"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, not {value}")
        if self.max_tokens is not None and self.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, not {self.max_tokens}")
        thresholds: dict[str, float] = {}
        for key, value in dict(self.model_thresholds).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
                raise ValueError(f"model_thresholds[{key!r}] must be a number in (0, 1]")
            thresholds[str(key)] = float(value)
        object.__setattr__(self, "model_thresholds", thresholds)


@dataclass(frozen=True)
class Limits:
    """The token limits Hermes derives from the window (``__init__`` / ``update_model``)."""

    context_length: int
    max_tokens: int
    threshold_percent: float
    threshold_tokens: int
    tail_token_budget: int
    max_summary_tokens: int


def resolve_model_threshold(model: str, overrides: dict[str, float], default: float) -> float:
    """The threshold of the longest ``overrides`` key contained in ``model``."""
    best = max((k for k in overrides if k and k in model), key=len, default="")
    return overrides[best] if best else default


def compute_limits(config: HermesConfig, window: int, reserved: int) -> Limits:
    """Threshold, tail budget and summary ceiling for a window, as ``ContextCompressor`` does."""
    ctx_len = config.context_length or window
    max_tokens = reserved if config.max_tokens is None else config.max_tokens
    pct = resolve_model_threshold(config.model, config.model_thresholds, config.threshold_percent)
    if ctx_len < SMALL_CTX_WINDOW_LIMIT:
        pct = max(pct, SMALL_CTX_THRESHOLD_PERCENT)
    effective = ctx_len - max_tokens
    if effective <= 0:
        effective = ctx_len
    floored = max(int(effective * pct), config.minimum_context_length)
    if floored >= effective:
        threshold = max(1, min(int(effective * MIN_CTX_TRIGGER_RATIO), effective - 1))
    else:
        threshold = floored
    if config.threshold_tokens_cap is not None:
        threshold = min(threshold, min(config.threshold_tokens_cap, ctx_len))
    ratio = max(0.10, min(config.summary_target_ratio, 0.80))
    return Limits(
        context_length=ctx_len,
        max_tokens=max_tokens,
        threshold_percent=pct,
        threshold_tokens=threshold,
        tail_token_budget=int(threshold * ratio),
        max_summary_tokens=min(int(ctx_len * 0.05), SUMMARY_TOKENS_CEILING),
    )


# -- message helpers --------------------------------------------------------------------------------


def _is_image(part: Part) -> bool:
    return part.type in IMAGE_PART_TYPES


def _add_text(message: Message, text: str, *, prepend: bool = False) -> Message:
    if message.parts is None:
        return replace(
            message, content=text + message.content if prepend else message.content + text
        )
    block = Part("text", text)
    parts = (block, *message.parts) if prepend else (*message.parts, block)
    return replace(message, parts=parts, content="\n".join(p.text for p in parts if p.is_text))


def _replace_images(message: Message, placeholder: str) -> Message | None:
    """``message`` with each image part replaced by ``placeholder`` text (None: no images)."""
    if not message.parts or not any(_is_image(p) for p in message.parts):
        return None
    parts = tuple(Part("text", placeholder) if _is_image(p) else p for p in message.parts)
    return replace(message, parts=parts, content="\n".join(p.text for p in parts if p.is_text))


def is_summary_message(message: Message) -> bool:
    """A compaction handoff: the metadata flag, or the summary prefix (standalone or merged)."""
    if message.meta.get(SUMMARY_MARK):
        return True
    text = message.content.lstrip()
    if MERGED_SUMMARY_DELIMITER in text:
        return text.split(MERGED_SUMMARY_DELIMITER, 1)[1].lstrip().startswith(SUMMARY_PREFIX)
    return text.startswith(SUMMARY_PREFIX)


def strip_handoff(message: Message) -> Message | None:
    """Drop a stale handoff; a merged one gives back the tail content it wrapped."""
    if not is_summary_message(message):
        return message
    meta = {k: v for k, v in message.meta.items() if k not in (SUMMARY_MARK, SUMMARY_HAS_USER_MARK)}
    content = message.content
    if MERGED_SUMMARY_DELIMITER in content:
        prior = content.split(MERGED_SUMMARY_DELIMITER, 1)[0].strip()
        if prior.startswith(MERGED_PRIOR_CONTEXT_HEADER):
            prior = prior[len(MERGED_PRIOR_CONTEXT_HEADER) :].lstrip()
        if prior:
            return replace(message.with_text(prior), meta=meta)
    elif SUMMARY_END_MARKER in content:
        rest = content.split(SUMMARY_END_MARKER, 1)[1].lstrip()
        if rest:
            return replace(message.with_text(rest), meta=meta)
    return None


def summary_body(text: str) -> str:
    """A summary without the prefix, the merged-tail wrapper and the END marker."""
    text = text.strip()
    if MERGED_SUMMARY_DELIMITER in text:
        text = text.split(MERGED_SUMMARY_DELIMITER, 1)[1].strip()
    if text.startswith(SUMMARY_PREFIX):
        text = text[len(SUMMARY_PREFIX) :].lstrip()
    marker = text.find(SUMMARY_END_MARKER)
    return text[:marker].rstrip() if marker >= 0 else text


def with_summary_prefix(body: str) -> str:
    body = summary_body(body)
    return f"{SUMMARY_PREFIX}\n{body}" if body else SUMMARY_PREFIX


def _is_actionable_user(message: Message) -> bool:
    """A real user turn: not a compaction handoff, not blank."""
    if message.role != "user" or is_summary_message(message):
        return False
    return bool(message.content.strip() or message.media_parts)


def _json_args(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments) if arguments else {}
    except (ValueError, TypeError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


# -- the cheap prune -----------------------------------------------------------------------------------


def _text(args: dict[str, Any], key: str, default: str = "") -> str:
    value = args.get(key, default)
    return value if isinstance(value, str) else (str(value) if value is not None else default)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


EXIT_CODE_RE = re.compile(r'"exit_code"\s*:\s*(-?\d+)')
TOTAL_COUNT_RE = re.compile(r'"total_count"\s*:\s*(\d+)')


def _regex_group(pattern: re.Pattern[str], text: str, default: str = "?") -> str:
    found = pattern.search(text)
    return found.group(1) if found else default


def _browser(tool: str, args: dict[str, Any], content: str) -> str:
    url, ref = args.get("url", ""), args.get("ref", "")
    detail = f" {url}" if url else (f" ref={ref}" if ref else "")
    return f"[{tool}]{detail} ({len(content):,} chars)"


def _web_extract(tool: str, args: dict[str, Any], content: str) -> str:
    urls = args.get("urls", [])
    first: Any = urls[0] if isinstance(urls, list) and urls else "?"
    if isinstance(first, dict):
        first = first.get("url") or first.get("href") or "?"
    elif not isinstance(first, str):
        first = "?"
    if isinstance(urls, list) and len(urls) > 1:
        first += f" (+{len(urls) - 1} more)"
    return f"[web_extract] {first} ({len(content):,} chars)"


def _lines(content: str) -> int:
    return content.count("\n") + 1 if content.strip() else 0


#: ``_summarize_tool_result``: one-line descriptions of Hermes' own tools.
TOOL_SUMMARIES: dict[str, Callable[[str, dict[str, Any], str], str]] = {
    "terminal": lambda t, a, c: (
        f"[terminal] ran `{_clip(_text(a, 'command'), 80)}` -> exit "
        f"{_regex_group(EXIT_CODE_RE, c)}, {_lines(c)} lines output"
    ),
    "read_file": lambda t, a, c: (
        f"[read_file] read {a.get('path', '?')} from line {a.get('offset', 1)} ({len(c):,} chars)"
    ),
    "write_file": lambda t, a, c: (
        f"[write_file] wrote to {a.get('path', '?')} "
        f"({_text(a, 'content').count(chr(10)) + 1 if a.get('content') else '?'} lines)"
    ),
    "search_files": lambda t, a, c: (
        f"[search_files] {a.get('target', 'content')} search for '{a.get('pattern', '?')}' in "
        f"{a.get('path', '.')} -> {_regex_group(TOTAL_COUNT_RE, c)} matches"
    ),
    "patch": lambda t, a, c: (
        f"[patch] {a.get('mode', 'replace')} in {a.get('path', '?')} ({len(c):,} chars result)"
    ),
    "browser_navigate": _browser,
    "browser_click": _browser,
    "browser_snapshot": _browser,
    "browser_type": _browser,
    "browser_scroll": _browser,
    "browser_vision": _browser,
    "web_search": lambda t, a, c: (
        f"[web_search] query='{a.get('query', '?')}' ({len(c):,} chars result)"
    ),
    "web_extract": _web_extract,
    "delegate_task": lambda t, a, c: (
        f"[delegate_task] '{_clip(_text(a, 'goal'), 60)}' ({len(c):,} chars result)"
    ),
    "execute_code": lambda t, a, c: (
        f"[execute_code] `{_text(a, 'code')[:60].replace(chr(10), ' ')}"
        f"{'...' if len(_text(a, 'code')) > 60 else ''}` ({_lines(c)} lines output)"
    ),
    "skill_view": lambda t, a, c: f"[{t}] name={a.get('name', '?')} ({len(c):,} chars)",
    "skills_list": lambda t, a, c: f"[{t}] name={a.get('name', '?')} ({len(c):,} chars)",
    "skill_manage": lambda t, a, c: f"[{t}] name={a.get('name', '?')} ({len(c):,} chars)",
    "vision_analyze": lambda t, a, c: (
        f"[vision_analyze] '{_text(a, 'question')[:50]}' ({len(c):,} chars)"
    ),
    "memory": lambda t, a, c: f"[memory] {a.get('action', '?')} on {a.get('target', '?')}",
    "todo": lambda t, a, c: "[todo] updated task list",
    "clarify": lambda t, a, c: "[clarify] asked user a question",
    "text_to_speech": lambda t, a, c: f"[text_to_speech] generated audio ({len(c):,} chars)",
    "cronjob": lambda t, a, c: f"[cronjob] {a.get('action', '?')}",
    "process": lambda t, a, c: (
        f"[process] {a.get('action', '?')} session={a.get('session_id', '?')}"
    ),
}


def summarize_tool_result(tool: str, arguments: str, content: str) -> str:
    """An informative one-line description of a tool call and its result; never raises."""
    args = _json_args(arguments)
    try:
        describe = TOOL_SUMMARIES.get(tool)
        if describe is not None:
            return describe(tool, args, content)
        first = "".join(f" {k}={str(v)[:40]}" for k, v in list(args.items())[:2])
        return f"[{tool}]{first} ({len(content):,} chars result)"
    except Exception:  # a malformed historical call must not stop compaction
        return f"[{tool}] ({len(content):,} chars result)"


def shrink_json_arguments(arguments: str, head_chars: int = 200) -> str:
    """Cut long string leaves of a JSON arguments blob, keeping it valid JSON (#11762)."""

    def shrink(value: Any) -> Any:
        if isinstance(value, str):
            return value[:head_chars] + "...[truncated]" if len(value) > head_chars else value
        if isinstance(value, dict):
            return {k: shrink(v) for k, v in value.items()}
        if isinstance(value, list):
            return [shrink(v) for v in value]
        return value

    try:
        return json.dumps(shrink(json.loads(arguments)), ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):  # not JSON, or nested too deep to walk
        return arguments


def _protected_boundary(
    messages: Sequence[Message], count: int, tokens: int | None, counter: TokenCounter
) -> int:
    """First index of the protected tail: a token budget with a capped message floor."""
    if tokens is None or tokens <= 0:
        return len(messages) - count
    min_protect = min(count, len(messages), MAX_TAIL_MESSAGE_FLOOR)
    accumulated = 0
    boundary = len(messages)
    for i in range(len(messages) - 1, -1, -1):
        cost = counter.count_message(messages[i])
        if accumulated + cost > tokens and (len(messages) - i) >= min_protect:
            boundary = i
            break
        accumulated += cost
        boundary = i
    return len(messages) - max(len(messages) - boundary, min_protect)


def prune_old_tool_results(
    messages: Sequence[Message],
    counter: TokenCounter,
    *,
    protect_tail_count: int,
    protect_tail_tokens: int | None,
    min_prune_chars: int = 200,
) -> tuple[list[Message], int]:
    """``_prune_old_tool_results``: (messages, how many were changed)."""
    result = list(messages)
    if not result:
        return result, 0
    calls: dict[str, ToolCall] = {
        c.id: c for m in result if m.role == "assistant" for c in m.tool_calls
    }
    prune_boundary = _protected_boundary(result, protect_tail_count, protect_tail_tokens, counter)
    pruned = 0

    # pass 1: identical outputs anywhere, newest kept (lossless, so the tail is not exempt)
    seen: set[str] = set()
    for i in range(len(result) - 1, -1, -1):
        msg = result[i]
        if msg.role != "tool" or msg.parts is not None or len(msg.content) < 200:
            continue
        digest = hashlib.md5(msg.content.encode("utf-8", "replace")).hexdigest()[:12]
        if digest in seen:
            result[i] = msg.with_text(DUPLICATE_TOOL_OUTPUT)
            pruned += 1
        else:
            seen.add(digest)

    def demote(i: int) -> bool:
        nonlocal pruned
        msg = result[i]
        if msg.role != "tool":
            return False
        if msg.parts is not None:
            stripped = _replace_images(msg, SCREENSHOT_REMOVED)
            if stripped is None:
                return False
            result[i] = stripped
            pruned += 1
            return True
        content = msg.content
        if (
            not content
            or content == PRUNED_TOOL_PLACEHOLDER
            or content.startswith(("[Duplicate tool output", "[screenshot removed"))
            or (content.startswith("[") and " chars)" in content and len(content) < 400)
            or len(content) <= min_prune_chars
        ):
            return False
        call = calls.get(msg.tool_call_id or "")
        name, args = (call.name, call.arguments) if call else ("unknown", "")
        result[i] = msg.with_text(summarize_tool_result(name, args, content))
        pruned += 1
        return True

    def shrink_args(i: int) -> bool:
        nonlocal pruned
        msg = result[i]
        if msg.role != "assistant" or not msg.tool_calls:
            return False
        new_calls = tuple(
            replace(c, arguments=shrink_json_arguments(c.arguments))
            if len(c.arguments) > 500
            else c
            for c in msg.tool_calls
        )
        if new_calls == msg.tool_calls:
            return False
        result[i] = replace(msg, tool_calls=new_calls)
        return True

    for i in range(max(0, prune_boundary)):  # pass 2: one-line summaries
        demote(i)
    for i in range(max(0, prune_boundary)):  # pass 3: JSON-safe argument shrinking
        shrink_args(i)

    # pass 4: pressure inside the protected tail (#61932)
    if protect_tail_tokens:
        soft_ceiling = int(protect_tail_tokens * 1.5)
        start = max(0, prune_boundary)
        demote_end = len(result) - min(PRESSURE_KEEP_RECENT_MESSAGES, len(result))

        def protected_tokens() -> int:
            return sum(counter.count_message(m) for m in result[start:])

        if demote_end > prune_boundary and protected_tokens() > soft_ceiling:
            for i in range(start, demote_end):
                demote(i)
                shrink_args(i)
                if protected_tokens() <= soft_ceiling:
                    break
            if protected_tokens() > soft_ceiling:
                last_tool = next(
                    (i for i in range(len(result) - 1, -1, -1) if result[i].role == "tool"), None
                )
                for i in range(start, len(result)):
                    if i != last_tool:
                        demote(i) if result[i].role == "tool" else shrink_args(i)
                if (
                    last_tool is not None
                    and last_tool >= prune_boundary
                    and protected_tokens() > soft_ceiling
                ):
                    demote(last_tool)
    return result, pruned


# -- boundaries --------------------------------------------------------------------------------------


def align_backward(messages: Sequence[Message], idx: int) -> int:
    """``_align_boundary_backward``: a cut right after a tool group moves before its assistant."""
    if idx <= 0 or idx >= len(messages):
        return idx
    check = idx - 1
    while check >= 0 and messages[check].role == "tool":
        check -= 1
    if check >= 0 and messages[check].role == "assistant" and messages[check].tool_calls:
        return check
    return idx


def _last_user_index(messages: Sequence[Message], head_end: int) -> int:
    for i in range(len(messages) - 1, head_end - 1, -1):
        if _is_actionable_user(messages[i]):
            return i
    return -1


def _last_assistant_index(messages: Sequence[Message], head_end: int) -> int:
    last_any = -1
    for i in range(len(messages) - 1, head_end - 1, -1):
        msg = messages[i]
        if msg.role != "assistant" or is_summary_message(msg):
            continue
        if last_any < 0:
            last_any = i
        if msg.content.strip():
            return i
    return last_any


def _turn_pair_end(messages: Sequence[Message], user_idx: int) -> int:
    idx = user_idx + 1
    if idx >= len(messages) or messages[idx].role != "assistant":
        return idx
    idx += 1
    while idx < len(messages) and messages[idx].role == "tool":
        idx += 1
    return idx


def find_tail_cut(
    messages: Sequence[Message],
    head_end: int,
    budget: int,
    counter: TokenCounter,
    *,
    protect_last_n: int,
    min_tail_user_messages: int = 1,
) -> int:
    """``_find_tail_cut_by_tokens``: the index where the protected tail starts."""
    n = len(messages)
    available = max(0, n - head_end - 1)
    floor = max(3, min(protect_last_n, MAX_TAIL_MESSAGE_FLOOR))
    min_tail = min(floor, max(3, available - 2), available) if available > 1 else 0
    soft_ceiling = int(budget * 1.5)
    accumulated = 0
    cut = n
    for i in range(n - 1, head_end - 1, -1):
        cost = counter.count_message(messages[i])
        if accumulated + cost > soft_ceiling and (n - i) >= min_tail:
            break
        accumulated += cost
        cut = i
    if cut <= head_end and 0 < accumulated <= soft_ceiling:
        raw = 0
        for j in range(n - 1, head_end - 1, -1):
            cost = counter.count_message(messages[j])
            if raw + cost > budget and (n - j) >= min_tail:
                cut = j
                break
            raw += cost
            cut = j
    fallback = n - min_tail
    cut = min(cut, fallback)
    if cut <= head_end:
        cut = max(fallback, head_end + 1)
    cut = align_backward(messages, cut)

    # the last user message stays in the tail (#10896), with the causal-coupling push (#22523)
    last_user = _last_user_index(messages, head_end)
    if 0 <= last_user < cut:
        adjusted = max(last_user, head_end + 1)
        cut = (
            max(_turn_pair_end(messages, last_user), head_end + 1)
            if adjusted > last_user
            else adjusted
        )
    # the last assistant reply stays in the tail (#29824)
    last_assistant = _last_assistant_index(messages, head_end)
    if 0 <= last_assistant < cut:
        cut = max(align_backward(messages, last_assistant), head_end + 1)
    if min_tail_user_messages > 1:
        users = [i for i in range(n - 1, head_end - 1, -1) if _is_actionable_user(messages[i])]
        if users:
            target = users[min(min_tail_user_messages, len(users)) - 1]
            if target < cut:
                cut = max(target, head_end + 1)
    return safe_start_forward(messages, max(cut, head_end + 1))


def sanitize_tool_pairs(messages: Sequence[Message]) -> list[Message]:
    """``_sanitize_tool_pairs``: drop results whose call is gone; strip calls whose result is
    gone (an emptied assistant message says ``(tool call removed)``). No stub results."""
    calls = {c.id for m in messages if m.role == "assistant" for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if m.role == "tool" and m.tool_call_id}
    out: list[Message] = []
    for msg in messages:
        if msg.role == "tool" and msg.tool_call_id not in calls:
            continue
        if msg.role == "assistant" and any(c.id not in results for c in msg.tool_calls):
            kept = tuple(c for c in msg.tool_calls if c.id in results)
            msg = replace(msg, tool_calls=kept)
            if not kept and not msg.content.strip():
                msg = msg.with_text(TOOL_CALL_REMOVED)
        out.append(msg)
    return out


def strip_historical_media(messages: Sequence[Message]) -> list[Message]:
    """Images before the newest image-bearing user message become a placeholder (kilocode#9434)."""
    anchor = next(
        (
            i
            for i in range(len(messages) - 1, -1, -1)
            if messages[i].role == "user" and any(_is_image(p) for p in messages[i].parts or ())
        ),
        -1,
    )
    if anchor <= 0:
        return list(messages)
    out = list(messages)
    for i in range(anchor):
        stripped = _replace_images(out[i], IMAGE_STRIPPED)
        if stripped is not None:
            out[i] = stripped
    return out


# -- the summary -------------------------------------------------------------------------------------


def _cap(text: str) -> str:
    if len(text) > CONTENT_MAX:
        return text[:CONTENT_HEAD] + "\n...[truncated]...\n" + text[-CONTENT_TAIL:]
    return text


def _message_text(message: Message) -> str:
    if message.parts is None:
        return message.content
    pieces = []
    for part in message.parts:
        if part.is_text:
            pieces.append(part.text)
        elif _is_image(part):
            url = part.data.get("image_url", part.data.get("url", ""))
            url = url.get("url", "") if isinstance(url, dict) else url
            is_web = isinstance(url, str) and url.startswith(("http://", "https://"))
            pieces.append(f"[image: {url}]" if is_web else "[image]")
        else:
            pieces.append(f"[{part.type or 'attachment'}]")
    return "\n".join(pieces)


def serialize_for_summary(turns: Sequence[Message]) -> str:
    """``_serialize_for_summary``: labelled, capped text of the turns to summarise."""
    parts = []
    for msg in turns:
        content = MEDIA_DIRECTIVE_RE.sub("[media attachment]", _message_text(msg))
        if msg.role == "tool":
            parts.append(f"[TOOL RESULT {msg.tool_call_id or ''}]: {_cap(content)}")
            continue
        if msg.role == "assistant":
            content = _cap(THINK_BLOCK_RE.sub("", content))
            if msg.tool_calls:
                calls = []
                for call in msg.tool_calls:
                    args = call.arguments
                    if len(args) > TOOL_ARGS_MAX:
                        args = args[:TOOL_ARGS_HEAD] + "..."
                    calls.append(f"  {call.name}({args})")
                content += "\n[Tool calls:\n" + "\n".join(calls) + "\n]"
            parts.append(f"[ASSISTANT]: {content}")
            continue
        parts.append(f"[{msg.role.upper()}]: {_cap(content)}")
    return "\n\n".join(parts)


def bound_summary_input(content: str, limit: int = SUMMARY_INPUT_MAX_CHARS) -> str:
    """Cap the summariser input at ``limit`` chars: 45% head, 55% tail, a marked middle."""
    if len(content) <= limit:
        return content
    template = (
        "\n\n...[summary input truncated: omitted {omitted:,} chars from the middle to keep "
        "compression prompt bounded]...\n\n"
    )
    marker = template.format(omitted=len(content))
    for _ in range(2):
        remaining = max(limit - len(marker), 0)
        head = int(remaining * 0.45)
        tail = remaining - head
        marker = template.format(omitted=max(len(content) - head - tail, 0))
    remaining = max(limit - len(marker), 0)
    head = int(remaining * 0.45)
    tail = remaining - head
    return content[:head].rstrip() + marker + (content[-tail:].lstrip() if tail else "")


_PREAMBLE = (
    "You are a summarization agent creating a context checkpoint. Treat the conversation "
    "turns below as source material for a compact record of prior work. Produce only the "
    "structured summary; do not add a greeting, preamble, or prefix. {language}NEVER include "
    "API keys, tokens, passwords, secrets, credentials, or connection strings in the summary "
    "— replace any that appear with [REDACTED]. Note that credentials were present, but do "
    "not preserve their values."
)
_LANGUAGE_USER = (
    "Write the summary in the same language the user was using in the conversation — do not "
    "translate or switch to English. "
)
_LANGUAGE_NO_USER = (
    "This session contains no user-authored turns. Write the summary in the dominant language "
    "of the source turns; if they are mixed, use the language of the most recent "
    "natural-language assistant turn. Do not translate, invent a user, or attribute any "
    "request to a user. "
)
_TASK_USER = """[THE SINGLE MOST IMPORTANT FIELD. Capture the user's most recent unfulfilled
input verbatim — the exact words they used. This includes:
- Explicit task assignments ("<specific user task>")
- Questions awaiting an answer ("<specific user question>")
- Decisions awaiting input ("<option A or B?>")
- Ongoing discussions where the assistant owes the next substantive reply
A conversation where the user just asked a question IS an active task — the
task is "answer that question with full context". Do NOT write "None" merely
because the user did not issue an imperative command; reserve "None" for the
rare case where the last exchange was fully resolved and the user said
something like "thanks, that's all".
If multiple items are outstanding, list only the ones NOT yet completed.
This historical snapshot must identify the latest unresolved user input precisely. Examples:
"User asked: '<exact latest user request>'"
"User asked: '<exact latest user question>' — needs investigation + answer"
"User chose <option>; awaiting implementation of <specific next step>"
If the user's most recent message was a reverse signal (stop, undo, roll
back, never mind, just verify, change of topic) that supersedes earlier
work, write the reverse signal verbatim and DO NOT carry forward the
cancelled task. Example: "User asked: '<exact reverse signal>' — earlier
in-flight work is cancelled."
If no outstanding task exists, write "None."]"""
_TASK_NO_USER = f"""[NO user-authored turn exists in this session. Write exactly:
{NO_USER_TASK_SENTINEL}
Do not write "User asked:" or any translated equivalent anywhere in the summary.
Describe agent/tool work only as completed actions, state, or historical work.]"""
_FIELD_HELP = {
    True: (
        "[What the user is trying to accomplish overall]",
        "[User preferences, coding style, constraints, important decisions]",
        "[Questions the user asked that were ALREADY answered — include the answer so it is "
        "not repeated]",
        "[Questions or requests from the user that have NOT yet been answered or fulfilled. "
        "These are STALE — they were from the compacted turns. Write them here for reference "
        "only. The agent must NOT act on them unless the latest user message explicitly "
        'requests it. If none, write "None."]',
    ),
    False: (
        "[Historical cron/agent objective inferred only from assistant and tool activity. "
        "Never call it a user goal.]",
        "[Runtime, configuration, and technical constraints only. Do not invent user preferences.]",
        "[Write exactly: None. No user-authored questions exist.]",
        "[Write exactly: None. No user-authored requests exist.]",
    ),
}


def summary_template(has_user_turn: bool, budget: int) -> str:
    """The structured sections Hermes asks for, with their instructions."""
    goal, constraints, resolved, pending = _FIELD_HELP[has_user_turn]
    task = _TASK_USER if has_user_turn else _TASK_NO_USER
    return f"""{HISTORICAL_TASK_HEADING}
{task}

## Goal
{goal}

## Constraints & Preferences
{constraints}

## Completed Actions
[Numbered list of concrete actions taken — include tool used, target, and outcome.
Format each as: N. ACTION target — outcome [tool: name]
Example:
1. READ config.py:45 — found `==` should be `!=` [tool: read_file]
2. PATCH config.py:45 — changed `==` to `!=` [tool: patch]
3. TEST `pytest tests/` — 3/50 failed: test_parse, test_validate, test_edge [tool: terminal]
Be specific with file paths, commands, line numbers, and results.]

## Active State
[Current working state — include:
- Working directory and branch (if applicable)
- Modified/created files with brief note on each
- Test status (X/Y passing)
- Any running processes or servers
- Environment details that matter]

{HISTORICAL_IN_PROGRESS_HEADING}
[Work currently underway — what was being done when compaction fired]

## Blocked
[Any blockers, errors, or issues not yet resolved. Include exact error messages.]

## Key Decisions
[Important technical decisions and WHY they were made]

## Resolved Questions
{resolved}

{HISTORICAL_PENDING_ASKS_HEADING}
{pending}

## Relevant Files
[Files read, modified, or created — with brief note on each]

{HISTORICAL_REMAINING_WORK_HEADING}
[What remains to be done — framed as STALE context for reference only. The agent must NOT resume this work unless the latest user message explicitly asks for it.]

## Critical Context
[Any specific values, error messages, configuration details, or data that would be lost without explicit preservation. NEVER include API keys, tokens, passwords, or credentials — write [REDACTED] instead.]

Target ~{budget} tokens. Be CONCRETE — include file paths, command outputs, error messages, line numbers, and specific values. Avoid vague descriptions like "made some changes" — say exactly what changed.

Write only the summary body. Do not include any preamble or prefix."""


def summary_prompt(
    turns: Sequence[Message],
    *,
    previous_summary: str | None,
    has_user_turn: bool,
    budget: int,
    focus_topic: str | None,
) -> str:
    """``_generate_summary``'s prompt: first compaction, or an iterative update."""
    preamble = _PREAMBLE.format(language=_LANGUAGE_USER if has_user_turn else _LANGUAGE_NO_USER)
    content = bound_summary_input(serialize_for_summary(turns))
    template = summary_template(has_user_turn, budget)
    if previous_summary:
        prompt = f"""{preamble}

You are updating a context compaction summary. A previous compaction produced the summary below. New conversation turns have occurred since then and need to be incorporated.

PREVIOUS SUMMARY:
{bound_summary_input(previous_summary)}

NEW TURNS TO INCORPORATE:
{content}

Update the summary using this exact structure. PRESERVE all existing information that is still relevant. ADD new completed actions to the numbered list (continue numbering). Move items from "In Progress" to "Completed Actions" when done. Move answered questions to "Resolved Questions". Update "Active State" to reflect current state. Remove information only if it is clearly obsolete. CRITICAL: Update "## Active Task" to reflect the user's most recent unfulfilled input — this includes any question, decision request, or discussion turn that the assistant has not yet answered. Only write "None" if the last exchange was fully resolved.

{template}"""
    else:
        prompt = f"""{preamble}

Create a structured checkpoint summary for the conversation after earlier turns are compacted. The summary should preserve enough detail for continuity without re-reading the original turns.

TURNS TO SUMMARIZE:
{content}

Use this exact structure:

{template}"""
    if focus_topic:
        prompt += f"""

FOCUS TOPIC: "{focus_topic}"
This compaction should PRIORITISE preserving all information related to the focus topic above. For content related to "{focus_topic}", include full detail — exact values, file paths, command outputs, error messages, and decisions. For content NOT related to the focus topic, summarise more aggressively (brief one-liners or omit if truly irrelevant). The focus topic sections should receive roughly 60-70% of the summary token budget. Even for the focus topic, NEVER preserve API keys, tokens, passwords, or credentials — use [REDACTED]."""
    return prompt


def auto_focus_topic(messages: Sequence[Message]) -> str | None:
    """``_derive_auto_focus_topic``: the last 3 real user turns."""
    picked: list[str] = []
    for msg in reversed(messages):
        if not _is_actionable_user(msg):
            continue
        text = " ".join(msg.content.split())
        if not text:
            continue
        if len(text) > AUTO_FOCUS_TURN_MAX_CHARS:
            text = text[: AUTO_FOCUS_TURN_MAX_CHARS - 1].rstrip() + "…"
        picked.append(text)
        if len(picked) >= AUTO_FOCUS_MAX_TURNS:
            break
    if not picked:
        return None
    focus = "Recent user focus:\n" + "\n".join(f"- {t}" for t in reversed(picked))
    if len(focus) > AUTO_FOCUS_MAX_CHARS:
        focus = focus[: AUTO_FOCUS_MAX_CHARS - 1].rstrip() + "…"
    return focus


def ground_task_snapshot(body: str, turns: Sequence[Message]) -> str:
    """Overwrite the task snapshot with the newest real user turn of the compacted window."""
    user = next((m for m in reversed(turns) if _is_actionable_user(m) and m.content.strip()), None)
    if user is None:
        return body
    text = re.sub(r"\s+", " ", user.content.strip())
    if len(text) > ACTIVE_TASK_MAX_CHARS:
        text = text[: ACTIVE_TASK_MAX_CHARS - 15].rstrip() + " ...[truncated]"
    section = (
        f"{HISTORICAL_TASK_HEADING}\nUser asked (deterministic, from compacted turns): {text!r}\n"
        "Historical only; newer protected-tail messages after this summary win.\n\n"
    )
    if HISTORICAL_TASK_SECTION_RE.search(body):
        return HISTORICAL_TASK_SECTION_RE.sub(lambda _m: section, body, count=1).strip()
    return f"{section}{body}".strip()


def _bullets(items: Sequence[str], limit: int = 8) -> str:
    unique: list[str] = []
    for item in items:
        item = item.strip()
        if item and item not in unique:
            unique.append(item)
        if len(unique) >= limit:
            break
    return "\n".join(f"- {item}" for item in unique) if unique else "None."


def _append_unique(items: list[str], value: str, limit: int) -> None:
    value = value.strip()
    if value and value not in items and len(items) < limit:
        items.append(value)


def _collect_paths(value: Any, found: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("path", "workdir", "file_path", "output_path") and isinstance(item, str):
                _append_unique(found, item, 12)
            _collect_paths(item, found)
    elif isinstance(value, list):
        for item in value:
            _collect_paths(item, found)
    elif isinstance(value, str):
        for match in PATH_MENTION_RE.findall(value):
            _append_unique(found, match.rstrip(".,:;"), 12)


def fallback_summary(
    turns: Sequence[Message], previous_summary: str | None, reason: str | None
) -> str:
    """``_build_static_fallback_summary``: continuity anchors recovered without an LLM."""
    user_asks: list[str] = []
    assistant_actions: list[str] = []
    tool_actions: list[str] = []
    files: list[str] = []
    blockers: list[str] = []
    dropped: list[str] = []
    calls: dict[str, ToolCall] = {}
    for msg in turns:
        for call in msg.tool_calls if msg.role == "assistant" else ():
            calls[call.id] = call
            if call.arguments:
                try:
                    _collect_paths(json.loads(call.arguments), files)
                except (ValueError, RecursionError):  # not JSON, or nested too deep to walk
                    _collect_paths(call.arguments, files)
    for msg in turns:
        text = re.sub(r"\s+", " ", _message_text(msg)).strip()
        if len(text) > FALLBACK_TURN_MAX_CHARS:
            text = text[: FALLBACK_TURN_MAX_CHARS - 15].rstrip() + " ...[truncated]"
        _collect_paths(text, files)
        names = [c.name for c in msg.tool_calls] if msg.role == "assistant" else []
        turn = text
        if names:
            prefix = "tool calls: " + ", ".join(names[:6])
            turn = f"{prefix}; {text}" if text else prefix
        if turn:
            dropped.append(f"{msg.role.upper()}: {turn}")
            del dropped[:-8]
        if len(text) > 600:
            text = text[:420].rstrip() + " ... " + text[-160:].lstrip()
        if msg.role == "user" and text and not is_summary_message(msg):
            user_asks.append(text)
        elif msg.role == "assistant":
            if names:
                assistant_actions.append("Called tool(s): " + ", ".join(names[:6]))
            elif text:
                assistant_actions.append(text)
        elif msg.role == "tool":
            made = calls.get(msg.tool_call_id or "")
            name, args = (made.name, made.arguments) if made else ("unknown", "")
            tool_actions.append(summarize_tool_result(name, args, text))
            if ERROR_LINE_RE.search(text):
                blockers.append(text[:500])
    completed = [
        f"{i}. {item}" for i, item in enumerate((assistant_actions + tool_actions)[:12], start=1)
    ]
    task = f"User asked: {user_asks[-1]!r}" if user_asks else NO_USER_TASK_SENTINEL
    previous = ""
    if previous_summary:
        snapshot = previous_summary.strip()
        if len(snapshot) > FALLBACK_PREVIOUS_SUMMARY_MAX_CHARS:
            snapshot = (
                snapshot[: FALLBACK_PREVIOUS_SUMMARY_MAX_CHARS - 45].rstrip()
                + "\n...[previous summary snapshot truncated]"
            )
        previous = (
            f"\n\n## Previous Summary Snapshot\n{snapshot}\n\nThe previous compaction summary "
            "above remains background continuity context because the latest LLM summary "
            "update failed."
        )
    reason_text = f" Summary failure reason: {reason}." if reason else ""
    body = f"""{HISTORICAL_TASK_HEADING}
{task}

## Goal
Recovered from a deterministic fallback because the LLM context summarizer was unavailable. Continue from the protected recent messages after this summary and use current file/system state for exact details.{previous}

## Constraints & Preferences
- This fallback was generated locally without an LLM summary call.
- Secrets and credentials were redacted before preservation.
- The summary may be incomplete; prefer verifying current files, git state, processes, and test results instead of assuming omitted details.

## Completed Actions
{chr(10).join(completed) if completed else "None recoverable from compacted turns."}

## Active State
Unknown from deterministic fallback. Inspect current repository/session state if needed.

{HISTORICAL_IN_PROGRESS_HEADING}
Unknown from deterministic fallback — the latest user ask is recorded once under
"{HISTORICAL_TASK_HEADING}" above as historical context only. Do NOT treat it as an
unfulfilled instruction to re-answer; verify current state and continue from the
protected recent messages after this summary.

## Blocked
{_bullets(blockers, limit=5)}

## Key Decisions
None recoverable from deterministic fallback.

## Resolved Questions
None recoverable from deterministic fallback.

{HISTORICAL_PENDING_ASKS_HEADING}
None recoverable from deterministic fallback. (The latest user ask is preserved once
under "{HISTORICAL_TASK_HEADING}" as historical context — it is NOT necessarily
outstanding.)

## Relevant Files
{_bullets(files, limit=12)}

{HISTORICAL_REMAINING_WORK_HEADING}
Continue from the most recent unfulfilled user ask and protected tail messages. Verify state with tools before making claims.

## Last Dropped Turns
{_bullets(dropped, limit=8)}

## Critical Context
Summary generation was unavailable, so this is a best-effort deterministic fallback for {len(turns)} compacted message(s).{reason_text}"""
    summary = with_summary_prefix(body.strip())
    if len(summary) > FALLBACK_SUMMARY_MAX_CHARS:
        summary = (
            summary[: FALLBACK_SUMMARY_MAX_CHARS - 42].rstrip()
            + "\n...[fallback summary truncated]"
        )
    return summary


def is_context_error(text: str) -> bool:
    """Hermes' context-length / payload-too-large detection on a provider error."""
    lowered = text.lower()
    return "413" in lowered or any(p in lowered for p in CONTEXT_ERROR_PHRASES)


def is_terminal_failure(error: SummarizerError) -> bool:
    """Access, quota and network failures abort instead of falling back (#29559)."""
    return error.kind in TERMINAL_FAILURE_KINDS or bool(
        _ACCESS_FAILURE_RE.search(error.message.lower())
    )


# -- the strategy ------------------------------------------------------------------------------------


class HermesStrategy(Strategy[HermesConfig]):
    name = "hermes"
    summary = "Hermes ContextCompressor: prune old tool output, protect head and token-budgeted tail, summarise the middle."
    source = "NousResearch/hermes-agent agent/context_compressor.py"
    Config = HermesConfig
    default_estimator = "hermes"

    def __init__(self, config: HermesConfig | None = None) -> None:
        super().__init__(config)
        self.cfg = self.config
        self.limits: Limits | None = None
        self.compression_count = 0
        self.previous_summary: str | None = None
        self.summary_has_user_turn: bool | None = None
        self.ineffective_count = 0
        self.fallback_streak = 0
        self.verify_pending = False
        self.attempts = 0
        self._seen_step = -1

    # -- budget -----------------------------------------------------------------------------------
    def on_start(self, ctx: ReplayContext) -> None:
        self.limits = compute_limits(self.cfg, ctx.window, ctx.reserved)

    def _limits(self, ctx: ReplayContext) -> Limits:
        if self.limits is None:
            self.limits = compute_limits(self.cfg, ctx.window, ctx.reserved)
        return self.limits

    def budget(self, ctx: ReplayContext) -> int:
        limits = self._limits(ctx)
        effective = limits.context_length - limits.max_tokens
        return effective if effective > 0 else limits.context_length

    @property
    def blocked(self) -> bool:
        """Anti-thrashing: automatic compaction is off after two ineffective or fallback passes."""
        return self.ineffective_count >= 2 or self.fallback_streak >= 2

    # -- hooks ------------------------------------------------------------------------------------
    def before_call(self, ctx: ReplayContext) -> None:
        limits = self._limits(ctx)
        self.attempts = 0
        self._read_usage(ctx, limits)
        self._proactive_prune(ctx)
        if ctx.view.estimated_tokens < limits.threshold_tokens:
            return
        if self.blocked:
            ctx.emit(
                "strategy.skipped",
                strategy=self.name,
                reason="ineffective",
                ineffective=self.ineffective_count,
                fallback_streak=self.fallback_streak,
            )
            return
        for _ in range(self.cfg.max_compression_attempts):
            if ctx.view.estimated_tokens < limits.threshold_tokens:
                break
            if not self._compress_and_apply(ctx):
                break

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        if not is_context_error(str(error)):
            return False
        self.attempts += 1
        if self.attempts > self.cfg.max_compression_attempts:
            return False
        return self._compress_and_apply(ctx)

    def _compress_and_apply(self, ctx: ReplayContext) -> bool:
        """One compression; True when it made progress (fewer messages or < 95% tokens)."""
        before_len, before_tokens = len(ctx.view), ctx.view.estimated_tokens
        messages, outcome = self.compress(ctx.view.messages, ctx)
        ctx.apply(outcome, messages, note=f"compression #{self.compression_count}")
        return (
            len(ctx.view) < before_len
            or ctx.view.estimated_tokens < before_tokens * PROGRESS_TOKEN_RATIO
        )

    def _read_usage(self, ctx: ReplayContext, limits: Limits) -> None:
        """``update_from_response``: the anti-thrashing verdict on the provider's prompt count."""
        for event in reversed(ctx.events):
            if event.type != ev.PROVIDER_CALL:
                continue
            if event.step <= self._seen_step or not event["ok"]:
                return
            self._seen_step = event.step
            if event["true_tokens"] < limits.threshold_tokens:
                self.ineffective_count = 0
            elif self.verify_pending:
                self.ineffective_count += 1
            self.verify_pending = False
            return

    def _proactive_prune(self, ctx: ReplayContext) -> None:
        """``prune_tool_results_only``: the deterministic prune alone, from its own trigger."""
        cfg = self.cfg
        messages = ctx.view.messages
        if (
            cfg.proactive_prune_tokens <= 0
            or ctx.view.estimated_tokens < cfg.proactive_prune_tokens
        ):
            return
        if len(messages) <= cfg.protect_last_n + self._head_size(messages) + 1:
            return
        pruned, count = prune_old_tool_results(
            messages,
            ctx.estimator,
            protect_tail_count=cfg.protect_last_n,
            protect_tail_tokens=None,
            min_prune_chars=max(200, cfg.proactive_prune_min_result_chars or 8000),
        )
        if not count:
            return
        reclaimed = ctx.estimator.count_prompt(messages) - ctx.estimator.count_prompt(pruned)
        if reclaimed < cfg.proactive_prune_min_reclaim_tokens:
            return
        ctx.apply("proactive_prune", pruned, note=f"{count} tool result(s) pruned")

    # -- compress() --------------------------------------------------------------------------------
    def _head_size(self, messages: Sequence[Message]) -> int:
        head = 1 if messages and messages[0].role == "system" else 0
        protect = self.cfg.protect_first_n
        decayed = self.compression_count >= 1 or bool(self.previous_summary)
        resumed = any(is_summary_message(m) for m in messages[head : head + protect + 4])
        return head + (0 if decayed or resumed else protect)

    def compress(
        self, messages: Sequence[Message], ctx: ReplayContext
    ) -> tuple[list[Message], str]:
        """``compress()``: (the new messages, the compaction layer that produced them)."""
        limits = self._limits(ctx)
        counter = ctx.estimator
        if len(messages) <= self._head_size(messages) + 3 + 1:
            self.ineffective_count += 1
            return list(messages), "compress_noop"
        msgs, pruned = prune_old_tool_results(
            messages,
            counter,
            protect_tail_count=self.cfg.protect_last_n,
            protect_tail_tokens=limits.tail_token_budget,
        )
        layer = "prune" if pruned else "compress_noop"
        latest_user = _last_user_index(msgs, 0)
        start = safe_start_forward(msgs, self._head_size(msgs))
        end = find_tail_cut(
            msgs,
            start,
            limits.tail_token_budget,
            counter,
            protect_last_n=self.cfg.protect_last_n,
            min_tail_user_messages=self.cfg.min_tail_user_messages,
        )
        if end == latest_user:
            bridge = latest_user - 1
            if bridge >= 0 and msgs[bridge].role == "tool":
                bridge = align_backward(msgs, latest_user)
            elif bridge < 0 or msgs[bridge].role != "assistant":
                bridge = -1
            if bridge > start:
                end = bridge
        if start >= end:
            self.ineffective_count += 1
            return msgs, layer
        window = msgs[start:end]
        kept_system = [m for m in window if m.role == "system"]
        turns = [t for m in window if m.role != "system" and (t := strip_handoff(m)) is not None]
        if not turns:
            self.ineffective_count += 1
            return msgs, layer
        real_user = any(_is_actionable_user(m) for m in msgs)
        if self.summary_has_user_turn is None or real_user:
            self.summary_has_user_turn = real_user

        summary, error = self._generate_summary(turns, auto_focus_topic(msgs), limits, ctx)
        if summary is None and (
            self.cfg.abort_on_summary_failure or (error is not None and is_terminal_failure(error))
        ):
            return msgs, layer
        used_fallback = summary is None
        if summary is None:
            reason = f"{error.kind}: {error.message}" if error is not None else None
            summary = fallback_summary(turns, self.previous_summary, reason)

        head: list[Message] = []
        for i, msg in enumerate(msgs[:start]):
            if i == 0 and msg.role == "system" and COMPRESSION_NOTE not in msg.content:
                msg = _add_text(msg, "\n\n" + COMPRESSION_NOTE if msg.content else COMPRESSION_NOTE)
            stripped = strip_handoff(msg)
            if stripped is not None:
                head.append(stripped)
        tail = [t for m in msgs[end:] if (t := strip_handoff(m)) is not None]
        assembled = self._assemble(head, kept_system, summary, tail, start)
        self.compression_count += 1
        assembled = strip_historical_media(sanitize_tool_pairs(assembled))
        self.verify_pending = True
        self.fallback_streak = self.fallback_streak + 1 if used_fallback else 0
        return assembled, "fallback_summary" if used_fallback else "compaction"

    def _assemble(
        self,
        head: list[Message],
        kept_system: list[Message],
        summary: str,
        tail: list[Message],
        start: int,
    ) -> list[Message]:
        """Place the summary with a role that avoids consecutive same roles, or merge it."""
        last_head_role = head[-1].role if head else "user"
        first_tail_role = tail[0].role if tail else None
        force_user = start == 0 or last_head_role == "system"
        if not force_user and not any(m.role == "user" for m in head + tail):
            force_user = True
        role = "user" if last_head_role in ("assistant", "tool") or force_user else "assistant"
        merge = False
        if first_tail_role is not None and role == first_tail_role:
            flipped = "assistant" if role == "user" else "user"
            if flipped != last_head_role and not force_user:
                role = flipped
            else:
                merge = bool(tail)
        marks = {SUMMARY_MARK: True, SUMMARY_HAS_USER_MARK: bool(self.summary_has_user_turn)}
        if not merge:
            note = Message(role, f"{summary}\n\n{SUMMARY_END_MARKER}", meta=marks)
            return [*head, *kept_system, note, *tail]
        first = tail[0]
        if force_user and role == "user":
            merged = _add_text(first, f"{summary}\n\n{SUMMARY_END_MARKER}\n\n", prepend=True)
        else:
            suffix = f"\n\n{MERGED_SUMMARY_DELIMITER}\n\n{summary}\n\n{SUMMARY_END_MARKER}"
            merged = _add_text(
                _add_text(first, suffix), MERGED_PRIOR_CONTEXT_HEADER + "\n", prepend=True
            )
        merged = replace(merged, meta={**merged.meta, **marks})
        return [*head, *kept_system, merged, *tail[1:]]

    def _generate_summary(
        self,
        turns: list[Message],
        focus_topic: str | None,
        limits: Limits,
        ctx: ReplayContext,
    ) -> tuple[str | None, SummarizerError | None]:
        """``_generate_summary``: (the prefixed summary, or None and the error)."""
        content_tokens = sum(ctx.estimator.count_message(m) for m in turns)
        budget = max(
            MIN_SUMMARY_TOKENS, min(int(content_tokens * SUMMARY_RATIO), limits.max_summary_tokens)
        )
        has_user = bool(self.summary_has_user_turn)
        request = SummaryRequest(
            strategy=self.name,
            layer="compaction",
            prompt=summary_prompt(
                turns,
                previous_summary=self.previous_summary,
                has_user_turn=has_user,
                budget=budget,
                focus_topic=focus_topic,
            ),
            messages=tuple(turns),
            sections=SUMMARY_SECTIONS,
            max_tokens=budget,
            previous_summary=self.previous_summary,
            key=ctx.request_key(f"compaction{self.compression_count}"),
            send_max_tokens=False,
        )
        try:
            text = ctx.summarize(request)
        except SummarizerError as exc:
            return None, exc
        text = THINK_BLOCK_RE.sub("", text).strip() or text.strip()
        body = ground_task_snapshot(summary_body(text), turns)
        self.previous_summary = body
        return with_summary_prefix(body), None


__all__ = [
    "HermesConfig",
    "HermesStrategy",
    "compute_limits",
    "fallback_summary",
    "find_tail_cut",
    "prune_old_tool_results",
    "sanitize_tool_pairs",
    "shrink_json_arguments",
    "summarize_tool_result",
]
