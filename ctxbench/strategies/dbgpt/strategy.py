"""``DbgptStrategy``: DB-GPT's ``ContextManager`` as the agent loop drives it (the manager
flow, the four layers, tool-result persistence and snapshots); see the package docstring."""

from __future__ import annotations

import operator
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from itertools import compress, count, repeat
from typing import ClassVar

from ctxbench.engine import events as ev
from ctxbench.engine.caches import current
from ctxbench.engine.context import ReplayContext, json_file, safe_component
from ctxbench.engine.prompt import PROMPTS
from ctxbench.engine.strategy import Starter
from ctxbench.errors import ProviderOverflowError, SummarizerError
from ctxbench.memo import ContentMemo, ObjectMemo, shared_memo
from ctxbench.strategies.base import ReplyAborted, Strategy
from ctxbench.strategies.dbgpt.config import (
    DEFAULT_MAX_CONTEXT_TOKENS,
    RELEASES,
    DbgptConfig,
    DbgptRelease,
)
from ctxbench.strategies.dbgpt.ledger import ENDS_ROUND as _ENDS_ROUND
from ctxbench.strategies.dbgpt.ledger import OTHER as _OTHER
from ctxbench.strategies.dbgpt.ledger import SYSTEM as _SYSTEM
from ctxbench.strategies.dbgpt.ledger import HistoryLedger, Shape
from ctxbench.strategies.dbgpt.memory import (
    OBSERVATION_PREFIX,
    PERSISTED_OUTPUT_TAG,
    failed,
    from_stored,
    generate_preview,
    is_observation,
    manager_rounds,
    persisted_block,
    progress_head,
    progress_line,
    snapshot_path,
    stored,
    task_progress,
    with_path,
)
from ctxbench.strategies.releases import release_summaries
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import Message

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
#: what 0.8.2 raises at manager.py:160 before any summary is asked for
MODEL_NAME_ERROR = "AttributeError: 'ContextManager' object has no attribute 'model_name'"
# Line starts match [ \t]*, not \s*: \s* would rescan every following blank line (quadratic).
_ACTION_RE = re.compile(r"^[ \t]*Action:\s*(.+)$", re.M)
_ACTION_INPUT_RE = re.compile(r"^[ \t]*Action Input:\s*(.*)\Z", re.M | re.S)
_THOUGHT_RE = re.compile(r"^[ \t]*Thought:\s*(.*?)(?=^[ \t]*Action:|\Z)", re.M | re.S)


