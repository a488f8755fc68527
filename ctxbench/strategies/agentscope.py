"""``agentscope``: AgentScope v2 context compression (``ContextConfig``).

Two releases (the ``release`` knob, :data:`RELEASES`): ``"2.0.11"`` (default) reproduces the
``agentscope==2.0.11`` wheel as RELEASES.md reads it: the request counted whole and rounded once
(tools as ``json.dumps(tools, ensure_ascii=False)``), the 2.0.11 ``compression_prompt`` (its
``{current_time}`` filled from the ``current_time``/``timezone`` knobs: a replay has no clock),
the ground-truth ``<system-reminder>`` template, ``<current-time>``/``<timezone>`` injected
whenever no injection in the context records a time (the first call, and after a compression
removed it), no offloader, ``context_buffer_ratio < trigger_ratio`` required while injecting,
and the empty-context ``RuntimeError`` ending the reply (the replay fails that call and every
later call of the reply with kind ``aborted``). ``"design"`` is the behaviour below as seeds/002
and the docs give it (before the knob existed). Remaining divergences from 2.0.11: the
compression call is one text prompt (``render_compression_prompt``), not AgentScope's message
list with a forced tool; the time never advances, so the 0.5 h ``time_interval`` re-injection
never fires; the pre-warning's task fields are absent (no task list in a replay).

Source: agentscope-ai/agentscope ``src/agentscope/agent/_config.py`` (``ContextConfig``,
``SummarySchema``), ``src/agentscope/agent/_agent.py`` (``_compress_context_impl``,
``_split_context_for_compression``, ``_split_tool_result_for_compression``,
``_limit_context_images``, ``_inject_runtime_state``), ``src/agentscope/model/_base.py``
(``count_tokens``), ``tests/compress_context_test.py`` and the "Compress Context" page
(seeds/002). Counting is AgentScope's own estimate by default (``agentscope``: UTF-8 bytes / 4).

Rules reproduced:

- Trigger (before every model call): limit images, then compress when the estimate of system
  prompt + summary + context + tools reaches ``trigger_ratio * context_size``. Over the
  threshold with an empty context (the system prompt and summary alone exceed it) AgentScope
  raises ``RuntimeError``; the replay records a ``strategy.error`` event and leaves the prompt.
- Split: walk back from the newest message to the smallest suffix whose estimate (with system
  prompt and summary) reaches ``reserve_ratio * context_size``; the boundary message keeps the
  trailing content blocks that fit (multi-part messages without tool calls; others are one
  block). Then a fixed-point loop moves every kept tool result whose call is on the compressed
  side onto that side (PR #2093). AgentScope v2 keeps a step's calls and results in one ``Msg``
  and checks pairing only inside the boundary message, so a call in one ``Msg`` and its result
  in the next can still be split (QwenPaw #5960); ctxbench's messages are OpenAI-style (calls
  and results in separate messages), so the loop runs across messages and that split cannot
  happen. Nothing on the compressed side: retry the split with reserve 0.
- Summary: one structured call with the five ``SummarySchema`` fields (task_overview,
  current_state, important_discoveries, next_steps, context_to_preserve), the previous summary
  and the ``compression_prompt`` (a ``<system-hint>`` asking for a continuation summary),
  rendered with ``summary_template`` (``<system-info>Here is a summary of your previous work``
  ``# Task Overview ... # Context to Preserve ...</system-info>``). The summary lives in strategy
  state and is rendered as a user message right after the system prompt; the reserved messages
  become the context. With ``offload``, the compressed messages go to
  ``offload/<trace>/context.jsonl`` (one growing file per session) and the summary gets
  ``<system-reminder>The compressed context is offloaded to '{path}', ...</system-reminder>``.
- Summary failure: if the compression request was estimated over ``context_size``, drop the
  oldest messages to compress until it is under ``trigger_ratio * context_size`` and retry once;
  on final failure (``compression_fallback_to_truncation``) keep the old summary or use
  ``<system-info>Some earlier messages were truncated for limited context.</system-info>`` and
  still drop the messages to compress. With the fallback off, AgentScope raises and leaves the
  state unchanged; the replay records ``strategy.error``.
- Tool results over ``tool_result_limit`` tokens keep their leading blocks; a text boundary
  block is cut in proportion to its token delta, other boundary blocks are dropped whole; the
  remainder is offloaded to ``offload/<trace>/tool_result-<call>.txt`` and the kept part gets
  ``\\n<<<TRUNCATED>>>\\n<system-reminder>The remaining content has been omitted for limited
  context.{ You can refer to the file in '{path}' for the truncated content if needed.}``
  ``</system-reminder>``.
- Images: the oldest images beyond ``max_image_num`` become ``<system-reminder>The image
  {name}is offloaded into {url}, you can refer to it when needed.</system-reminder>`` (http(s)
  URLs, or data URLs written to ``offload/`` when ``offload``) or ``...is removed to free up
  context space.</system-reminder>``.
- Pre-warning: at the first model call of a reply (the view ends with a real user message), if
  the estimate exceeds ``max(0, trigger_ratio - context_buffer_ratio) * context_size``, append
  ``<context-length>Your current context contains {n} tokens. When reaching {trigger} tokens,
  your context will be compressed.</context-length>`` inside ``runtime_state_template``.
- Overflow: AgentScope has no reactive compaction (a rejected call is retried ``max_retries``
  times, default 0, then falls back to another model), so ``on_overflow`` gives up.

Left out: the model-driven self-compaction rubric (``self_compact_enabled``, off by default),
the agent-callable compression tool (``compression_tool_enabled``, off by default), the Read
tool's file-cache clearing (no file cache in a replay) and the time and task fields of the
runtime-state injection (no clock, no task list). Not verified in source, exposed as knobs:
the ``runtime_state_template`` wrapper (REFERENCE A2: "inside the ``<system-reminder>``
runtime-state template") and the order of injection after compression. A later revision of
the compression prompt also asks for absolute dates, verbatim paths and in-flight tools; its
text was not available, so ``compression_prompt`` defaults to the ``_config.py`` text quoted
below. ``trigger_ratio`` accepts up to 0.9 inclusive (#2396; earlier releases required < 0.9).

Knobs (defaults): context_size None (the run window; AgentScope's ``ChatModelBase`` default is
32768), trigger_ratio 0.8, reserve_ratio 0.1, tool_result_limit 50000, max_image_num 5,
context_buffer_ratio 0.2, offload True, compression_fallback_to_truncation True,
inject_runtime_state True, compression_prompt, summary_template, runtime_state_template.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar, Literal

from ctxbench import config as configuration
from ctxbench.counting.base import TokenCounter, replay_text, tool_schemas
from ctxbench.counting.estimators import AgentScopeCounter
from ctxbench.engine.context import ReplayContext, safe_component
from ctxbench.errors import ProviderOverflowError, SummarizerError
from ctxbench.strategies.base import ReplyAborted, Strategy
from ctxbench.strategies.layers import results_after_calls, transcript
from ctxbench.strategies.releases import check_release, release_field, release_summaries
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import Message, Part, ToolSpec

COMPRESSION_PROMPT = (
    "<system-hint>You have been working on the task described above "
    "but have not yet completed it. "
    "Now write a continuation summary that will allow you to resume "
    "work efficiently in a future context window where the "
    "conversation history will be replaced with this summary. "
    "Your summary should be structured, concise, and actionable."
    "</system-hint>"
)

SUMMARY_TEMPLATE = (
    "<system-info>Here is a summary of your previous work\n"
    "# Task Overview\n"
    "{task_overview}\n\n"
    "# Current State\n"
    "{current_state}\n\n"
    "# Important Discoveries\n"
    "{important_discoveries}\n\n"
    "# Next Steps\n"
    "{next_steps}\n\n"
    "# Context to Preserve\n"
    "{context_to_preserve}"
    "</system-info>"
)

#: ``SummarySchema``: (field, heading in the template, description).
SUMMARY_FIELDS: tuple[tuple[str, str, str], ...] = (
    (
        "task_overview",
        "Task Overview",
        "The user's core request and success criteria.\n"
        "Any clarifications or constraints they specified",
    ),
    (
        "current_state",
        "Current State",
        "What has been completed so far.\n"
        "File created, modified, or analyzed (with paths if relevant).\n"
        "Key outputs or artifacts produced.",
    ),
    (
        "important_discoveries",
        "Important Discoveries",
        "Technical constraints or requirements uncovered.\n"
        "Decisions made and their rationale.\n"
        "Errors encountered and how they were resolved.\n"
        "What approaches were tried that didn't work (and why)",
    ),
    (
        "next_steps",
        "Next Steps",
        "Specific actions needed to complete the task.\n"
        "Any blockers or open questions to resolve.\n"
        "Priority order if multiple steps remain",
    ),
    (
        "context_to_preserve",
        "Context to Preserve",
        "User preferences or style requirements.\n"
        "Domain-specific details that aren't obvious.\n"
        "Any promises made to the user",
    ),
)
SUMMARY_SECTIONS = tuple(title for _, title, _ in SUMMARY_FIELDS)

TRUNCATED_SUMMARY = (
    "<system-info>Some earlier messages were truncated for limited context.</system-info>"
)
TRUNCATION_REMINDER = (
    "\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for limited "
    "context.{offload_reminder}</system-reminder>"
)
TOOL_RESULT_OFFLOAD_REMINDER = (
    " You can refer to the file in '{path}' for the truncated content if needed."
)
CONTEXT_OFFLOAD_REMINDER = (
    "<system-reminder>The compressed context is offloaded to '{path}', "
    "you can refer to it when needed.</system-reminder>"
)
IMAGE_OFFLOADED = (
    "<system-reminder>The image {name}is offloaded into {url}, "
    "you can refer to it when needed.</system-reminder>"
)
IMAGE_REMOVED = (
    "<system-reminder>The image {name}is removed to free up context space.</system-reminder>"
)
RUNTIME_STATE_TEMPLATE = "<system-reminder>{runtime_state}</system-reminder>"

#: 2.0.11 ``ContextConfig.compression_prompt`` (agent/_config.py:82-109)
COMPRESSION_PROMPT_2_0_11 = (
    "<system-hint>You have been working on the task described above. "
    "Now write a continuation summary that will allow you to resume "
    "work efficiently in a future context window where the "
    "conversation history will be replaced with this summary. "
    "Your summary should be structured, concise, and actionable.\n"
    "The current time is {current_time}.\n"
    "This summary may itself be summarized again later, and the "
    "conversation history it refers to will be gone, so every "
    "reference must be self-contained — resolve anything that "
    "depends on the vanished context into an absolute, "
    "fully-qualified form:\n"
    "- Time: convert relative expressions ('today', 'now', "
    "'yesterday', 'tomorrow', 'recently') to absolute dates using "
    "the current time above; re-anchor them even if an earlier "
    "summary already wrote them relatively.\n"
    "- Names & pointers: use file paths, symbol names, PR/issue "
    "numbers, IDs, URLs, and exact commands/error strings verbatim "
    "instead of 'this file', 'the above', 'the second approach', "
    "'the 5 failing tests'.\n"
    "- In-flight work: record everything still pending, especially "
    "tools launched in the background whose results you are still "
    "waiting on — give each one's id and a short note of what it is "
    "doing — and mark each item's owner (user request vs your own "
    "decision) and status (done / pending / blocked).\n"
    "</system-hint>"
)
#: 2.0.11 ``InjectionConfig.template`` (agent/_config.py:288-300)
RUNTIME_STATE_TEMPLATE_2_0_11 = (
    "<system-reminder>Treat the following as the ground truth at this point of the "
    "conversation. Anything stated earlier is outdated, and a later reminder, if any, "
    "supersedes this one:\n{runtime_state}\n</system-reminder>"
)

#: ``meta`` marks of the messages this strategy adds to the prompt.
SUMMARY_MARK = {"agentscope": "summary"}
HINT_MARK = {"agentscope": "runtime_state"}

IMAGE_PART_TYPES = frozenset({"image_url", "input_image", "image"})


@dataclass(frozen=True)
class AgentScopeRelease:
    """What one AgentScope release does where releases differ (RELEASES.md)."""

    name: str
    #: count the whole request once (model/_base.py:379-465) rather than per message
    whole_prompt: bool
    compression_prompt: str
    runtime_state_template: str
    #: an offloader is attached by default (2.0.11: ``None``)
    offload: bool
    #: ``<current-time>`` is injected when none is in the context (first call, after compression)
    time_injection: bool
    #: over the threshold with an empty context, ``RuntimeError`` ends the reply
    empty_context_aborts: bool
    summary: str


#: The ``release`` knob's values. "design" is seeds/002 and REFERENCE.md A2 (today's rules).
RELEASES: dict[str, AgentScopeRelease] = {
    "2.0.11": AgentScopeRelease(
        name="2.0.11",
        whole_prompt=True,
        compression_prompt=COMPRESSION_PROMPT_2_0_11,
        runtime_state_template=RUNTIME_STATE_TEMPLATE_2_0_11,
        offload=False,
        time_injection=True,
        empty_context_aborts=True,
        summary=(
            "the agentscope==2.0.11 wheel: whole-prompt count rounded once, tools "
            "ensure_ascii=False, the 2.0.11 compression prompt and ground-truth reminder, time "
            "re-injected after compression, no offloader, an empty-context overflow ends the reply"
        ),
    ),
    "design": AgentScopeRelease(
        name="design",
        whole_prompt=False,
        compression_prompt=COMPRESSION_PROMPT,
        runtime_state_template=RUNTIME_STATE_TEMPLATE,
        offload=True,
        time_injection=False,
        empty_context_aborts=False,
        summary=(
            "the documented design (per-message counts, the docs' prompt and reminder, "
            "an offloader, no time injection"
        ),
    ),
}
LATEST_RELEASE: Literal["2.0.11"] = "2.0.11"


@dataclass(frozen=True)
class AgentScopeConfig:
    release: Literal["2.0.11", "design"] = release_field(LATEST_RELEASE, RELEASES)
    context_size: int | None = field(
        default=None, metadata={"help": "model.context_size (None = the run window)"}
    )
    trigger_ratio: float = field(
        default=0.8, metadata={"help": "compress at this fraction of context_size (0 < r <= 0.9)"}
    )
    reserve_ratio: float = field(
        default=0.1, metadata={"help": "recent context kept verbatim (< trigger_ratio)"}
    )
    tool_result_limit: int = field(
        default=50_000, metadata={"help": "tokens per tool result before truncation"}
    )
    max_image_num: int = field(default=5, metadata={"help": "images kept in the context"})
    context_buffer_ratio: float = field(
        default=0.2, metadata={"help": "pre-warning band below trigger_ratio"}
    )
    offload: bool | None = field(
        default=None,
        metadata={"help": "an offloader is attached (None = the release's: 2.0.11 no, design yes)"},
    )
    compression_fallback_to_truncation: bool = field(
        default=True, metadata={"help": "on summary failure, drop the messages anyway"}
    )
    inject_runtime_state: bool = field(
        default=True, metadata={"help": "inject the context-length pre-warning"}
    )
    compression_prompt: str | None = field(
        default=None,
        metadata={"help": "the <system-hint> summary instruction (None = the release's)"},
    )
    summary_template: str = field(
        default=SUMMARY_TEMPLATE, metadata={"help": "renders the five summary fields"}
    )
    runtime_state_template: str | None = field(
        default=None, metadata={"help": "wraps injected runtime state (None = the release's)"}
    )
    current_time: str = field(
        default="1970-01-01T00:00:00",
        metadata={"help": "the replay's fixed clock, in time_format %Y-%m-%dT%H:%M:%S (2.0.11)"},
    )
    timezone: str = field(default="UTC", metadata={"help": "InjectionConfig.timezone (2.0.11)"})

    def __post_init__(self) -> None:
        if not 0 < self.trigger_ratio <= 0.9:
            raise ValueError(f"trigger_ratio must be > 0 and <= 0.9, not {self.trigger_ratio}")
        if not 0 < self.reserve_ratio < 0.9:
            raise ValueError(f"reserve_ratio must be > 0 and < 0.9, not {self.reserve_ratio}")
        if self.reserve_ratio >= self.trigger_ratio:
            raise ValueError(
                f"reserve_ratio ({self.reserve_ratio}) must be smaller than trigger_ratio "
                f"({self.trigger_ratio}), as AgentScope's Agent._validate_configs requires"
            )
        if self.context_size is not None and self.context_size <= 0:
            raise ValueError(f"context_size must be positive, not {self.context_size}")
        if self.tool_result_limit <= 0:
            raise ValueError(f"tool_result_limit must be positive, not {self.tool_result_limit}")
        if self.max_image_num < 0:
            raise ValueError(f"max_image_num must be >= 0, not {self.max_image_num}")
        if not 0 <= self.context_buffer_ratio <= 1:
            raise ValueError(
                f"context_buffer_ratio must be within [0, 1], not {self.context_buffer_ratio}"
            )
        configuration.check_template(
            self.summary_template, [name for name, _, _ in SUMMARY_FIELDS], key="summary_template"
        )
        check_release(self.release, RELEASES)
        if "{runtime_state}" not in self.state_template:
            raise ValueError("runtime_state_template must contain {runtime_state}")
        if (
            self.rules.time_injection
            and self.inject_runtime_state
            and self.context_buffer_ratio >= self.trigger_ratio
        ):
            raise ValueError(
                "The 'context_buffer_ratio' of the context config must be smaller than its "
                "'trigger_ratio', so that the context length is injected and the compression "
                "tool takes effect before the hard compression, got "
                f"{self.context_buffer_ratio} and {self.trigger_ratio}."
            )

    @property
    def rules(self) -> AgentScopeRelease:
        return RELEASES[self.release]

    @property
    def prompt(self) -> str:
        """The compression prompt, ``{current_time}`` filled with the replay's clock."""
        text = (
            self.compression_prompt
            if self.compression_prompt is not None
            else self.rules.compression_prompt
        )
        return text.replace("{current_time}", f"{self.current_time} ({self.timezone})")

    @property
    def state_template(self) -> str:
        if self.runtime_state_template is not None:
            return self.runtime_state_template
        return self.rules.runtime_state_template

    @property
    def offloads(self) -> bool:
        return self.offload if self.offload is not None else self.rules.offload


