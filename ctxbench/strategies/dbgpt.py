"""``dbgpt``: DB-GPT's agent context management, the reference strategy.

Two releases of the same rules (the ``release`` knob): ``"0.8.2"`` (default) reproduces the
``dbgpt==0.8.2`` wheel as RELEASES.md reads it; ``"design"`` is the four layers as ``seeds/000``
and the docs describe them (the behaviour before the knob existed). See :data:`RELEASES`.

What 0.8.2 does differently (line numbers of the wheel): Layer 3 raises ``AttributeError`` on
``self.model_name`` (``manager.py:160``) before any summary is asked for, so with a summarizer
every attempt at >= error fails (a ``strategy.error`` event), the breaker trips after
``max_compact_failures`` and, checked before Layer 1, stops all compaction for the run
(``patch_model_name=true`` is the release with that line fixed: a failed summary then reads as
an empty one, which counts as a success); Layer 4 is unreachable (``thinking()`` re-raises the
provider error as ``ValueError``), so an overflowing call fails; the ReAct agent rebuilds its
prompt from memory at every call, so the manager runs on the uncompacted history each time and
its result serves that call only; rounds end only at ``Observation:`` user messages (a native
tool-calling history is one round: Layers 1 and 2 change nothing); Layer 1 ages rounds by the
ReAct loop counter of the reply; tool-result persistence has no window scaling and no per-turn
budget (``tool_result_budget_for_context_window``/``enforce_turn_budget`` are never called);
snapshots are ``<conv>/step_NNN_<action>.json`` with NNN the loop counter + 1 (failed steps write
none) and ``""`` for missing fields, and a persisted result gets no snapshot pointer;
``truncated_observation_max_chars`` is 500 through the core ``ContextBudgetConfig`` and 200
through the app/TOML (``entry_point``). Both releases keep a re-cut observation's snapshot path
(the message's ``snapshot_path``, DB-GPT's ``msg.context``).

Remaining divergences from the 0.8.2 agent: the system prompt's task-progress lines (about 19
tokens per step, ``role.py:212-240``) are not added (the recorded system prompt is used);
the manager sees the whole recorded history, as with the app's ``GptsMemory`` (the library's
default ``ShortTermMemory(buffer_size=5)`` is not reproduced); ``thinking()``'s three retries
with 10 s sleeps before it gives up are one attempt here; snapshot timestamps are null; the
engine emits ``context.status`` even when the budget is <= 0, where 0.8.2 skips it.

Source: eosphoros-ai/DB-GPT, ``packages/dbgpt-core/src/dbgpt/agent/core/context/`` (``budget.py``,
``compact.py``, ``manager.py``, ``storage.py``), ``agent/core/base_agent.py`` (Layer 4 retry) and
``docs/docs/agents/modules/context-management.md``; the design document is ``seeds/000``.

Rules reproduced:

- Budget: ``effective_budget = max_context_tokens - reserved_tokens``; ``ratio = used / budget``;
  states ``overflow`` (>= 1.0), ``critical`` (>= critical_threshold), ``error``, ``warning``,
  ``normal``. Counting is DB-GPT's own estimate by default (``dbgpt``: content only).
- Manager: count and emit ``context.status``; normal -> stop; breaker tripped -> stop before
  Layer 1; Layer 1 and Layer 2 at >= warning, Layer 3 at >= error (only with a summarizer),
  recounting and emitting ``context.status`` after each layer, stopping once the state is safe.
- Layer 1: observations (``Observation:`` user messages, and tool results) of rounds older
  than ``max_observation_age_rounds`` longer than ``max_chars + 30`` become
  ``content[:max_chars] + "... [truncated, full detail at: PATH]"`` (``"... [truncated]"`` with no
  snapshot); observations holding ``<persisted-output>`` are skipped.
- Layer 2: drop whole old rounds, keeping ``min_keep_recent_rounds`` and walking back until
  ``min_keep_tokens`` are kept (the round where the walk stops is counted, not kept).
- Layer 3: summarise all but the last ``min_keep_recent_rounds`` rounds with the six-heading
  prompt (``[role]: content[:3000]`` lines, ``max_new_tokens=2000``); the summary goes in as a
  user message ``[Context Summary of N earlier messages]`` between the system messages and the
  recent rounds. A failure counts toward the ``max_compact_failures`` breaker; success resets it.
- Layer 4: on a provider error containing ``context_too_long``, ``context_length_exceeded`` or
  ``maximum context length``, keep system messages + the last 2 rounds and retry once.
- Snapshots: every successful tool result gets ``op_snapshots/<conv>/step_NNN_<action>.json``
  (step, action, phase, action_intention, action_reason, thought, action_input, observation,
  timestamp, conv_id) and the observation gets ``\\n[Full detail available at: PATH]``.
- Tool-result persistence (ported from hermes): a result over the tool's threshold (100,000
  chars; ``read_file`` never) is saved to ``persisted_results/<conv>/<call>.txt`` and replaced by
  a ``<persisted-output>`` block with a 1,500-char preview; per turn, the largest results spill
  until the turn is under 200,000 chars; both scale to small windows (15% / 30% of
  ``window * 4`` chars, floors 8,000 / 16,000).

Where code and docs disagree, both are reachable: ``truncated_observation_max_chars`` defaults
to the documented 200 (the TOML section and docs); the core ``ContextBudgetConfig`` at some
commits uses 500. ``observation_age_from="loop_counter"`` reproduces ``base_agent.py``, which
passes the ReAct loop counter as ``current_round``; the default ``"view"`` ages rounds within
the current prompt, as documented. Snapshot ``timestamp`` is null (no clock in a replay).

Knobs (``[service.web.agent_context]`` keys first; ``None`` means "the run's value"):
max_context_tokens (None = the provider window), reserved_tokens (None = the run's --reserved),
warning_threshold 0.70, error_threshold 0.90, critical_threshold 0.95, min_keep_recent_rounds 3,
max_observation_age_rounds 5, truncated_observation_max_chars 200, min_keep_tokens 10000,
max_compact_failures 3; observation_age_from "view", snapshots True, persist_tool_results True,
tool_result_threshold 100000, turn_result_budget 200000, preview_size 1500, scale_to_window True,
layer4_max_retries 1.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar, Literal

from ctxbench.engine.context import ReplayContext, safe_component
from ctxbench.engine.provider import is_overflow_error
from ctxbench.errors import ProviderOverflowError, SummarizerError
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.releases import check_release, release_field, release_summaries
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import Message, rounds

DEFAULT_MAX_CONTEXT_TOKENS = 120_000

SUMMARY_PROMPT = """\
You are a context summarizer for a ReAct agent. Condense the conversation history \
into a structured summary. Be precise — preserve exact names, paths, values, and \
variable names.