class DbgptStrategy(Strategy[DbgptConfig]):
    name = "dbgpt"
    summary = "DB-GPT agent context management: 5 states, layers 1-4, snapshots."
    source = "eosphoros-ai/DB-GPT packages/dbgpt-core/src/dbgpt/agent/core/context/"
    Config = DbgptConfig
    default_estimator = "dbgpt"
    starter = Starter(
        2,
        "DB-GPT's five states and layers 1-4",
        "{ warning_threshold = [0.6, 0.7] }  # `ctxbench strategies`",
    )
    native_section = "service.web.agent_context"
    #: the ``release`` knob's values and what each reproduces (``ctxbench strategies``)
    releases: ClassVar[dict[str, str]] = release_summaries(RELEASES)
    failure_hints: ClassVar[Mapping[str, str]] = {
        MODEL_NAME_ERROR: (
            "DB-GPT 0.8.2's Layer 3 raises at manager.py:160 on every attempt, and after "
            "max_compact_failures its breaker stops all compaction for the run; "
            "`--set patch_model_name=true` replays the release with that line fixed, "
            "`--set release=design` the four layers as designed"
        )
    }

    def __init__(self, config: DbgptConfig | None = None) -> None:
        super().__init__(config)
        self.cfg = self.config
        self.rules = self.cfg.rules
        self.compact_failures = 0
        self.layer4_retries = 0
        #: the manager's count of a message (set at the first count, from the estimator)
        self._count: ObjectMemo[Message, int] | None = None
        #: Layer 1's cut of a message of an old round (0.8.2 cuts the same history at every
        #: call), and what a message is to the manager's rounds (system, a round's end, or
        #: neither): the process's, as a sweep's replays ask them of the same messages
        max_chars = self.cfg.observation_max_chars
        self._cuts: ObjectMemo[Message, Message] = shared_memo(
            ("dbgpt.cut", self.rules, max_chars),
            partial(_cut, rules=self.rules, max_chars=max_chars),
        )
        self._kinds: ObjectMemo[Message, int] = shared_memo(
            ("dbgpt.kind", self.rules), partial(_kind, rules=self.rules)
        )
        #: the agent's ``_task_progress``: a line per successful step (step, action, snapshot),
        #: and the token naming those lines (:func:`_progressed`)
        self._progress_lines: list[str] = []
        self._progress_token = 0
        # 0.8.2's rebuilt history (the uncompacted messages, with what the manager asks of
        # them; set at the first rebuild) and the prompt last built from it
        self._ledger: HistoryLedger | None = None
        self._built: tuple[Message, ...] = ()
        #: the last prompt the manager counted, and its count (asked again of the same prompt)
        self._last_count: tuple[Sequence[Message], int] = ((), 0)
        #: the call that started the current reply (the ReAct loop's retry counter is 0 there);
        #: the design counts from the first call
        self._reply_start = 0

    def sends_tool_roles(self) -> bool:
        """0.8.2's ReAct agent sends its memory as text rounds (``Thought`` / ``Action`` /
        ``Observation:`` turns): no tool roles reach the provider, so a round Layer 2 cut
        between two parallel results is no pairing error there."""
        return not self.rules.react_memory

    def keeps_pairs(self) -> bool:
        """Rounds end at every result in 0.8.2, so Layer 2 may keep a result without its call
        in the native view (the text the provider gets has no pairs to break)."""
        return not self.rules.react_memory

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

    def _state(self, messages: Sequence[Message], ctx: ReplayContext) -> str:
        """The manager's state of the prompt ``messages``."""
        return self._state_at(self._used(messages, ctx), ctx)

    def _state_at(self, used: int, ctx: ReplayContext) -> str:
        budget = self.budget(ctx)
        ratio = used / budget if budget > 0 else float("inf")
        return self.state_of(ratio, budget)

    def _used(self, messages: Sequence[Message], ctx: ReplayContext) -> int:
        """The manager's count of the prompt ``messages``."""
        known, used = self._last_count
        if known is messages or (
            len(known) == len(messages) and all(map(operator.is_, known, messages))
        ):
            return used
        if self.rules.react_memory:
            used = sum(self._counts(self._managed(messages)[0], ctx))
        else:
            used = ctx.view.est_overhead + sum(self._counts(messages, ctx))
        self._last_count = (messages, used)
        return used

    def _counts(self, messages: Sequence[Message], ctx: ReplayContext) -> list[int]:
        """``count_messages([msg])`` of each message: 0.8.2 counts the stored form (the ReAct
        text)."""
        return self._count_memo(ctx).many(messages)

    def _count_memo(self, ctx: ReplayContext) -> ObjectMemo[Message, int]:
        """The memo of :meth:`_counts` (the process's, for this estimator and memory form)."""
        if self._count is None:
            estimator, react = ctx.estimator, self.rules.react_memory
            self._count = shared_memo(
                ("dbgpt.count", estimator, react),
                (lambda m: estimator.count_message(stored(m)))
                if react
                else estimator.count_message,
            )
        return self._count

    def _round_ends(self, messages: Sequence[Message], kinds: list[int] | None = None) -> list[int]:
        """The index of each of the manager's rounds' last message (an unfinished last round
        included), in order. Every round is a run of the messages, system ones aside, so
        this is all Layers 1 and 2 need of :func:`manager_rounds`. 0.8.2's rounds end at
        observations, found in C but for messages never seen before. ``kinds``: the
        messages' :meth:`_kind_of`, when known."""
        if self.rules.tool_rounds:
            return [r[-1] for r in manager_rounds(messages, self.rules)]
        if kinds is None:
            kinds = self._kinds.many(messages)
        ends = list(compress(count(), map(operator.eq, kinds, repeat(_ENDS_ROUND))))
        last = ends[-1] if ends else -1
        if _OTHER in kinds[last + 1 :]:
            ends.append(len(kinds) - 1 - kinds[::-1].index(_OTHER))
        return ends

    def _managed(self, messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
        """(what the manager sees, the current question). 0.8.2: ``_load_thinking_messages``
        appends the user prompt after ``manage_context`` (base_agent.py:1433-1451)."""
        out = list(messages)
        if (
            self.rules.react_memory
            and out
            and out[-1].role == "user"
            and not out[-1].is_observation
        ):
            return out[:-1], out[-1:]
        return out, []

    @property
    def breaker_tripped(self) -> bool:
        return self.compact_failures >= self.cfg.max_compact_failures

    # -- manager flow -----------------------------------------------------------------------------
    def before_call(self, ctx: ReplayContext) -> None:
        self.layer4_retries = 0
        steps: list[tuple[str, Sequence[Message]]] | None = None
        if not self.rules.persistent:
            self._track_reply(ctx)
            prompt, sources, shape = self._rebuild(ctx)
            steps = self._cheap_layers(prompt, ctx, shape)
            if self._repeats_last(prompt, steps, ctx):
                self._built = ctx.view.messages
                return
            ctx.reassemble(prompt, sources)
        try:
            self._manage(ctx, steps)
        finally:
            self._built = ctx.view.messages

    def _repeats_last(
        self,
        prompt: Sequence[Message],
        steps: list[tuple[str, Sequence[Message]]],
        ctx: ReplayContext,
    ) -> bool:
        """The rebuilt memory, managed, gives again the prompt the model saw last (plus what
        arrived since), and no summary is due: nothing changed for the model, so nothing is
        recorded (the rule the shipped adaptor applies to the release's own prompt)."""
        final = steps[-1][1] if steps else prompt
        return ctx.view.shows(final) and not self._summary_due(final, ctx)

    def _track_reply(self, ctx: ReplayContext) -> None:
        """A real user message since the last call starts a new reply (retry counter 0)."""
        new = ctx.view.messages[len(self._built) :] if self._prefix_kept(ctx) else ctx.view.messages
        if any(m.role == "user" and not m.is_observation for m in new):
            self._reply_start = ctx.call

    def _prefix_kept(self, ctx: ReplayContext) -> bool:
        view = ctx.view.messages
        n = len(self._built)
        return len(view) >= n and all(map(operator.is_, view[:n], self._built))

    def _rebuild(
        self, ctx: ReplayContext
    ) -> tuple[Sequence[Message], Sequence[Message | None], Shape | None]:
        """0.8.2: the agent builds the prompt from memory (the uncompacted history plus what
        arrived since the last call), so last call's compaction is gone. The view is set to that
        history without a compaction event (``ctx.reassemble``): nothing was compacted, the
        agent just forgot. The system prompt carries the task progress so far
        (``role.py:212-240``). Returns the prompt, the message each entry stands for, and
        the prompt's shape for the ledger."""
        ledger = self._ledger_of(ctx)
        if self._prefix_kept(ctx):
            ledger.extend(ctx.view.messages[len(self._built) :])
        else:
            ledger.reset(ctx.view.messages)
        head = self._progress_head(ledger) if self.rules.react_memory else None
        n, first = len(ledger), ledger.first_system
        # the history is what each rebuilt message stands for (but a new system prompt)
        remembered = PROMPTS.get(("dbgpt.history", ledger.token), lambda: ledger.messages)
        if head is None:
            return remembered, remembered, self._shape(remembered, n, first == 0)
        if first is None:
            prompt = PROMPTS.get(
                ("dbgpt.rebuilt", ledger.token, id(head)), lambda: [head, *ledger.messages]
            )
            return prompt, [None, *remembered], self._shape(prompt, n, False)
        prompt = PROMPTS.get(
            ("dbgpt.rebuilt", ledger.token, id(head)),
            lambda: [*remembered[:first], head, *remembered[first + 1 :]],
        )
        return prompt, remembered, self._shape(prompt, n, first == 0)

    def _progress_head(self, ledger: HistoryLedger) -> Message | None:
        """The memory's first system prompt with the task progress so far (None without
        progress): one object for the same system prompt and lines in the sweep's caches
        (a prompt of its table, weighed by its text, so the heads of a long run, each a line
        longer than the last, go with the prompts that hold them), so a sweep's replays
        rebuild the same prompt."""
        if not self._progress_lines:
            return None
        at = ledger.first_system
        system = None if at is None else ledger[at]
        lines = self._progress_lines

        def build() -> list[Message]:
            head = progress_head(system, task_progress(lines) or "")
            return [head] if system is None else [head, system]

        # the prompt holds the system prompt, so its id stays its own while the key is known
        key = ("dbgpt.head", id(system), self._progress_token)
        return PROMPTS.get(key, build, _head_size)[0]

    def _ledger_of(self, ctx: ReplayContext) -> HistoryLedger:
        if self._ledger is None:
            # the memos' own methods: a closure over the strategy and the context would make
            # a cycle that keeps a finished replay (and its events) alive until a collection
            self._ledger = HistoryLedger(
                self._count_memo(ctx).many,
                self._kinds.many,
                self._cuts.many,
                key=(self.rules, self.cfg.observation_max_chars, ctx.estimator),
            )
        return self._ledger

    def _shape_of(self, prompt: Sequence[Message], history: Sequence[Message]) -> Shape | None:
        """``prompt`` (built from ``history``) as the ledger sees it: 0.8.2's progress block
        is in a system prompt prepended or standing for the history's first message."""
        return self._shape(prompt, len(history), bool(history) and history[0].role == "system")

    def _shape(self, prompt: Sequence[Message], n: int, system_first: bool) -> Shape | None:
        """:meth:`_shape_of` from the history's length and whether it opens with a system
        message."""
        if not (self.rules.react_memory and prompt):
            return None
        last = prompt[-1]  # the current question, when the agent appended one (_managed)
        question = int(last.role == "user" and not last.is_observation)
        if len(prompt) == n + 1:
            return Shape((prompt[0],), 0, question)
        if system_first:
            return Shape((prompt[0],), 1, question)
        return Shape((), 0, question)

    def _cheap_layers(
        self, messages: Sequence[Message], ctx: ReplayContext, shape: Shape | None = None
    ) -> list[tuple[str, Sequence[Message]]]:
        """The layers ``manage_context`` runs before a summary (1 and 2) on ``messages``, with
        the prompt after each: pure, so the rebuilt memory can be managed before it is shown.
        A prompt just rebuilt (of ``shape``) is managed from the ledger's running sums when it
        can (:meth:`_ledger_layers`), else from the messages."""
        if self.breaker_tripped:
            return []
        if shape is not None:
            steps = self._ledger_layers(messages, shape, ctx)
            if steps is not None:
                return steps
        return self._list_layers(messages, ctx)

    def _ledger_layers(
        self, prompt: Sequence[Message], shape: Shape, ctx: ReplayContext
    ) -> list[tuple[str, Sequence[Message]]] | None:
        """:meth:`_list_layers` of the prompt just rebuilt (of ``shape``), from the ledger."""
        if self.cfg.age_from != "loop_counter" or self._ledger is None:
            return None
        head_count = sum(self._counts(shape.head, ctx))
        layers = self._ledger.layers(
            shape,
            head_count,
            cutoff_rounds=ctx.call - self._reply_start - self.cfg.max_observation_age_rounds,
            keep_rounds=self.cfg.min_keep_recent_rounds,
            keep_tokens=self.cfg.min_keep_tokens,
            warning=lambda used: _at_least(self._state_at(used, ctx), "warning"),
        )
        if layers is None:
            return None
        prompts = self._ledger.prompts(shape, layers)
        self._last_count = (prompts[-1] if prompts else prompt, layers.used[-1])
        return list(zip(("layer1", "layer2"), prompts))

    def _list_layers(
        self, messages: Sequence[Message], ctx: ReplayContext
    ) -> list[tuple[str, Sequence[Message]]]:
        """The layers 1 and 2 of :meth:`_cheap_layers`, worked out on the message lists."""
        steps: list[tuple[str, Sequence[Message]]] = []
        state = self._state(messages, ctx)
        if state == "normal":
            return steps
        current = list(messages)
        for layer in ("layer1", "layer2"):
            if not _at_least(state, "warning"):
                break
            managed, tail = self._managed(current)
            if layer == "layer1":
                kept = self.layer1(tuple(managed), self._current_round(current, ctx))
            else:
                kept = self.layer2(tuple(managed), ctx)
            current = [*kept, *tail]
            steps.append((layer, current))
            state = self._state(current, ctx)
        return steps

    def _summary_due(self, messages: Sequence[Message], ctx: ReplayContext) -> bool:
        return (
            not self.breaker_tripped
            and _at_least(self._state(messages, ctx), "error")
            and ctx.summarizer is not None
        )

    def _manage(
        self, ctx: ReplayContext, steps: list[tuple[str, Sequence[Message]]] | None = None
    ) -> None:
        """``ContextManager.manage_context`` (manager.py:97-168); ``steps``: layers 1 and 2
        already worked out on the view (:meth:`_cheap_layers`)."""
        if steps is None:
            steps = self._cheap_layers(ctx.view.messages, ctx)
        for layer, messages in steps:
            ctx.apply(layer, messages)
        if not self._summary_due(ctx.view.messages, ctx):
            return
        if self.rules.model_name_defect and not self.cfg.patch_model_name:
            self.compact_failures += 1
            ctx.emit(ev.StrategyError(strategy=self.name, layer="layer3", error=MODEL_NAME_ERROR))
            return
        managed, tail = self._managed(ctx.view.messages)
        try:
            compacted = self.layer3(tuple(managed), ctx)
        except SummarizerError as error:
            if self.rules.summary_failure_counts or error.kind == "crash":
                self.compact_failures += 1
                return
            compacted = managed  # 0.8.2: "" from the client is a success
        self.compact_failures = 0
        ctx.apply("layer3", [*compacted, *tail])

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        if not self.rules.layer4:  # thinking() gives up after 3 attempts (base_agent.py:793-823)
            raise ReplyAborted(f"ValueError: {error}")
        lowered = str(error).lower()
        if not any(marker in lowered for marker in LAYER4_MARKERS):
            return False
        if self.layer4_retries >= self.cfg.layer4_max_retries:
            return False
        self.layer4_retries += 1
        ctx.apply("layer4", self.layer4(ctx.view.messages))
        self._built = ctx.view.messages
        return True

    def _current_round(self, messages: Sequence[Message], ctx: ReplayContext) -> int:
        if self.cfg.age_from == "loop_counter":
            return ctx.call - self._reply_start
        return len(self._round_ends(messages))

    # -- layers (pure functions of the message list) -------------------------------------------------
    def layer1(self, messages: tuple[Message, ...], current_round: int) -> list[Message]:
        """Truncate observations of rounds older than ``max_observation_age_rounds``.

        The snapshot path comes from the message's ``snapshot_path`` (DB-GPT's
        ``msg.context["snapshot_path"]``) or its ``[Full detail available at: ...]`` pointer,
        so cutting an already cut observation keeps it (both releases).
        """
        cutoff = current_round - self.cfg.max_observation_age_rounds
        if cutoff <= 0:
            return list(messages)
        # the old rounds are a prefix; a system message in it is no observation, so cutting
        # leaves it as it is
        ends = self._round_ends(messages)
        stop = ends[cutoff - 1] + 1 if cutoff <= len(ends) else len(messages)
        return [*self._cuts.many(messages[:stop]), *messages[stop:]]

    def layer2(self, messages: tuple[Message, ...], ctx: ReplayContext) -> list[Message]:
        """Drop whole old rounds; keep ``min_keep_recent_rounds`` and ``min_keep_tokens``.

        A round is a run of the conversation (system messages aside), so the rounds kept are
        its tail, found by walking back over the rounds' token sums."""
        kinds = self._kinds.many(messages)
        if _SYSTEM in kinds:
            system = list(compress(messages, map(operator.eq, kinds, repeat(_SYSTEM))))
            talk = list(map(operator.ne, kinds, repeat(_SYSTEM)))
            conv, kinds = list(compress(messages, talk)), list(compress(kinds, talk))
        else:
            system, conv = [], list(messages)
        ends = self._round_ends(conv, kinds)
        keep = self.cfg.min_keep_recent_rounds
        if not conv or len(ends) <= keep:
            return list(messages)
        starts = [0, *(end + 1 for end in ends)]  # and where a round after the last would
        keep_from = len(ends) - keep
        kept_tokens = 0
        for r in range(len(ends) - 1, -1, -1):  # only the rounds walked are counted
            kept_tokens += sum(self._counts(conv[starts[r] : ends[r] + 1], ctx))
            if r < keep_from and kept_tokens >= self.cfg.min_keep_tokens:
                break
            keep_from = min(keep_from, r)
        if keep_from <= 0:
            return list(messages)
        return system + conv[starts[keep_from] :]

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
        shown = [stored(m) if self.rules.react_memory else m for m in old]
        lines = [f"[{_dbgpt_role(m.role)}]: {m.content[:3000]}" for m in shown]
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
            # ``_persist`` returns the message itself or its persisted block (which the
            # snapshot's pointer keeps): only a result it replaced was persisted here
            persisted = kept is not original
            kept = self._snapshot(kept, ctx)
            if persisted:
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
        return _tool_name(message, _last_assistant(ctx))

    def _persist(self, message: Message, ctx: ReplayContext, threshold: float | None) -> Message:
        if not self.cfg.persist_tool_results or failed(message):
            return message
        limit = self._limits(ctx)[0] if threshold is None else threshold
        content = message.content
        if len(content) <= limit or PERSISTED_OUTPUT_TAG in content:
            return message
        action, _, _ = self._tool_name(message, ctx)
        if action in PINNED_TOOLS:
            return message
        stem = safe_component(
            message.tool_call_id or f"{action}_{len(self._progress_lines) + 1:03d}"
        )
        path = ctx.write_file(
            f"persisted_results/{safe_component(ctx.trace_id)}/{stem}.txt",
            content.encode("utf-8", "surrogatepass"),
        )
        preview, has_more = generate_preview(content, self.cfg.preview_size)
        block = persisted_block(preview, has_more, len(content), path)
        if message.is_observation:
            block = OBSERVATION_PREFIX + block
        return message.with_text(block)

    def _snapshot(self, message: Message, ctx: ReplayContext) -> Message:
        """``Role._write_op_snapshot`` (role.py:408-470) and the pointer of react_agent.py:335-350."""
        if not self.cfg.snapshots or failed(message):
            return message
        design = self.rules.design_snapshots
        step = len(self._progress_lines) + 1 if design else ctx.call - self._reply_start
        assistant = _last_assistant(ctx)
        # what the step's file holds depends on these alone: worked out once in the process
        key = (id(message), id(assistant), step, ctx.trace_id, design)
        files = _snapshot_files()
        found = files.peek(key)
        if found is None or found[0] is not message or found[1] is not assistant:
            found = (
                message,
                assistant,
                *_snapshot_file(message, assistant, step, ctx.trace_id, design),
            )
            files.put(key, found, len(found[4]))
        action, relative, content, sha256 = found[2:]
        path = ctx.write_file(relative, content, sha256=sha256)
        if not self.rules.design_snapshots:
            # 0.8.2 overwrites a step file a later reply names again; the prompt cites that
            # name (ctxbench keeps the later content under ``~2``: a written file stays)
            path = relative
        line = progress_line(step, action, path)
        self._progress_lines.append(line)
        self._progress_token = _progressed(self._progress_token, line)
        return _citing(message, path, design=self.rules.design_snapshots)


def _last_assistant(ctx: ReplayContext) -> Message | None:
    """The view's last assistant message (the call the results being added answer)."""
    view = ctx.view
    for i in range(len(view) - 1, -1, -1):  # read from the end, without copying the view
        if view[i].role == "assistant":
            return view[i]
    return None


def _tool_name(message: Message, assistant: Message | None) -> tuple[str, str, str]:
    """(action, action_input, thought) of the call of ``assistant`` the result answers."""
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


def _snapshot_file(
    message: Message, assistant: Message | None, step: int, trace_id: str, design: bool
) -> tuple[str, str, bytes, str]:
    """(action, relative path, content, sha256) of the snapshot of result ``message`` at
    ``step`` (``Role._write_op_snapshot``, role.py:408-470)."""
    action, action_input, thought = _tool_name(message, assistant)
    conv_id = safe_component(trace_id)
    observation = message.content
    if message.is_observation:
        observation = observation.lstrip()[len("Observation:") :].lstrip()
    if design:
        missing = None
        relative = f"op_snapshots/{conv_id}/step_{step:03d}_{safe_component(action)}.json"
    else:
        # the ReAct retry counter + 1; failed steps write nothing, so numbers skip
        missing = ""
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
        "conv_id": trace_id,
    }
    return (action, relative, *json_file(payload))