# -- pure layers ------------------------------------------------------------------------------------


def _with_parts(message: Message, parts: Sequence[Part]) -> Message:
    text = "\n".join(p.text for p in parts if p.is_text)
    return replace(message, content=text, parts=tuple(parts))


def _blocks(message: Message) -> list[Part] | None:
    """The content blocks a boundary message may be split into (None: it is one block)."""
    if message.tool_calls or message.role not in ("user", "assistant"):
        return None
    if message.parts is None or len(message.parts) < 2:
        return None
    return list(message.parts)


class Meter:
    """How a strategy counts a whole request (the prompt or a candidate part of it)."""

    def tokens(self, messages: Sequence[Message]) -> int:
        raise NotImplementedError


class PerMessage(Meter):
    """The estimator's per-message counts plus the tools' overhead (2.0.6; any estimator)."""

    def __init__(self, counter: TokenCounter, overhead: int = 0) -> None:
        self.counter, self.overhead = counter, overhead

    def tokens(self, messages: Sequence[Message]) -> int:
        return self.overhead + sum(self.counter.count_message(m) for m in messages)


class WholePrompt(Meter):
    """``ChatModelBase.count_tokens`` of 2.0.11 (model/_base.py:379-465): the UTF-8 bytes of
    every text, thinking and tool-call input of the request and ``json.dumps(tools,
    ensure_ascii=False)``, divided by 4 and rounded **once**, plus 2000 per data block."""

    def __init__(self, tools: Sequence[ToolSpec]) -> None:
        self.tools_bytes = (
            len(json.dumps(tool_schemas(tools), ensure_ascii=False).encode("utf-8")) if tools else 0
        )
        self._cache: dict[str, tuple[int, int]] = {}

    def _of(self, message: Message) -> tuple[int, int]:
        found = self._cache.get(message.fingerprint)
        if found is None:
            pieces = [
                message.content,
                replay_text(message),
                *(c.arguments for c in message.tool_calls),
            ]
            found = (
                sum(len(p.encode("utf-8", "surrogatepass")) for p in pieces),
                len(message.media_parts),
            )
            self._cache[message.fingerprint] = found
        return found

    def tokens(self, messages: Sequence[Message]) -> int:
        n_bytes, media = self.tools_bytes, 0
        for message in messages:
            b, m = self._of(message)
            n_bytes += b
            media += m
        return int(n_bytes / 4 + 0.5) + AgentScopeCounter.MEDIA_TOKENS * media