## Conversation to summarize
{conversation_text}

## Output format (use exactly these headings)
1. Original Task: <one-line description>
2. Completed Steps: <one line per step, action + key result>
3. Current State: <what the agent currently knows>
4. Key Data: <important values, paths, variable names — must be exact>
5. Errors Encountered: <failures and how they were resolved, or "None">
6. Next Steps: <remaining work, or "None" if task is complete>
"""

SUMMARY_SECTIONS = (
    "1. Original Task",
    "2. Completed Steps",
    "3. Current State",
    "4. Key Data",
    "5. Errors Encountered",
    "6. Next Steps",
)

#: Substrings of the lower-cased provider error that trigger Layer 4 (base_agent.py).
LAYER4_MARKERS = ("context_too_long", "context_length_exceeded", "maximum context length")
#: Tools never persisted (read_file=inf prevents persist -> read -> persist loops).
PINNED_TOOLS = ("read_file",)

PERSISTED_OUTPUT_TAG = "<persisted-output>"
_POINTER_RE = re.compile(r"\[Full detail available at: ([^\]\n]+)\]")
_TRUNCATED_POINTER_RE = re.compile(r"\[truncated, full detail at: ([^\]\n]+)\]")
#: where a message keeps its snapshot path (DB-GPT's ``AgentMessage.context["snapshot_path"]``)
SNAPSHOT_PATH_KEY = "snapshot_path"
#: what 0.8.2 raises at manager.py:160 before any summary is asked for
MODEL_NAME_ERROR = "AttributeError: 'ContextManager' object has no attribute 'model_name'"
# Line starts match [ \t]*, not \s*: \s* would rescan every following blank line (quadratic).
_ACTION_RE = re.compile(r"^[ \t]*Action:\s*(.+)$", re.M)
_ACTION_INPUT_RE = re.compile(r"^[ \t]*Action Input:\s*(.*)\Z", re.M | re.S)
_THOUGHT_RE = re.compile(r"^[ \t]*Thought:\s*(.*?)(?=^[ \t]*Action:|\Z)", re.M | re.S)


@dataclass(frozen=True)
class DbgptRelease:
    """What one DB-GPT release does where releases differ (RELEASES.md, line numbers of the wheel)."""

    name: str
    #: the manager's result is kept in the prompt (False: the ReAct agent rebuilds its messages
    #: from memory at every call and compacts that fresh list, base_agent.py:1433-1451)
    persistent: bool
    #: ``manager.py:160`` reads the never-set ``self.model_name``: every Layer-3 attempt fails
    model_name_defect: bool
    #: Layer 4 catches the provider error (False: ``thinking()`` re-raises it as ``ValueError``)
    layer4: bool
    #: rounds end at tool results too (False: only at ``Observation:`` messages, compact.py:41-79)
    tool_rounds: bool
    #: a failed summary counts toward the breaker (False: the LLM client returns "" = success)
    summary_failure_counts: bool
    #: tool-result persistence scales to the window and keeps a per-turn budget
    persistence_budgets: bool
    #: snapshots as ``op_snapshots/<conv>/step_<global n>`` (False: ``<conv>/step_<n of the reply>``)
    design_snapshots: bool
    #: how Layer 1 ages rounds by default
    observation_age_from: Literal["view", "loop_counter"]
    #: what differs, for ``ctxbench strategies``
    summary: str


#: The ``release`` knob's values. "design" is seeds/000 and the docs (today's rules).
RELEASES: dict[str, DbgptRelease] = {
    "0.8.2": DbgptRelease(
        name="0.8.2",
        persistent=False,
        model_name_defect=True,
        layer4=False,
        tool_rounds=False,
        summary_failure_counts=False,
        persistence_budgets=False,
        design_snapshots=False,
        observation_age_from="loop_counter",
        summary=(
            "the dbgpt==0.8.2 wheel: Layer 3 always fails (model_name defect) and the breaker "
            "stops all compaction after max_compact_failures; Layer 4 unreachable; compaction "
            "recomputed on the fresh history at every call; rounds only at Observation:; "
            "persistence without window scaling or turn budget; step_NNN per reply"
        ),
    ),
    "design": DbgptRelease(
        name="design",
        persistent=True,
        model_name_defect=False,
        layer4=True,
        tool_rounds=True,
        summary_failure_counts=True,
        persistence_budgets=True,
        design_snapshots=True,
        observation_age_from="view",
        summary=(
            "the documented design: four working layers, a persistent view, rounds at tool "
            "results too, window-scaled persistence with a per-turn budget"
        ),
    ),
}
LATEST_RELEASE: Literal["0.8.2"] = "0.8.2"
#: ``truncated_observation_max_chars`` by entry point: the core ``ContextBudgetConfig`` (500,
#: budget.py:55) and the app/TOML path (200).
OBSERVATION_MAX_CHARS = {"core": 500, "app": 200}


@dataclass(frozen=True)
class DbgptConfig:
    release: Literal["0.8.2", "design"] = release_field(LATEST_RELEASE, RELEASES)
    max_context_tokens: int | None = field(
        default=None, metadata={"help": "model window (None = the provider window)"}
    )
    reserved_tokens: int | None = field(
        default=None, metadata={"help": "output reservation (None = the run's --reserved)"}
    )
    warning_threshold: float = 0.70
    error_threshold: float = 0.90
    critical_threshold: float = 0.95
    min_keep_recent_rounds: int = 3
    max_observation_age_rounds: int = 5
    truncated_observation_max_chars: int | None = field(
        default=None, metadata={"help": "None = the entry point's default (app 200, core 500)"}
    )
    entry_point: Literal["app", "core"] = field(
        default="app",
        metadata={"help": "'app' = the TOML/app path, 'core' = ContextBudgetConfig()"},
    )
    min_keep_tokens: int = 10_000
    max_compact_failures: int = 3
    observation_age_from: Literal["view", "loop_counter"] | None = field(
        default=None,
        metadata={
            "help": "None = the release's; 'loop_counter' = base_agent.py's current_retry_counter"
        },
    )
    patch_model_name: bool = field(
        default=False, metadata={"help": "0.8.2 with the manager.py:160 model_name defect fixed"}
    )
    snapshots: bool = True
    persist_tool_results: bool = True
    tool_result_threshold: int = 100_000
    turn_result_budget: int = 200_000
    preview_size: int = 1_500
    scale_to_window: bool | None = field(
        default=None, metadata={"help": "None = the release's (design: True, 0.8.2: False)"}
    )
    layer4_max_retries: int = 1

    def __post_init__(self) -> None:
        check_release(self.release, RELEASES)
        if not 0 < self.warning_threshold <= self.error_threshold <= self.critical_threshold <= 1.0:
            raise ValueError(
                "thresholds must satisfy 0 < warning_threshold <= error_threshold <= critical_threshold <= 1 "
                f"(got {self.warning_threshold}, {self.error_threshold}, {self.critical_threshold})"
            )
        for name in (
            "min_keep_recent_rounds",
            "max_observation_age_rounds",
            "min_keep_tokens",
            "max_compact_failures",
            "preview_size",
            "layer4_max_retries",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, not {getattr(self, name)}")
        if (
            self.truncated_observation_max_chars is not None
            and self.truncated_observation_max_chars < 0
        ):
            raise ValueError(
                f"truncated_observation_max_chars must be >= 0, not {self.truncated_observation_max_chars}"
            )

    @property
    def rules(self) -> DbgptRelease:
        return RELEASES[self.release]

    @property
    def observation_max_chars(self) -> int:
        if self.truncated_observation_max_chars is not None:
            return self.truncated_observation_max_chars
        return OBSERVATION_MAX_CHARS[self.entry_point]

    @property
    def age_from(self) -> str:
        return self.observation_age_from or self.rules.observation_age_from

    @property
    def scales_to_window(self) -> bool:
        if self.scale_to_window is not None:
            return self.scale_to_window
        return self.rules.persistence_budgets


def _is_observation(message: Message, rules: DbgptRelease) -> bool:
    """An observation Layer 1 may cut: ``Observation:`` user messages (0.8.2: only those,
    compact.py:41-48), and native tool results by the design."""
    return message.is_observation or (rules.tool_rounds and message.role == "tool")


def manager_rounds(messages: Sequence[Message], rules: DbgptRelease) -> list[tuple[int, ...]]:
    """The manager's rounds as index tuples, system messages excluded.

    0.8.2 (``_detect_round_boundaries``) ends a round only at an ``Observation:`` message, so a
    native tool-calling history is one round; the design ends rounds at tool results too (the
    segmentation of :func:`ctxbench.trace.rounds`).
    """
    if rules.tool_rounds:
        return [r.indices for r in rounds(messages)]
    out: list[tuple[int, ...]] = []
    current: list[int] = []
    for i, msg in enumerate(messages):
        if msg.role == "system":
            continue
        current.append(i)
        if msg.is_observation:
            out.append(tuple(current))
            current = []
    if current:
        out.append(tuple(current))
    return out


def generate_preview(content: str, max_chars: int) -> tuple[str, bool]:
    """Cut at the last newline within ``max_chars`` if it lies past half (storage.py)."""
    if len(content) <= max_chars:
        return content, False
    truncated = content[:max_chars]
    last_nl = truncated.rfind("\n")
    if last_nl > max_chars // 2:
        truncated = truncated[: last_nl + 1]
    return truncated, True


def persisted_block(preview: str, has_more: bool, original_size: int, file_path: str) -> str:
    """The ``<persisted-output>`` replacement text (storage.py ``_build_persisted_message``)."""
    size_kb = original_size / 1024
    size_str = f"{size_kb / 1024:.1f} MB" if size_kb >= 1024 else f"{size_kb:.1f} KB"
    text = f"{PERSISTED_OUTPUT_TAG}\n"
    text += f"This tool result was too large ({original_size:,} characters, {size_str}).\n"
    text += f"Full output saved to: {file_path}\n"
    text += "Use the read_file tool with this file path to access specific sections.\n\n"
    text += f"Preview (first {len(preview)} chars):\n{preview}"
    if has_more:
        text += "\n..."
    return text + "\n</persisted-output>"


class DbgptStrategy(Strategy[DbgptConfig]):
    name = "dbgpt"
    summary = "DB-GPT agent context management: 5 states, layers 1-4, snapshots."
    source = "eosphoros-ai/DB-GPT packages/dbgpt-core/src/dbgpt/agent/core/context/"
    Config = DbgptConfig
    default_estimator = "dbgpt"
    #: the ``release`` knob's values and what each reproduces (``ctxbench strategies``)
    releases: ClassVar[dict[str, str]] = release_summaries(RELEASES)

    def __init__(self, config: DbgptConfig | None = None) -> None:
        super().__init__(config)
        self.cfg = self.config
        self.rules = self.cfg.rules
        self.compact_failures = 0
        self.step = 0
        self.layer4_retries = 0
        # 0.8.2's rebuilt history: the uncompacted messages, and the prompt last built from them
        self._history: list[Message] = []
        self._built: tuple[Message, ...] = ()
        #: the call that started the current reply (the ReAct loop's retry counter is 0 there);
        #: the design counts from the first call
        self._reply_start = 0

    # -- budget -----------------------------------------------------------------------------------
    def max_context(self, ctx: ReplayContext) -> int:
        value = self.cfg.max_context_tokens
        if value is None:
            return ctx.window
        return value if value > 0 else DEFAULT_MAX_CONTEXT_TOKENS

    def budget(self, ctx: ReplayContext) -> int:
        reserved = ctx.reserved if self.cfg.reserved_tokens is None else self.cfg.reserved_tokens
        return self.max_context(ctx) - reserved

    def state_thresholds(self) -> tuple[tuple[float, str], ...]:
        return (
            (1.0, "overflow"),
            (self.cfg.critical_threshold, "critical"),
            (self.cfg.error_threshold, "error"),
            (self.cfg.warning_threshold, "warning"),
        )

    def _state(self, ctx: ReplayContext) -> str:
        budget = self.budget(ctx)
        ratio = ctx.view.estimated_tokens / budget if budget > 0 else float("inf")
        return self.state_of(ratio, budget)

    @property
    def breaker_tripped(self) -> bool:
        return self.compact_failures >= self.cfg.max_compact_failures

    # -- manager flow -----------------------------------------------------------------------------
    def before_call(self, ctx: ReplayContext) -> None:
        self.layer4_retries = 0
        if not self.rules.persistent:
            self._track_reply(ctx)
            self._rebuild(ctx)
        try:
            self._manage(ctx)
        finally:
            self._built = ctx.view.messages

    def _track_reply(self, ctx: ReplayContext) -> None:
        """A real user message since the last call starts a new reply (retry counter 0)."""
        new = ctx.view.messages[len(self._built) :] if self._prefix_kept(ctx) else ctx.view.messages
        if any(m.role == "user" and not m.is_observation for m in new):
            self._reply_start = ctx.call

    def _prefix_kept(self, ctx: ReplayContext) -> bool:
        view = ctx.view.messages
        n = len(self._built)
        return len(view) >= n and all(map(operator.is_, view[:n], self._built))

    def _rebuild(self, ctx: ReplayContext) -> None:
        """0.8.2: the agent builds the prompt from memory (the uncompacted history plus what
        arrived since the last call), so last call's compaction is gone. The view is set to that
        history without a compaction event: nothing was compacted, the agent just forgot."""
        if self._prefix_kept(ctx):
            self._history = [*self._history, *ctx.view.messages[len(self._built) :]]
        else:
            self._history = list(ctx.view.messages)
        if len(self._history) != len(ctx.view) or not all(
            map(operator.is_, self._history, ctx.view.messages)
        ):
            ctx.view.replace(self._history)

    def _manage(self, ctx: ReplayContext) -> None:
        """``ContextManager.manage_context`` (manager.py:97-168)."""
        state = self._state(ctx)
        if state == "normal" or self.breaker_tripped:
            return
        if _at_least(state, "warning"):
            ctx.apply("layer1", self.layer1(ctx.view.messages, self._current_round(ctx)))
            state = self._state(ctx)
        if _at_least(state, "warning"):
            ctx.apply("layer2", self.layer2(ctx.view.messages, ctx))
            state = self._state(ctx)
        if _at_least(state, "error") and ctx.summarizer is not None:
            if self.rules.model_name_defect and not self.cfg.patch_model_name:
                self.compact_failures += 1
                ctx.emit(
                    "strategy.error", strategy=self.name, layer="layer3", error=MODEL_NAME_ERROR
                )
                return
            try:
                compacted = self.layer3(ctx.view.messages, ctx)
            except SummarizerError as error:
                if self.rules.summary_failure_counts or error.kind == "crash":
                    self.compact_failures += 1
                    return
                compacted = list(ctx.view.messages)  # 0.8.2: "" from the client is a success
            self.compact_failures = 0
            ctx.apply("layer3", compacted)

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        if not self.rules.layer4:
            return False
        lowered = str(error).lower()
        if not any(marker in lowered for marker in LAYER4_MARKERS):
            return False
        if self.layer4_retries >= self.cfg.layer4_max_retries:
            return False
        self.layer4_retries += 1
        ctx.apply("layer4", self.layer4(ctx.view.messages))
        self._built = ctx.view.messages
        return True

    def _current_round(self, ctx: ReplayContext) -> int:
        if self.cfg.age_from == "loop_counter":
            return ctx.call - self._reply_start
        return len(manager_rounds(ctx.view.messages, self.rules))

    # -- layers (pure functions of the message list) -------------------------------------------------
    def layer1(self, messages: tuple[Message, ...], current_round: int) -> list[Message]:
        """Truncate observations of rounds older than ``max_observation_age_rounds``.

        The snapshot path comes from the message's ``snapshot_path`` (DB-GPT's
        ``msg.context["snapshot_path"]``) or its ``[Full detail available at: ...]`` pointer,
        so cutting an already cut observation keeps it (both releases).
        """
        cutoff = current_round - self.cfg.max_observation_age_rounds
        max_chars = self.cfg.observation_max_chars
        out = list(messages)
        for round_index, indices in enumerate(manager_rounds(messages, self.rules)):
            if round_index >= cutoff:
                break
            for i in indices:
                msg = out[i]
                content = msg.content
                if (
                    not _is_observation(msg, self.rules)
                    or PERSISTED_OUTPUT_TAG in content
                    or len(content) <= max_chars + 30
                ):
                    continue
                path = snapshot_path(msg)
                suffix = f"... [truncated, full detail at: {path}]" if path else "... [truncated]"
                out[i] = replace(
                    msg.with_text(content[:max_chars] + suffix), meta=_with_path(msg, path)
                )
        return out

    def layer2(self, messages: tuple[Message, ...], ctx: ReplayContext) -> list[Message]:
        """Drop whole old rounds; keep ``min_keep_recent_rounds`` and ``min_keep_tokens``."""
        system = [m for m in messages if m.role == "system"]
        conv = [m for m in messages if m.role != "system"]
        segs = manager_rounds(conv, self.rules)
        if not conv or len(segs) <= self.cfg.min_keep_recent_rounds:
            return list(messages)
        keep_from = len(segs) - self.cfg.min_keep_recent_rounds
        kept_tokens = 0
        for r in range(len(segs) - 1, -1, -1):
            kept_tokens += sum(ctx.estimator.count_message(conv[i]) for i in segs[r])
            if r < keep_from and kept_tokens >= self.cfg.min_keep_tokens:
                break
            keep_from = min(keep_from, r)
        if keep_from <= 0:
            return list(messages)
        keep = {i for seg in segs[keep_from:] for i in seg}
        return system + [m for i, m in enumerate(conv) if i in keep]

    def layer3(self, messages: tuple[Message, ...], ctx: ReplayContext) -> list[Message]:
        """Summarise old rounds into one user message; raises SummarizerError on failure."""
        system = [m for m in messages if m.role == "system"]
        conv = [m for m in messages if m.role != "system"]
        segs = manager_rounds(conv, self.rules)
        keep_rounds = min(self.cfg.min_keep_recent_rounds, len(segs))
        if not conv or keep_rounds >= len(segs):
            return list(messages)
        old_idx = sorted(i for seg in segs[: len(segs) - keep_rounds] for i in seg)
        old_set = set(old_idx)
        old = [conv[i] for i in old_idx]
        recent = [m for i, m in enumerate(conv) if i not in old_set]
        lines = [f"[{_dbgpt_role(m.role)}]: {m.content[:3000]}" for m in old]
        request = SummaryRequest(
            strategy=self.name,
            layer="layer3",
            prompt=SUMMARY_PROMPT.format(conversation_text="\n".join(lines)),
            messages=tuple(old),
            sections=SUMMARY_SECTIONS,
            max_tokens=2000,
            key=ctx.request_key("layer3"),
        )
        summary = ctx.summarize(request)
        note = Message("user", f"[Context Summary of {len(old)} earlier messages]\n\n{summary}")
        return [*system, note, *recent]

    def layer4(self, messages: tuple[Message, ...]) -> list[Message]:
        """Keep system messages and the last 2 rounds."""
        system = [m for m in messages if m.role == "system"]
        conv = [m for m in messages if m.role != "system"]
        segs = manager_rounds(conv, self.rules)
        keep_rounds = min(2, len(segs))
        if not conv or keep_rounds >= len(segs):
            return list(messages)
        keep = {i for seg in segs[len(segs) - keep_rounds :] for i in seg}
        return system + [m for i, m in enumerate(conv) if i in keep]

    # -- tool results: persistence, snapshots and pointers ----------------------------------------------
    def on_tool_results(self, messages: list[Message], ctx: ReplayContext) -> list[Message]:
        out = [self._persist(m, ctx, None) for m in messages]
        per_turn = self._limits(ctx)[1]
        if (
            self.cfg.persist_tool_results
            and self.rules.persistence_budgets
            and sum(len(m.content) for m in out) > per_turn
        ):
            total = sum(len(m.content) for m in out)
            order = sorted(
                (i for i, m in enumerate(out) if PERSISTED_OUTPUT_TAG not in m.content),
                key=lambda i: (-len(out[i].content), i),
            )
            for i in order:
                if total <= per_turn:
                    break
                before = len(out[i].content)
                out[i] = self._persist(out[i], ctx, 0)
                total += len(out[i].content) - before
        result = []
        for original, kept in zip(messages, out):
            kept = self._snapshot(kept, ctx)
            if (
                PERSISTED_OUTPUT_TAG in kept.content
                and PERSISTED_OUTPUT_TAG not in original.content
            ):
                ctx.tool_result_changed("persist", original, kept, note="tool result persisted")
            result.append(kept)
        return result

    def _limits(self, ctx: ReplayContext) -> tuple[float, float]:
        per_result, per_turn = (
            float(self.cfg.tool_result_threshold),
            float(self.cfg.turn_result_budget),
        )
        if self.cfg.scales_to_window:
            window_chars = self.max_context(ctx) * 4
            per_result = max(8_000, min(int(window_chars * 0.15), per_result))
            per_turn = max(16_000, min(int(window_chars * 0.30), per_turn))
        return per_result, per_turn

    def _tool_name(self, message: Message, ctx: ReplayContext) -> tuple[str, str, str]:
        """(action, action_input, thought) of the call a result answers."""
        assistant = next((m for m in reversed(ctx.view.messages) if m.role == "assistant"), None)
        if assistant is None:
            return message.name or "tool", "", ""
        if message.role == "tool":
            call = next((c for c in assistant.tool_calls if c.id == message.tool_call_id), None)
            action = call.name if call else (message.name or "tool")
            return action, call.arguments if call else "", assistant.content
        action_m = _ACTION_RE.search(assistant.content)
        input_m = _ACTION_INPUT_RE.search(assistant.content)
        thought_m = _THOUGHT_RE.search(assistant.content)
        return (
            action_m.group(1).strip() if action_m else "action",
            input_m.group(1).strip() if input_m else "",
            thought_m.group(1).strip() if thought_m else assistant.content,
        )

    def _persist(self, message: Message, ctx: ReplayContext, threshold: float | None) -> Message:
        if not self.cfg.persist_tool_results or _failed(message):
            return message
        action, _, _ = self._tool_name(message, ctx)
        if action in PINNED_TOOLS:
            return message
        limit = self._limits(ctx)[0] if threshold is None else threshold
        content = message.content
        if len(content) <= limit or PERSISTED_OUTPUT_TAG in content:
            return message
        stem = safe_component(message.tool_call_id or f"{action}_{self.step + 1:03d}")
        path = ctx.write_file(
            f"persisted_results/{safe_component(ctx.trace_id)}/{stem}.txt",
            content.encode("utf-8", "surrogatepass"),
        )
        preview, has_more = generate_preview(content, self.cfg.preview_size)
        block = persisted_block(preview, has_more, len(content), path)
        if message.is_observation:
            block = "Observation: " + block
        return message.with_text(block)

    def _snapshot(self, message: Message, ctx: ReplayContext) -> Message:
        """``Role._write_op_snapshot`` (role.py:408-470) and the pointer of react_agent.py:335-350."""
        if not self.cfg.snapshots or _failed(message):
            return message
        action, action_input, thought = self._tool_name(message, ctx)
        conv_id = safe_component(ctx.trace_id)
        observation = message.content
        if message.is_observation:
            observation = observation.lstrip()[len("Observation:") :].lstrip()
        if self.rules.design_snapshots:
            self.step += 1
            step, missing = self.step, None
            relative = f"op_snapshots/{conv_id}/step_{step:03d}_{safe_component(action)}.json"
        else:
            # the ReAct retry counter + 1; failed steps write nothing, so numbers skip
            step, missing = ctx.call - self._reply_start, ""
            safe_action = "".join(c if c.isalnum() or c in "-_" else "_" for c in action)
            relative = f"{conv_id}/step_{step:03d}_{safe_action}.json"
        payload = {
            "step": step,
            "action": action,
            "phase": missing,
            "action_intention": missing,
            "action_reason": missing,
            "thought": thought,
            "action_input": action_input,
            "observation": observation,
            "timestamp": None,
            "conv_id": ctx.trace_id,
        }
        path = ctx.write_json(relative, payload)
        meta = _with_path(message, path)
        if not self.rules.design_snapshots and PERSISTED_OUTPUT_TAG in message.content:
            return replace(message, meta=meta)
        return replace(
            message.with_text(f"{message.content}\n[Full detail available at: {path}]"), meta=meta
        )


def snapshot_path(message: Message) -> str | None:
    """The snapshot a (maybe already cut) observation points to."""
    path = message.meta.get(SNAPSHOT_PATH_KEY)
    if isinstance(path, str) and path:
        return path
    found = _POINTER_RE.search(message.content) or _TRUNCATED_POINTER_RE.search(message.content)
    return found.group(1) if found else None


def _with_path(message: Message, path: str | None) -> dict[str, object]:
    meta = dict(message.meta)
    if path:
        meta[SNAPSHOT_PATH_KEY] = path
    return meta


def _failed(message: Message) -> bool:
    return bool(message.meta.get("is_error")) or message.meta.get("success") is False


_ORDER = ("normal", "warning", "error", "critical", "overflow")


def _at_least(state: str, floor: str) -> bool:
    return _ORDER.index(state) >= _ORDER.index(floor)


def _dbgpt_role(role: str) -> str:
    return {"user": "human", "assistant": "ai"}.get(role, role)


__all__ = ["DbgptConfig", "DbgptStrategy", "is_overflow_error"]