#: the snapshot files of a sweep's caches: (ids of the result and of its call, step, trace,
#: design) -> (that result and call, held so their ids stay their own; action, relative path,
#: content, sha256), bounded by the files' bytes
_SNAPSHOTS = "dbgpt.snapshots"
_SNAPSHOTS_LIMIT = 64 * 2**20


def _snapshot_files() -> ContentMemo[
    tuple[int, int, int, str, bool], tuple[Message, Message | None, str, str, bytes, str]
]:
    """The snapshot files of the current caches (a sweep's trace's, else the process's)."""
    return current().content(_SNAPSHOTS, _SNAPSHOTS_LIMIT)


#: the task progress of the process: (a token, a line) -> the token of its lines and that line
_PROGRESS: dict[tuple[int, str], int] = {}
_PROGRESS_LIMIT = 1_000_000
_progress_tokens = count(1)


def _head_size(prompt: Sequence[Message]) -> int:
    """The bytes of a progress head's text (the prompt holding it made it)."""
    return sys.getsizeof(prompt[0].content)


def _progressed(token: int, line: str) -> int:
    """The token of the progress lines ``token`` names with ``line`` appended: equal lines give
    equal tokens in every replay of the process."""
    found = _PROGRESS.get((token, line))
    if found is None:
        if len(_PROGRESS) >= _PROGRESS_LIMIT:
            _PROGRESS.clear()  # tokens are never given twice: old ones just stop matching
        found = _PROGRESS[(token, line)] = next(_progress_tokens)
    return found