def split_context(
    head: Sequence[Message],
    context: Sequence[Message],
    to_reserve: float,
    counter: TokenCounter | Meter,
    overhead: int = 0,
) -> tuple[list[Message], list[Message]]:
    """``_split_context_for_compression``: (messages to compress, messages to keep).

    ``head`` is the system prompt and the current summary, counted with every candidate suffix;
    ``overhead`` is the tools' tokens (with a plain counter)."""
    meter = counter if isinstance(counter, Meter) else PerMessage(counter, overhead)

    def tokens(messages: Sequence[Message]) -> int:
        return meter.tokens([*head, *messages])

    index = len(context) - 1
    while index >= 0:
        if tokens(context[index:]) >= to_reserve:
            break
        index -= 1
    if index < 0:
        return [], list(context)
    compress = list(context[:index])
    reserve = list(context[index + 1 :])
    boundary = context[index]
    blocks = _blocks(boundary)
    if blocks is None:
        if tokens([boundary, *reserve]) > to_reserve:
            compress.append(boundary)
        else:
            reserve.insert(0, boundary)
    else:
        block_index = len(blocks) - 1
        while block_index >= 0:
            attempt = _with_parts(boundary, blocks[block_index:])
            if tokens([attempt, *reserve]) > to_reserve:
                break
            block_index -= 1
        if blocks[: block_index + 1]:
            compress.append(_with_parts(boundary, blocks[: block_index + 1]))
        if blocks[block_index + 1 :]:
            reserve.insert(0, _with_parts(boundary, blocks[block_index + 1 :]))
    joined = compress + reserve
    cut = results_after_calls(joined, len(compress))
    return joined[:cut], joined[cut:]


