"""The open-loop replay: a recorded trace, call by call, through one compaction strategy.

Pure and deterministic: no files, no clock, no global state. The same inputs give the same
events, byte for byte. For every recorded assistant message (a model call ``k``):

1. messages recorded since the previous call are appended to the view; tool results (and
   DB-GPT ``Observation:`` messages) pass through ``strategy.on_tool_result`` first;
2. ``context.status`` is emitted and ``strategy.before_call`` may compact;
3. the provider counts the prompt with the TRUE counter; ``strategy.after_call`` hears its
   verdict; over ``window - reserved`` it raises an overflow, ``strategy.on_overflow`` may
   compact and ask for a retry; a call still over the window is a failed call (the real agent
   would have crashed here); a :class:`ReplyAborted` from ``before_call`` or ``on_overflow``
   fails the call with the system's own text, before (another) provider attempt;
4. probes asked at call ``k`` are scored against the prompt; once a call of the agent's task
   has failed (the real agent crashed there), every probe asked at or after it is lost
   (``after_failure``), until a new user task where the trace says the agent went on;
5. each value the recorded assistant message writes after learning it earlier (a needed value)
   is looked for in the prompt: where it is gone, an ``open_loop.break`` says the recorded run
   could not have gone on as recorded;
6. the recorded assistant message is appended (the replay is open loop: the recorded turns do
   not change with compaction).

Probes asked at the end are scored after a last ``before_call`` (the prompt a next call would
see); no provider call is made for it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ctxbench.counting.base import TokenCounter
from ctxbench.engine import events as ev
from ctxbench.engine import faults
from ctxbench.engine.caches import Caches, using
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.provider import PairingCheck, SimulatedProvider
from ctxbench.engine.recorder import recorder_of
from ctxbench.engine.result import Identity, Prices, RunResult, result_from_events
from ctxbench.engine.strategy import ProviderCall, ReplyAborted, Strategy
from ctxbench.engine.view import ContextView
from ctxbench.errors import CtxbenchError, ProviderOverflowError
from ctxbench.memo import ContentMemo
from ctxbench.probes.model import Probe
from ctxbench.probes.needed import Use, needed_uses
from ctxbench.probes.scoring import PromptScorer, ScoringCache
from ctxbench.summarizers.base import Summarizer
from ctxbench.trace import Message, RecordedCompaction, Trace, Usage

#: Safety valve: no strategy may retry one call more often than this.
MAX_ATTEMPTS = 16


@dataclass(frozen=True)
class ReplayOutput:
    """What one replay produced: its events, the files the edge should write, and its row.

    The row is computed from the events once, when first read, so the edge can add the one
    clock reading (``replay_seconds``, with :func:`dataclasses.replace`) before it exists."""

    events: tuple[ev.Event, ...]
    identity: Identity
    files: Mapping[str, bytes] = field(default_factory=dict)
    #: the strategy's view after the last recorded message (what a next call would build on)
    final_view: tuple[Message, ...] = ()
    prices: Prices | None = None
    replay_seconds: float = 0.0
    #: the files a probe's evidence was found in (``via_reference``): what keeps it verifiable
    cited: frozenset[str] = frozenset()
    #: every file written, by path: its sha256 (``files`` may hold fewer: ``file_contents``)
    written: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def result(self) -> RunResult:
        return result_from_events(
            self.events, self.identity, prices=self.prices, replay_seconds=self.replay_seconds
        )


def _is_tool_result(message: Message) -> bool:
    return message.role == "tool" or message.is_observation


def replay(
    trace: Trace,
    strategy: Strategy[Any],
    provider: SimulatedProvider,
    *,
    true_counter: TokenCounter,
    estimator: TokenCounter,
    summarizer: Summarizer | None = None,
    probes: Sequence[Probe] | None = None,
    seed: int = 0,
    identity: Identity | None = None,
    prices: Prices | None = None,
    on_call: Callable[[int, int], None] | None = None,
    on_prompt: Callable[[int, tuple[Message, ...]], None] | None = None,
    on_view: Callable[[int, ContextView], None] | None = None,
    caches: Caches | None = None,
    file_contents: bool = True,
) -> ReplayOutput:
    """Replay ``trace`` through ``strategy`` against ``provider``; see the module docstring.
    ``on_call(done, total)`` hears each model call done (a progress bar at the edge);
    ``on_prompt(call, messages)`` hears the prompt of each call as probes are scored on it
    (and of the end, when probes are asked there): what an answerer is asked about.
    ``on_view(call, view)`` hears the view at every call where its probes are scored (or would
    be), whatever the call's outcome (accepted, over the window, refused for its pairing,
    aborted, after a failure), and at the end (after its ``before_call`` when probes are asked
    there): the one source of the prompts the viewer shows.
    ``caches`` are what the replay shares with others (a sweep's:
    :mod:`ctxbench.engine.caches`; the process's when None); they change nothing but time.
    ``file_contents=False``: the caller keeps no file, so the output's files hold only the
    contents the probes may read (those written up to the last call where something is
    scored); every file's path and sha256 are in ``written``, its snapshot event the same.

    An exception escaping a plug-in strategy (one written outside ctxbench) is raised as one
    :class:`~ctxbench.errors.PluginError` naming the hook, the trace and the call, with the
    plug-in's own frames (:mod:`ctxbench.engine.faults`)."""
    probe_list = tuple(trace.probes if probes is None else probes)
    n_calls = len(trace.call_indices)
    ctx = ReplayContext(
        trace_id=trace.id,
        strategy=strategy,
        estimator=estimator,
        true_counter=true_counter,
        window=provider.window,
        reserved=provider.reserved,
        tools=trace.tools,
        n_calls=n_calls,
        summarizer=summarizer,
        seed=seed,
    )
    asked: dict[int, list[Probe]] = {}
    for probe in probe_list:
        at = n_calls if probe.ask_at is None or probe.ask_at >= n_calls else max(probe.ask_at, 0)
        asked.setdefault(at, []).append(probe)
    cited: set[str] = set()
    try:
        with using(caches) as shared:
            used = _Uses(trace, shared)
            if not file_contents:  # a file scoring reads was written by the call scored
                ctx.contents_until = max([*asked, *used.calls()], default=-1)
            asks = _Asks(asked, used, on_prompt, shared.scoring, on_view)
            _run(ctx, trace, strategy, provider, asks, cited, on_call)
    except Exception as exc:
        if isinstance(exc, CtxbenchError) or not faults.is_plugin(strategy):
            raise
        plugin = f"strategy {identity.strategy if identity else strategy.name}"
        raise faults.at_boundary(plugin, exc, trace.id, ctx.call, n_calls) from exc
    return ReplayOutput(
        tuple(ctx.events),
        identity or Identity(trace_id=trace.id, strategy=strategy.name),
        dict(ctx.files),
        ctx.view.messages,
        prices,
        cited=frozenset(cited),
        written=dict(ctx.written),
    )


@dataclass(frozen=True)
class _Asks:
    """What the loop asks at each call: the probes asked there, the needed values its recorded
    message uses (with the fingerprints of the recorded messages that hold each), and who
    hears the prompt (an answerer)."""

    probes: Mapping[int, list[Probe]]
    uses: _Uses
    on_prompt: Callable[[int, tuple[Message, ...]], None] | None
    #: the prompts' texts, shared with the replays of the same caches
    scoring: ScoringCache
    on_view: Callable[[int, ContextView], None] | None = None


#: a trace's needed values by the call that uses them, kept in the replay's caches (a sweep
#: replays one trace under many configurations)
_USES = "engine.replay.uses_by_call"
_USES_LIMIT = 8 * 2**20
UsesByCall = dict[int, list[tuple[Use, frozenset[str]]]]


@dataclass(frozen=True)
class _Found:
    """The needed values of a trace's calls from message ``start`` on (by call)."""

    start: int
    by_call: UsesByCall


class _Uses:
    """Each use of :func:`needed_uses` at its call, with the fingerprints of the messages that
    hold its value, found when a call first asks (read only: every replay of the trace shares
    them). A call asks only when its prompt no longer shows some recorded message before it
    (:class:`_Shown`): until then every value the call writes is still in the prompt, so a
    replay that never drops one (``none``, a strategy that compacts late) finds none or few."""

    def __init__(self, trace: Trace, caches: Caches) -> None:
        self.trace = trace
        self.caches = caches
        self._found: _Found | None = None

    def at(self, call: int) -> list[tuple[Use, frozenset[str]]]:
        index = self.trace.call_indices[call]
        found = self._found
        if found is None or found.start > index:
            found = self._found = self._from(index)
        return found.by_call.get(call, [])

    def calls(self) -> list[int]:
        """Every call with a use (all of them found now: a caller that keeps no file's
        contents needs the last call scoring may read one at)."""
        found = self._found = self._from(0)
        return list(found.by_call)

    def _from(self, index: int) -> _Found:
        """The uses from message ``index`` on: from the caches when a replay found them from
        there or earlier, else found now (and kept)."""
        trace = self.trace
        memo: ContentMemo[str, _Found] = self.caches.content(_USES, _USES_LIMIT)
        found = memo.peek(trace.content_hash)
        if found is not None and found.start <= index:
            return found
        used: UsesByCall = {}
        for use in needed_uses(trace, index):
            holders = frozenset(trace.messages[i].fingerprint for i in use.holders)
            used.setdefault(use.call, []).append((use, holders))
        found = _Found(index, used)
        size = sum(len(u.value) + 64 * (1 + len(h)) for uses in used.values() for u, h in uses)
        memo.put(trace.content_hash, found, size)
        return found


class _Shown:
    """Whether the view still shows every recorded message before a call (their fingerprints
    are among its keys, wherever a strategy put them): then no needed value can be gone from
    it. Only what changed since the last call is looked at (the keys a replace made, the
    messages appended), and once a message is gone, never again (the replay looks the values
    up from then on)."""

    def __init__(self, trace: Trace) -> None:
        self._fingerprints = [m.fingerprint for m in trace.messages]
        self._keys: list[str] | None = None
        self._shown: set[str] = set()  # the keys' first ``_held``
        self._held = 0
        self._checked = 0  # the recorded messages known to be shown
        self.dropped = False

    def all_before(self, keys: list[str], index: int) -> bool:
        if self.dropped:
            return False
        if keys is not self._keys:  # a replace made a new list: look at it all
            self._keys, self._shown, self._held, self._checked = keys, set(keys), len(keys), 0
        elif len(keys) > self._held:  # appended to since (the list only grows)
            self._shown.update(keys[self._held :])
            self._held = len(keys)
        if not self._shown.issuperset(self._fingerprints[self._checked : index]):
            self.dropped = True
            return False
        self._checked = max(self._checked, index)
        return True


def _run(
    ctx: ReplayContext,
    trace: Trace,
    strategy: Strategy[Any],
    provider: SimulatedProvider,
    asks: _Asks,
    cited: set[str],
    on_call: Callable[[int, int], None] | None,
) -> None:
    """The replay's loop (see the module docstring)."""
    asked, used, on_prompt = asks.probes, asks.uses, asks.on_prompt
    calls = trace.call_indices
    messages = trace.messages
    n_calls = len(calls)
    strategy.on_start(ctx)
    pairing = PairingCheck(provider.error_style)
    position = 0
    recorded = {c.call: c for c in trace.recorded_compactions}
    task = _Task(trace.continues_after_failure)
    shown = _Shown(trace)
    for k, index in enumerate(calls):
        ctx.call = k
        if k in recorded:
            _recorded_event(ctx, recorded[k])
        task.hear(messages[position:index])
        _ingest(ctx, strategy, messages[position:index], position)
        if not _model_call(ctx, strategy, provider, pairing, messages[index].usage):
            task.fail()
        if asks.on_view is not None:
            asks.on_view(k, ctx.view)
        if on_prompt is not None and not task.failed:
            on_prompt(k, ctx.view.messages)
        uses = () if task.failed or shown.all_before(ctx.view.keys, index) else used.at(k)
        _ask(ctx, asked.get(k, ()), uses, cited, task.failed, asks.scoring)
        recorder_of(ctx).append_recorded(messages[index], index)
        position = index + 1
        if on_call is not None:
            on_call(k + 1, n_calls)
    ctx.call = n_calls
    if n_calls in recorded:
        _recorded_event(ctx, recorded[n_calls])
    task.hear(messages[position:])
    _ingest(ctx, strategy, messages[position:], position)
    if asked.get(n_calls):
        ctx.status(None)
        with contextlib.suppress(ReplyAborted):  # probes still read the prompt as it stands
            strategy.before_call(ctx)
    if asks.on_view is not None:
        asks.on_view(n_calls, ctx.view)
    if asked.get(n_calls):
        if on_prompt is not None and not task.failed:
            on_prompt(n_calls, ctx.view.messages)
        _ask(ctx, asked[n_calls], (), cited, task.failed, asks.scoring)


class _Task:
    """Whether the agent's current task has failed: a failed call ends it (the real agent
    crashed there); a new user message starts another only where the trace says the agent
    went on after a failure (an interactive session: the user typed again)."""

    def __init__(self, continues: bool) -> None:
        self.continues = continues
        self.failed = False

    def fail(self) -> None:
        self.failed = True

    def hear(self, new: Sequence[Message]) -> None:
        if (
            self.failed
            and self.continues
            and any(m.role == "user" and not m.is_observation for m in new)
        ):
            self.failed = False


def _recorded_event(ctx: ReplayContext, compaction: RecordedCompaction) -> None:
    """Where the recorded agent compacted; the replay keeps the uncompacted history."""

    ctx.emit(
        ev.RecordedCompaction(
            trigger=compaction.trigger,
            pre_tokens=compaction.pre_tokens,
            source=compaction.source,
            note=ev.UNCOMPACTED_NOTE,
        )
    )


def _ingest(
    ctx: ReplayContext, strategy: Strategy[Any], new: Sequence[Message], start: int
) -> None:
    """Append recorded messages (trace indices from ``start``); consecutive tool results go to
    the strategy as one batch."""
    batch: list[tuple[int, Message]] = []
    recorder = recorder_of(ctx)
    for index, message in enumerate(new, start=start):
        if _is_tool_result(message):
            batch.append((index, message))
            continue
        _flush(ctx, strategy, batch)
        recorder.remember_system(message)
        recorder.append_recorded(message, index)
    _flush(ctx, strategy, batch)


def _flush(ctx: ReplayContext, strategy: Strategy[Any], batch: list[tuple[int, Message]]) -> None:
    if not batch:
        return
    kept = strategy.on_tool_results([m for _, m in batch], ctx)
    append = recorder_of(ctx).append_recorded
    for position, message in enumerate(kept):
        append(message, batch[position][0] if len(kept) == len(batch) else None)
    batch.clear()


def _model_call(
    ctx: ReplayContext,
    strategy: Strategy[Any],
    provider: SimulatedProvider,
    pairing: PairingCheck,
    usage: Usage | None,
) -> bool:
    """One model call with its retries; False when it failed."""
    ctx.status(None)
    try:
        strategy.before_call(ctx)
    except ReplyAborted as stop:
        _call_failed(ctx, provider, 0, ev.ABORTED, str(stop))
        return False
    for attempt in range(MAX_ATTEMPTS):
        true_tokens = ctx.view.true_tokens
        rejected = pairing.rejection(ctx.view.messages) if strategy.sends_tool_roles() else None
        if rejected is not None:  # a malformed request: no agent retries it
            strategy.after_call(
                _provider_call(ctx, provider, attempt, None, usage, rejected=rejected), ctx
            )
            _call_failed(ctx, provider, attempt + 1, ev.PAIRING_REJECTED, true_tokens=true_tokens)
            return False
        try:
            provider.check(true_tokens)
        except ProviderOverflowError as error:
            strategy.after_call(_provider_call(ctx, provider, attempt, error, usage), ctx)
            try:
                if attempt + 1 < MAX_ATTEMPTS and strategy.on_overflow(error, attempt, ctx):
                    continue
            except ReplyAborted as stop:  # the framework raised while reacting: no retry
                _call_failed(ctx, provider, attempt + 1, ev.OVERFLOW, str(stop), true_tokens)
                return False
            _call_failed(ctx, provider, attempt + 1, ev.OVERFLOW, true_tokens=true_tokens)
            return False
        call = _provider_call(ctx, provider, attempt, None, usage)
        ctx.view.mark_sent()
        strategy.after_call(call, ctx)
        return True
    return False  # unreachable: the last attempt fails or returns above


def _call_failed(
    ctx: ReplayContext,
    provider: SimulatedProvider,
    attempts: int,
    kind: str,
    error: str | None = None,
    true_tokens: int | None = None,
) -> None:
    """One ``call.failed`` event: its kind, and the system's own text when it raised."""
    ctx.emit(
        ev.CallFailed(
            true_tokens=ctx.view.true_tokens if true_tokens is None else true_tokens,
            limit=provider.limit,
            attempts=attempts,
            kind=kind,
            error=error,
        )
    )


def _provider_call(
    ctx: ReplayContext,
    provider: SimulatedProvider,
    attempt: int,
    error: ProviderOverflowError | None,
    usage: Usage | None,
    *,
    rejected: str | None = None,
) -> ProviderCall:
    """One ``provider.call`` event, accepted (``error`` and ``rejected`` None), over the window
    (``error``) or refused for its tool pairing (``rejected``: the provider's text), and what
    ``after_call`` is told about it."""
    call = ProviderCall(
        call=ctx.call,
        attempt=attempt,
        true_tokens=ctx.view.true_tokens,
        estimated_tokens=ctx.view.estimated_tokens,
        limit=provider.limit,
        accepted=error is None and rejected is None,
        error=error,
        cached_tokens=provider.prompt_cache.billed(
            ctx.view.cached_prefix_tokens(with_reply=provider.prompt_cache.includes_reply)
        )
        if error is None and rejected is None
        else 0,
        recorded_usage=usage,
    )
    ctx.emit(
        ev.ProviderCall(
            attempt=attempt,
            estimated_tokens=call.estimated_tokens,
            true_tokens=call.true_tokens,
            limit=call.limit,
            ok=call.accepted,
            error=rejected if rejected is not None else (None if error is None else str(error)),
            error_kind=None
            if call.accepted
            else (ev.PAIRING_REJECTED if rejected else ev.OVERFLOW),
            cached_tokens=call.cached_tokens,
            messages=len(ctx.view),
        )
    )
    return call


def _ask(
    ctx: ReplayContext,
    probes: Sequence[Probe],
    uses: Sequence[tuple[Use, frozenset[str]]],
    cited: set[str],
    failed: bool,
    scoring: ScoringCache,
) -> None:
    """Score the probes asked now (lost, ``after_failure``, once the task failed) and look for
    the values this call's recorded message uses (``(use, fingerprints of the recorded
    messages holding it)``: one of them still in the prompt shows it, without a text search);
    the files a probe's evidence was found in join ``cited``."""
    if not probes and not uses:
        return
    made: list[PromptScorer] = []

    def scorer() -> PromptScorer:  # the prompt's text index, built once when first needed
        if not made:
            made.append(PromptScorer(ctx.view.messages, ctx.files, scoring))
        return made[0]

    for probe in probes:
        if failed:
            ctx.emit(
                ev.ProbeScored(
                    probe_id=probe.id, kind=probe.kind, outcome="lost", reason=ev.AFTER_FAILURE
                )
            )
            continue
        outcome, evidence = scorer().verdict(probe)
        if evidence is not None:
            cited.add(evidence)
        if outcome == "in_context" and scorer().is_bare(probe):
            ctx.emit(ev.ProbeScored(probe_id=probe.id, kind=probe.kind, outcome=outcome, bare=True))
        else:
            ctx.emit(ev.ProbeScored(probe_id=probe.id, kind=probe.kind, outcome=outcome))
    shown = set(ctx.view.keys) if uses else set()
    for use, holders in uses:
        if not holders.isdisjoint(shown):
            continue
        if scorer().find((use.value,))[0] == "lost":
            ctx.emit(
                ev.OpenLoopBreak(value=use.value, source_message=use.source, message=use.message)
            )