def _cut(msg: Message, *, rules: DbgptRelease, max_chars: int) -> Message:
    """Layer 1 on one message of an old round: the message itself when it is no observation,
    already persisted, or short enough."""
    content = stored(msg).content if rules.react_memory else msg.content
    if (
        not is_observation(msg, rules)
        or PERSISTED_OUTPUT_TAG in content
        or len(content) <= max_chars + 30
    ):
        return msg
    path = snapshot_path(msg)
    suffix = f"... [truncated, full detail at: {path}]" if path else "... [truncated]"
    return replace(from_stored(msg, content[:max_chars] + suffix), meta=with_path(msg, path))


def _citing(message: Message, path: str, *, design: bool) -> Message:
    """``message`` citing its snapshot ``path`` (the pointer of react_agent.py:335-350; 0.8.2
    adds none to a persisted result), the same object for the same message and path in the
    whole process: what the shared memos know of it serves every replay of a sweep."""
    made: dict[tuple[str, bool], Message] = shared_memo(("dbgpt.citing",), _nothing_made)(message)
    found = made.get((path, design))
    if found is None:
        meta = with_path(message, path)
        if not design and PERSISTED_OUTPUT_TAG in message.content:
            found = replace(message, meta=meta)
        else:
            text = f"{message.content}\n[Full detail available at: {path}]"
            found = replace(message.with_text(text), meta=meta)
        made[(path, design)] = found
    return found


def _nothing_made(_: Message) -> dict[tuple[str, bool], Message]:
    return {}


def _kind(message: Message, *, rules: DbgptRelease) -> int:
    """What ``message`` is to the manager's rounds: system, a round's end, or neither."""
    if message.role == "system":
        return _SYSTEM
    return _ENDS_ROUND if is_observation(message, rules) else _OTHER


_ORDER = ("normal", "warning", "error", "critical", "overflow")


def _at_least(state: str, floor: str) -> bool:
    return _ORDER.index(state) >= _ORDER.index(floor)


def _dbgpt_role(role: str) -> str:
    return {"user": "human", "assistant": "ai"}.get(role, role)


__all__ = ["DbgptStrategy"]