def _output_tokens(message: Message, blocks: Sequence[Part], counter: TokenCounter) -> int:
    """Tokens of a tool output, counted as AgentScope does: an assistant message of the blocks."""
    text = "\n".join(p.text for p in blocks if p.is_text)
    return counter.count_message(
        Message("assistant", text, parts=tuple(blocks) if message.parts is not None else None)
    )


def split_tool_result(
    message: Message, limit: int, counter: TokenCounter
) -> tuple[Message, list[Part]]:
    """``_split_tool_result_for_compression``: (the kept result, the offloaded blocks).

    No offloaded blocks means the result is within ``limit`` and unchanged."""
    blocks = list(message.parts) if message.parts is not None else [Part("text", message.content)]
    if _output_tokens(message, blocks, counter) <= limit:
        return message, []
    boundary_index = 0
    for i in range(len(blocks) - 1, 0, -1):
        if _output_tokens(message, blocks[:i], counter) < limit:
            boundary_index = i
            break
    reserved = blocks[:boundary_index]
    offloaded = blocks[boundary_index + 1 :]
    boundary = blocks[boundary_index]
    if boundary.is_text:
        text = boundary.text
        current = _output_tokens(message, reserved, counter)
        delta = _output_tokens(message, [*reserved, boundary], counter) - current
        remaining = limit - current
        if delta <= 0:
            keep = len(text) if remaining > 0 else 0
        else:
            keep = int(remaining / delta * len(text))
        keep = max(0, min(len(text), keep))
        if text[:keep]:
            if reserved and reserved[-1].is_text:
                reserved[-1] = replace(reserved[-1], text=reserved[-1].text + text[:keep])
            else:
                reserved.append(replace(boundary, text=text[:keep]))
        if text[keep:]:
            if offloaded and offloaded[0].is_text:
                offloaded[0] = replace(offloaded[0], text=text[keep:] + offloaded[0].text)
            else:
                offloaded.insert(0, replace(boundary, text=text[keep:]))
    else:
        offloaded.insert(0, boundary)
    if not offloaded:
        return message, []
    if message.parts is None:
        return replace(message, content="".join(p.text for p in reserved)), offloaded
    return _with_parts(message, reserved), offloaded


