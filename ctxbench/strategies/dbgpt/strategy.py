"""``DbgptStrategy``: DB-GPT's ``ContextManager`` as the agent loop drives it (the manager
flow, the rebuilt memory and its ledger, the tool results); see the package docstring. The
manager's budget, rounds and layers are :class:`~ctxbench.strategies.dbgpt.manager.ContextManager`'s,
the tool results :class:`~ctxbench.strategies.dbgpt.tool_results.ToolResults`', the task
progress :class:`~ctxbench.strategies.dbgpt.progress.TaskProgress`'."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from itertools import islice
from typing import ClassVar

from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.prompt import PROMPTS
from ctxbench.engine.strategy import Starter
from ctxbench.errors import ProviderOverflowError, SummarizerError
from ctxbench.strategies.base import ReplyAborted
from ctxbench.strategies.dbgpt.config import RELEASES, DbgptConfig
from ctxbench.strategies.dbgpt.ledger import HistoryLedger, Shape
from ctxbench.strategies.dbgpt.manager import (
    LAYER4_MARKERS,
    MODEL_NAME_ERROR,
    ContextManager,
    at_least,
)
from ctxbench.strategies.dbgpt.progress import TaskProgress
from ctxbench.strategies.dbgpt.tool_results import ToolResults
from ctxbench.strategies.releases import release_summaries
from ctxbench.trace import Message


class DbgptStrategy(ContextManager):
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
        self.layer4_retries = 0
        #: the agent's ``_task_progress``: a line per successful step (step, action, snapshot)
        self._progress = TaskProgress()
        self._tool_results = ToolResults(self.cfg, self._progress)
        # 0.8.2's rebuilt history (the uncompacted messages, with what the manager asks of
        # them; set at the first rebuild) and the prompt last built from it
        self._ledger: HistoryLedger | None = None
        self._built: tuple[Message, ...] = ()
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

    # -- manager flow -----------------------------------------------------------------------------
    def before_call(self, ctx: ReplayContext) -> None:
        self.layer4_retries = 0
        steps: list[tuple[str, Sequence[Message]]] | None = None
        if not self.rules.persistent:
            new = self._new_since_built(ctx)
            self._track_reply(ctx, new)
            prompt, sources, shape = self._rebuild(ctx, new)
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

    def _track_reply(self, ctx: ReplayContext, new: Sequence[Message] | None) -> None:
        """A real user message since the last call starts a new reply (retry counter 0);
        ``new``: what the view gained since the last call (None: the view is not the prompt
        last built and more, every message counts)."""
        if any(
            m.role == "user" and not m.is_observation for m in (ctx.view if new is None else new)
        ):
            self._reply_start = ctx.call

    def _new_since_built(self, ctx: ReplayContext) -> list[Message] | None:
        """The messages the view gained since the prompt last built, when it starts with that
        prompt (the engine only appends between two calls), else None. Read on the view in
        place: a copy of it each time cost a pass over the whole prompt at every call."""
        view, n = ctx.view, len(self._built)
        if len(view) >= n and all(map(operator.is_, view, self._built)):
            return list(islice(view, n, None))
        return None

    def _rebuild(
        self, ctx: ReplayContext, new: Sequence[Message] | None
    ) -> tuple[Sequence[Message], Sequence[Message | None], Shape | None]:
        """0.8.2: the agent builds the prompt from memory (the uncompacted history plus what
        arrived since the last call), so last call's compaction is gone. The view is set to that
        history without a compaction event (``ctx.reassemble``): nothing was compacted, the
        agent just forgot. The system prompt carries the task progress so far
        (``role.py:212-240``). ``new``: :meth:`_new_since_built`. Returns the prompt, the
        message each entry stands for, and the prompt's shape for the ledger."""
        ledger = self._ledger_of(ctx)
        if new is not None:
            ledger.extend(new)
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
        progress; :meth:`TaskProgress.head`)."""
        at = ledger.first_system
        return self._progress.head(None if at is None else ledger[at])

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
            warning=lambda used: at_least(self._state_at(used, ctx), "warning"),
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
            if not at_least(state, "warning"):
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
            and at_least(self._state(messages, ctx), "error")
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

    # -- tool results: persistence, snapshots and pointers ----------------------------------------------
    def on_tool_results(self, messages: list[Message], ctx: ReplayContext) -> list[Message]:
        return self._tool_results.handle(messages, ctx, self.max_context(ctx), self._reply_start)


__all__ = ["MODEL_NAME_ERROR", "DbgptStrategy"]
