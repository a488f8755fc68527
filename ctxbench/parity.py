"""Parity: a reproduction and a released framework replayed on one trace, compared call by call.

Both sides replay the same trace with the same window, counters and summarizer. At every
model call each side's prompt is observed after the strategy acted (``before_call`` and any
overflow reaction): which trace messages it holds (a rewrite or a part of one counts as kept,
an empty stand-in does not: ``Recorder.inherit`` of :mod:`ctxbench.engine.recorder`, one rule for both sides),
whether a compaction ran, the true tokens of the last attempt, and whether the call failed.
Two calls agree when all four match (tokens within ``tolerance``, relative). The first call
where they do not is reported with both sides' state: what each kept, the layers that ran and
the context state each strategy saw, which is usually the reason. Each side's first compaction
is the first call where a layer dropped or rewrote a message (a layer that only adds one, a
runtime-state note, does not count); two traces agree on it when it is the same call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.prompt import index_runs
from ctxbench.engine.recorder import recorder_of
from ctxbench.engine.strategy import ProviderCall, Strategy
from ctxbench.trace import Message, Trace

if TYPE_CHECKING:
    from ctxbench.errors import ProviderOverflowError

#: relative token difference under which two prompts count as the same size
DEFAULT_TOLERANCE = 0.05


class Observed(Strategy):
    """A strategy wrapped so that the prompt of each call's last attempt is recorded (as trace
    indices), from ``after_call`` (a call failed before sending: from ``before_call``)."""

    def __init__(self, inner: Strategy) -> None:
        super().__init__(inner.config)
        self.inner = inner
        self.kept: dict[int, tuple[int, ...]] = {}

    def _observe(self, ctx: ReplayContext) -> None:
        indices = set(map(recorder_of(ctx).trace_index, ctx.view.messages))
        self.kept[ctx.call] = tuple(sorted(i for i in indices if i is not None))

    def on_start(self, ctx: ReplayContext) -> None:
        self.inner.on_start(ctx)

    def on_tool_results(self, messages: list[Message], ctx: ReplayContext) -> list[Message]:
        return self.inner.on_tool_results(messages, ctx)

    def before_call(self, ctx: ReplayContext) -> None:
        try:
            self.inner.before_call(ctx)
        finally:  # a reply the system ends before the model call is still a (failed) call
            self._observe(ctx)

    def after_call(self, call: ProviderCall, ctx: ReplayContext) -> None:
        self.inner.after_call(call, ctx)
        self._observe(ctx)  # the prompt just sent; a retry's prompt replaces it

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        return self.inner.on_overflow(error, attempt, ctx)

    def keeps_system(self) -> bool:
        return self.inner.keeps_system()

    def budget(self, ctx: ReplayContext) -> int:
        return self.inner.budget(ctx)

    def state_of(self, ratio: float, budget: int) -> str:
        return self.inner.state_of(ratio, budget)


@dataclass(frozen=True)
class CallState:
    """One side at one model call."""

    call: int
    kept: tuple[int, ...]
    layers: tuple[str, ...]
    true_tokens: int
    failed: bool
    state: str
    used: int
    budget: int
    #: a layer dropped or rewrote a message at this call
    reduced: bool = False

    def describe(self) -> dict[str, Any]:
        out = asdict(self)
        out["kept"] = index_runs(self.kept)
        return out


@dataclass(frozen=True)
class Side:
    """One replay, reduced to what parity compares."""

    strategy: str
    calls: tuple[CallState, ...]
    error: str | None = None


@dataclass(frozen=True)
class TraceParity:
    trace_id: str
    reproduction: str
    shipped: str
    window: int
    calls: int
    same_compacted: int
    same_kept: int
    tokens_within: int
    same_failed: int
    agreeing: int
    first_divergence: dict[str, Any] | None = None
    error: str | None = None
    #: the first compaction of each side (reproduction, shipped); None when it never compacts
    first_compaction: tuple[int | None, int | None] = (None, None)
    #: calls that failed on each side (reproduction, shipped)
    failed: tuple[int, int] = (0, 0)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def agreement(self) -> float | None:
        return round(self.agreeing / self.calls, 4) if self.calls else None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["agreement"] = self.agreement
        return out


def side_of(strategy: str, events: Sequence[ev.Event], kept: Mapping[int, tuple[int, ...]]) -> Side:
    """Reduce a replay's events (and its observed prompts) to one CallState per call."""
    per_call: dict[int, dict[str, Any]] = {}
    for event in events:
        slot = per_call.setdefault(
            event.call,
            {"layers": [], "true": None, "failed": False, "state": "", "used": 0, "budget": 0,
             "reduced": False},
        )  # fmt: skip
        if isinstance(event, ev.Compaction):
            slot["layers"].append(event.layer)
            slot["reduced"] |= bool(event.dropped or event.changed)
        elif isinstance(event, ev.ProviderCall):
            slot["true"] = event.true_tokens
        elif isinstance(event, ev.CallFailed):
            slot["failed"] = True
            if slot["true"] is None:  # failed before the provider was asked
                slot["true"] = event.true_tokens or 0
        elif isinstance(event, ev.ContextStatus):
            slot["state"], slot["used"], slot["budget"] = event.state, event.used, event.budget
    calls = tuple(
        CallState(
            call=k,
            kept=kept.get(k, ()),
            layers=tuple(slot["layers"]),
            true_tokens=int(slot["true"]),
            failed=slot["failed"],
            state=slot["state"],
            used=slot["used"],
            budget=slot["budget"],
            reduced=slot["reduced"],
        )
        for k, slot in sorted(per_call.items())
        if k in kept and slot["true"] is not None
    )
    return Side(strategy, calls)