def append_reminder(message: Message, reminder: str) -> Message:
    """Add ``reminder`` to the last text block, or as a new text block."""
    if message.parts is None:
        return replace(message, content=message.content + reminder)
    parts = list(message.parts)
    if parts and parts[-1].is_text:
        parts[-1] = replace(parts[-1], text=parts[-1].text + reminder)
    else:
        parts.append(Part("text", reminder))
    return _with_parts(message, parts)


def _is_image(part: Part) -> bool:
    return part.type in IMAGE_PART_TYPES


def parse_summary_fields(text: str) -> dict[str, str]:
    """The five fields of a structured summary: a JSON object, or markdown sections headed by
    the field titles; text with neither goes whole into ``task_overview``."""
    names = [name for name, _, _ in SUMMARY_FIELDS]
    stripped = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        obj = json.loads(stripped)
    except (ValueError, RecursionError):
        obj = None
    if isinstance(obj, dict) and any(name in obj for name in names):
        return {name: str(obj.get(name) or "").strip() for name in names}
    by_title = {title.lower(): name for name, title, _ in SUMMARY_FIELDS}
    by_title.update({name: name for name in names})
    fields: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        heading = re.match(r"^\s*#{1,6}\s*(.+?)\s*:?\s*$", line)
        if heading:
            key = re.sub(r"^[\d.\s]+", "", heading.group(1)).lower()
            current = by_title.get(key, by_title.get(key.replace(" ", "_")))
            if current is not None:
                fields.setdefault(current, [])
                continue
        if current is not None:
            fields[current].append(line)
    if not fields:
        return {name: (text.strip() if name == "task_overview" else "") for name in names}
    return {name: "\n".join(fields.get(name, [])).strip() for name in names}