def compare(
    trace_id: str, a: Side, b: Side, *, window: int, tolerance: float = DEFAULT_TOLERANCE
) -> TraceParity:
    """Call-by-call agreement of two sides of one trace."""
    if a.error or b.error:
        return TraceParity(
            trace_id, a.strategy, b.strategy, window, 0, 0, 0, 0, 0, 0,
            error=a.error or b.error,
        )  # fmt: skip
    by_call = {c.call: c for c in b.calls}
    counts = {"compacted": 0, "kept": 0, "tokens": 0, "failed": 0, "all": 0}
    first: dict[str, Any] | None = None
    n = 0
    for x in a.calls:
        y = by_call.get(x.call)
        if y is None:
            continue
        n += 1
        same = {
            "compacted": bool(x.layers) == bool(y.layers),
            "kept": x.kept == y.kept,
            "tokens": abs(x.true_tokens - y.true_tokens)
            <= tolerance * max(x.true_tokens, y.true_tokens, 1),
            "failed": x.failed == y.failed,
        }
        for key, ok in same.items():
            counts[key] += ok
        if all(same.values()):
            counts["all"] += 1
        elif first is None:
            first = {
                "call": x.call,
                "differs": [k for k, ok in same.items() if not ok],
                "reproduction": x.describe(),
                "shipped": y.describe(),
                "only_reproduction_kept": index_runs(sorted(set(x.kept) - set(y.kept))),
                "only_shipped_kept": index_runs(sorted(set(y.kept) - set(x.kept))),
            }
    return TraceParity(
        trace_id=trace_id,
        reproduction=a.strategy,
        shipped=b.strategy,
        window=window,
        calls=n,
        same_compacted=counts["compacted"],
        same_kept=counts["kept"],
        tokens_within=counts["tokens"],
        same_failed=counts["failed"],
        agreeing=counts["all"],
        first_divergence=first,
        first_compaction=(_first_compaction(a), _first_compaction(b)),
        failed=(sum(c.failed for c in a.calls), sum(c.failed for c in b.calls)),
    )


def _first_compaction(side: Side) -> int | None:
    return next((c.call for c in side.calls if c.reduced), None)


def replay_side(
    trace: Trace,
    strategy: str,
    *,
    window: int,
    reserved: int,
    counter: str,
    summarizer: str = "extractive",
    params: Mapping[str, Any] | None = None,
) -> Side:
    """Replay ``trace`` through ``strategy`` with its prompts observed. A strategy that cannot
    be built (unknown, no environment) raises; one that raises while replaying (a driver that
    crashed or hung) gives a side with the error, and the other traces go on."""
    from ctxbench.cell.runner import build_parts
    from ctxbench.cell.spec import RunSpec
    from ctxbench.engine.replay import replay

    spec = RunSpec(trace.id, trace.content_hash, strategy, dict(params or {}), window,
                   reserved=reserved, counter=counter, summarizer=summarizer)  # fmt: skip
    parts = build_parts(spec)
    observed = Observed(parts.strategy)
    try:
        output = replay(
            trace,
            observed,
            parts.provider,
            true_counter=parts.true_counter,
            estimator=parts.estimator,
            summarizer=parts.summarizer,
        )
    except Exception as exc:  # a side that fails is reported, the other traces go on
        return Side(strategy, (), error=f"{type(exc).__name__}: {exc}")
    return side_of(strategy, output.events, observed.kept)


def parity(
    traces: Sequence[Trace],
    reproduction: str,
    shipped: str,
    *,
    window: int,
    reserved: int = 4096,
    counter: str = "tiktoken:o200k_base",
    summarizer: str = "extractive",
    tolerance: float = DEFAULT_TOLERANCE,
) -> list[TraceParity]:
    out = []
    for trace in traces:
        sides = [
            replay_side(
                trace, s, window=window, reserved=reserved, counter=counter, summarizer=summarizer
            )
            for s in (reproduction, shipped)
        ]
        out.append(compare(trace.id, *sides, window=window, tolerance=tolerance))
    return out


def overall(results: Sequence[TraceParity]) -> dict[str, Any]:
    """Agreement over every compared call of every trace (error traces excluded)."""
    ok = [r for r in results if r.error is None]
    calls = sum(r.calls for r in ok)

    def share(value: int) -> float | None:
        return round(value / calls, 4) if calls else None

    return {
        "traces": len(results),
        "errors": len(results) - len(ok),
        "calls": calls,
        "agreement": share(sum(r.agreeing for r in ok)),
        "same_compacted": share(sum(r.same_compacted for r in ok)),
        "same_kept": share(sum(r.same_kept for r in ok)),
        "tokens_within": share(sum(r.tokens_within for r in ok)),
        "same_failed": share(sum(r.same_failed for r in ok)),
        "identical_traces": sum(1 for r in ok if r.calls and r.agreeing == r.calls),
        "same_first_compaction": round(
            sum(1 for r in ok if r.first_compaction[0] == r.first_compaction[1]) / len(ok), 4
        )
        if ok
        else None,
        "failed_calls": [sum(r.failed[0] for r in ok), sum(r.failed[1] for r in ok)],
    }