def schema_tool_json() -> str:
    """The forced ``generate_structured_output`` tool AgentScope sends with the compression call."""
    schema = {
        "type": "object",
        "title": "SummarySchema",
        "properties": {
            name: {"type": "string", "title": title, "description": description}
            for name, title, description in SUMMARY_FIELDS
        },
        "required": [name for name, _, _ in SUMMARY_FIELDS],
    }
    tool = {
        "type": "function",
        "function": {
            "name": "generate_structured_output",
            "description": "Call this function to generate structured output required by the user.",
            "parameters": schema,
        },
    }
    return json.dumps([tool], ensure_ascii=False, separators=(",", ":"))


def render_compression_prompt(
    system: Sequence[Message], summary: str, messages: Sequence[Message], instruction: str
) -> str:
    """The compression call as one text: what AgentScope sends as messages plus the schema."""
    head = [*system, *([Message("user", summary)] if summary else [])]
    fields = "\n".join(
        f"- {name}: {description.replace(chr(10), ' ')}" for name, _, description in SUMMARY_FIELDS
    )
    return (
        f"{transcript([*head, *messages, Message('user', instruction)])}\n\n"
        "Call generate_structured_output: reply with one JSON object with these string "
        f"fields:\n{fields}"
    )


# -- the strategy ------------------------------------------------------------------------------------


class AgentScopeStrategy(Strategy[AgentScopeConfig]):
    name = "agentscope"
    summary = "AgentScope v2: structured summary at trigger_ratio, keep reserve_ratio recent, truncate big results."
    source = "agentscope-ai/agentscope src/agentscope/agent/_agent.py, _config.py"
    Config = AgentScopeConfig
    default_estimator = "agentscope"
    #: the ``release`` knob's values and what each reproduces (``ctxbench strategies``)
    releases: ClassVar[dict[str, str]] = release_summaries(RELEASES)

    def __init__(self, config: AgentScopeConfig | None = None) -> None:
        super().__init__(config)
        self.cfg = self.config
        #: ``state.summary``: the rendered summary shown after the system prompt
        self.summary_text = ""
        #: every compressed message so far (the session's offloaded context file)
        self.offloaded: list[Message] = []
        self.rules = self.cfg.rules
        self._whole: WholePrompt | None = None
        #: 2.0.11: the prompt length when an exception ended the reply (None: replying)
        self._ended_at: int | None = None

    # -- budget ---------------------------------------------------------------------------------
    def context_size(self, ctx: ReplayContext) -> int:
        return self.cfg.context_size if self.cfg.context_size is not None else ctx.window

    def budget(self, ctx: ReplayContext) -> int:
        return self.context_size(ctx)

    def meter(self, ctx: ReplayContext) -> Meter:
        """How the model counts a request: 2.0.11's whole-prompt rule when deciding with
        AgentScope's own estimate, else the estimator per message (any other estimator)."""
        if self.rules.whole_prompt and isinstance(ctx.estimator, AgentScopeCounter):
            if self._whole is None:
                self._whole = WholePrompt(ctx.tools)
            return self._whole
        return PerMessage(ctx.estimator, ctx.view.est_overhead)

    def prompt_tokens(self, ctx: ReplayContext) -> int:
        """``count_tokens(**_prepare_model_input())`` of the current prompt."""
        return self.meter(ctx).tokens(ctx.view.messages)

    # -- hooks ----------------------------------------------------------------------------------
    def on_tool_result(self, message: Message, ctx: ReplayContext) -> Message:
        kept, offloaded = split_tool_result(message, self.cfg.tool_result_limit, ctx.estimator)
        if not offloaded:
            return message
        offload_reminder = ""
        if self.cfg.offloads:
            stem = safe_component(message.tool_call_id or f"call{ctx.call}")
            path = ctx.write_file(
                f"offload/{safe_component(ctx.trace_id)}/tool_result-{stem}.txt",
                _blocks_bytes(offloaded),
            )
            offload_reminder = TOOL_RESULT_OFFLOAD_REMINDER.format(path=path)
        kept = append_reminder(kept, TRUNCATION_REMINDER.format(offload_reminder=offload_reminder))
        ctx.tool_result_changed("tool_result_limit", message, kept, note="tool result truncated")
        return kept

    def before_call(self, ctx: ReplayContext) -> None:
        if self._ended_at is not None:
            if not self._resume(ctx, self._ended_at):
                raise ReplyAborted("the reply ended at the exception above")
            self._ended_at = None
        first_iteration = _starts_reply(ctx.view.messages)  # before compression empties it
        self.limit_images(ctx)
        self.compress(ctx)
        self.inject_runtime_state(ctx, first_iteration)

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        """No reactive compaction; 2.0.11: the provider's error propagates out of ``reply()``
        (``ModelConfig.max_retries`` 0, no fallback model), ending the reply."""
        if self.rules.empty_context_aborts:
            self._ended_at = len(ctx.view.messages)
        return False

    def _resume(self, ctx: ReplayContext, ended_at: int) -> bool:
        """After an exception ended the reply, the recorded turns of that reply never reach
        the agent: the context is the one it had then, plus new user input (a new reply).
        Returns whether there is new input."""
        messages = list(ctx.view.messages)
        start = len(messages)
        while start > ended_at and messages[start - 1].role == "user":
            start -= 1
        ctx.view.replace([*messages[:ended_at], *messages[start:]])
        return start < len(messages)

    # -- the steps of a call ---------------------------------------------------------------------
    def limit_images(self, ctx: ReplayContext) -> None:
        """``_limit_context_images``: replace the oldest images beyond ``max_image_num``."""
        messages = list(ctx.view.messages)
        refs = [
            (i, j)
            for i, m in enumerate(messages)
            if m.role != "system"
            for j, p in enumerate(m.parts or ())
            if _is_image(p)
        ]
        excess = len(refs) - self.cfg.max_image_num
        if excess <= 0:
            return
        for i, j in refs[:excess]:
            parts = list(messages[i].parts or ())
            parts[j] = Part("text", self._image_reminder(parts[j], ctx))
            messages[i] = _with_parts(messages[i], parts)
        ctx.apply("image_limit", messages, note=f"{excess} image(s) replaced")

    def _image_reminder(self, part: Part, ctx: ReplayContext) -> str:
        raw_name = part.data.get("name")
        name = f"named '{raw_name}' " if isinstance(raw_name, str) and raw_name else ""
        url = part.url
        if not url.startswith(("http://", "https://")):
            url = self._offload_data_url(url, ctx) if self.cfg.offloads else ""
        if url:
            return IMAGE_OFFLOADED.format(name=name, url=url)
        return IMAGE_REMOVED.format(name=name)

    def _offload_data_url(self, url: str, ctx: ReplayContext) -> str:
        found = re.match(r"data:image/(\w+);base64,(.*)", url, re.S)
        if not found:
            return ""
        try:
            data = base64.b64decode(found.group(2), validate=False)
        except (binascii.Error, ValueError):
            return ""
        digest = hashlib.sha256(data).hexdigest()[:12]
        return ctx.write_file(
            f"offload/{safe_component(ctx.trace_id)}/image-{digest}.{found.group(1)}", data
        )

    def compress(self, ctx: ReplayContext) -> None:
        """``_compress_context_impl``."""
        size = self.context_size(ctx)
        threshold = self.cfg.trigger_ratio * size
        if self.prompt_tokens(ctx) < threshold:
            return
        system, head, context = self._parts(ctx.view.messages)
        if not context:
            error = (
                f"The system prompt {'and the compression summary ' if self.summary_text else ''}"
                f"exceed(s) the compression threshold ({threshold} tokens), cannot be compressed."
            )
            ctx.emit("strategy.error", strategy=self.name, error=error)
            if self.rules.empty_context_aborts:  # 2.0.11 raises RuntimeError out of the reply
                self._ended_at = len(ctx.view.messages)
                raise ReplyAborted(f"RuntimeError: {error}")
            return
        meter = self.meter(ctx)
        compress, reserve = split_context(head, context, self.cfg.reserve_ratio * size, meter)
        if not compress:
            compress, reserve = split_context(head, context, 0, meter)
        summary = self._summarize(system, compress, ctx)
        if summary is None:
            return
        if self.cfg.offloads:
            self.offloaded.extend(compress)
            path = ctx.write_file(
                f"offload/{safe_component(ctx.trace_id)}/context.jsonl",
                "".join(
                    json.dumps(m.to_dict(), ensure_ascii=False) + "\n" for m in self.offloaded
                ).encode("utf-8", "surrogatepass"),
            )
            reminder = CONTEXT_OFFLOAD_REMINDER.format(path=path)
            if reminder not in summary:
                summary += "\n" + reminder
        self.summary_text = summary
        ctx.apply(
            "compression",
            [*system, Message("user", summary, meta=dict(SUMMARY_MARK)), *reserve],
            note=f"{len(compress)} message(s) compressed, {len(reserve)} kept",
        )

    def _parts(
        self, messages: Sequence[Message]
    ) -> tuple[list[Message], list[Message], list[Message]]:
        """(system messages, system + summary as counted with every split, the context)."""
        system = [m for m in messages if m.role == "system"]
        summary = [m for m in messages if m.meta.get("agentscope") == "summary"]
        context = [
            m for m in messages if m.role != "system" and m.meta.get("agentscope") != "summary"
        ]
        return system, system + summary[-1:], context

    def _summarize(
        self, system: list[Message], compress: list[Message], ctx: ReplayContext
    ) -> str | None:
        """The new summary text, the truncation fallback, or None (state left unchanged)."""
        size = self.context_size(ctx)
        try:
            return self._structured_summary(system, compress, ctx, "compression")
        except SummarizerError as first:
            error: SummarizerError = first
            if self._request_tokens(system, compress, ctx) > size:
                start = len(compress)
                for i in range(1, len(compress) + 1):
                    start = i
                    if self._request_tokens(system, compress[i:], ctx) < (
                        size * self.cfg.trigger_ratio
                    ):
                        break
                try:
                    return self._structured_summary(
                        system, compress[start:], ctx, "compression_retry"
                    )
                except SummarizerError as second:
                    error = second
        if not self.cfg.compression_fallback_to_truncation:
            ctx.emit("strategy.error", strategy=self.name, error=f"{error.kind}: {error.message}")
            return None
        return self.summary_text or TRUNCATED_SUMMARY

    def _structured_summary(
        self, system: list[Message], messages: list[Message], ctx: ReplayContext, layer: str
    ) -> str:
        size = self.context_size(ctx)
        request = SummaryRequest(
            strategy=self.name,
            layer=layer,
            prompt=render_compression_prompt(system, self.summary_text, messages, self.cfg.prompt),
            messages=tuple(messages),
            sections=SUMMARY_SECTIONS,
            # the call's room: the band above trigger_ratio that AgentScope reserves for it
            max_tokens=max(1, round((1 - self.cfg.trigger_ratio) * size)),
            previous_summary=self.summary_text or None,
            key=ctx.request_key(layer),
        )
        fields = parse_summary_fields(ctx.summarize(request))
        return self.cfg.summary_template.format(**fields)

    def _request_tokens(
        self, system: list[Message], messages: list[Message], ctx: ReplayContext
    ) -> int:
        head = [*system, *([Message("user", self.summary_text)] if self.summary_text else [])]
        prompt = [*head, *messages, Message("user", self.cfg.prompt)]
        return ctx.estimator.count_prompt(prompt) + ctx.estimator.count(schema_tool_json())

    def inject_runtime_state(self, ctx: ReplayContext, first_iteration: bool) -> None:
        """``_inject_runtime_state``: the time (2.0.11: when no injection in the context records
        one, i.e. at the first call and after a compression removed it; the replay's clock never
        advances, so ``time_interval`` never elapses) and the context-length pre-warning (first
        iteration of a reply only), as ``<key>value</key>`` lines in the template."""
        if not self.cfg.inject_runtime_state:
            return
        injections: dict[str, str] = {}
        if self.rules.time_injection and not any(
            m.meta.get("agentscope") == "runtime_state" and "<current-time>" in m.content
            for m in ctx.view.messages
        ):
            injections["current-time"] = self.cfg.current_time
            injections["timezone"] = self.cfg.timezone
        if first_iteration:
            size = self.context_size(ctx)
            tokens = self.prompt_tokens(ctx)
            band = max(0.0, self.cfg.trigger_ratio - self.cfg.context_buffer_ratio)
            if tokens > band * size:
                injections["context-length"] = (
                    f"Your current context contains {tokens} tokens. When reaching "
                    f"{int(self.cfg.trigger_ratio * size)} tokens, your context will be compressed."
                )
        if not injections:
            return
        state = "\n".join(f"<{k}>{v}</{k}>" for k, v in injections.items())
        ctx.apply(
            "runtime_state",
            [
                *ctx.view.messages,
                Message(
                    "user",
                    self.cfg.state_template.replace("{runtime_state}", state),
                    meta=dict(HINT_MARK),
                ),
            ],
            note=", ".join(injections),
        )


def _last_turn(messages: Sequence[Message]) -> Message | None:
    """The last recorded non-system message (the strategy's own additions skipped)."""
    return next(
        (m for m in reversed(messages) if m.role != "system" and not m.meta.get("agentscope")),
        None,
    )


def _starts_reply(messages: Sequence[Message]) -> bool:
    """``cur_iter == 0``: the first call of a ``reply()``: the run's first call, recorded user
    input, or a turn after an answer without tool calls (that answer ended the reply)."""
    last = _last_turn(messages)
    return last is None or last.role == "user" or (last.role == "assistant" and not last.tool_calls)


def _blocks_bytes(blocks: Sequence[Part]) -> bytes:
    """Offloaded blocks as a file: text as is, other blocks as JSON lines."""
    pieces: list[str] = []
    for part in blocks:
        pieces.append(part.text if part.is_text else json.dumps(part.to_dict(), ensure_ascii=False))
    return "\n".join(pieces).encode("utf-8", "surrogatepass")


__all__ = [
    "AgentScopeConfig",
    "AgentScopeStrategy",
    "parse_summary_fields",
    "split_context",
    "split_tool_result",
]
