"""Per-run timelines (usage ratio per call, compactions, overflows) and which runs to show.

A sweep has far more runs than a reader can look at, so the report draws a few chosen by a
fixed rule: the traces with the most model calls (up to ``max_traces``), each at its smallest
window (where compaction matters most) and its most used true counter (so the panels share a
tokenizer). Drawn are the configurations one would deploy: the recommended one (``recommended``:
the recommendation's pick when the caller has one, else the top of the leaderboard, drawn as
``role``) and each strategy at its default knobs (``is_default``).
Without either, one run per strategy: the one with the most overflow errors, then the most
compactions, then the lowest run id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxbench.engine.result import RunResult
from ctxbench.report.decisions import Thresholds
from ctxbench.report.leaderboard import compaction_layers
from ctxbench.report.results import RunEvents
from ctxbench.strategies.base import DEFAULT_STATE_THRESHOLDS

Row = RunResult


def state_lines(thresholds: Thresholds) -> tuple[tuple[float, str], ...]:
    """The dotted lines of a run's timeline: its warning and error states, and the limit."""
    lines = [(t, s) for t, s in thresholds if s in ("warning", "error")] + [(1.0, "limit")]
    return tuple(sorted(lines))


@dataclass(frozen=True)
class Timeline:
    """One run over its calls: ratios over the provider limit, by first attempt."""

    run_id: str
    label: str
    calls: tuple[int, ...]
    true_ratio: tuple[float, ...]
    estimated_ratio: tuple[float, ...]
    #: (call, layer)
    compactions: tuple[tuple[int, str], ...]
    #: (call, true ratio) of every rejected request
    overflows: tuple[tuple[int, float], ...]
    #: (ratio, name) of the dotted lines: the run's own warning and error states, the limit
    state_lines: tuple[tuple[float, str], ...] = state_lines(DEFAULT_STATE_THRESHOLDS)
    #: calls where the recorded run could no longer have gone on as recorded
    open_loop_breaks: tuple[int, ...] = ()


def timeline(
    run_id: str, label: str, events: RunEvents, thresholds: Thresholds = DEFAULT_STATE_THRESHOLDS
) -> Timeline:
    """The timeline of one run from its reduced events, with its state ``thresholds``."""
    first = [c for c in events.calls if c.attempt == 0 and c.limit > 0]
    return Timeline(
        run_id=run_id,
        label=label,
        calls=tuple(c.call for c in first),
        true_ratio=tuple(c.true / c.limit for c in first),
        estimated_ratio=tuple(c.estimated / c.limit for c in first),
        compactions=events.compactions,
        overflows=tuple((c.call, c.true / c.limit) for c in events.calls if not c.ok and c.limit),
        state_lines=state_lines(thresholds),
        open_loop_breaks=events.open_loop_breaks,
    )


@dataclass(frozen=True)
class TimelineGroup:
    """The runs drawn together: one trace, window and true counter, one run per strategy."""

    trace_id: str
    window: int
    counter: str
    rows: tuple[Row, ...]
    #: why each row is drawn: "recommended", "leaderboard top", "default" or "most overflows"
    roles: tuple[str, ...] = ()


def _activity(row: Row) -> tuple[int, int, str]:
    return (-row.overflow_errors, -sum(compaction_layers(row).values()), row.run_id)


def pick_timelines(
    rows: Sequence[Row],
    *,
    recommended: Callable[[int, str], Callable[[Row], bool] | None] | None = None,
    role: str = "recommended",
    is_default: Callable[[Row], bool] | None = None,
    max_traces: int = 3,
    max_strategies: int = 5,
) -> list[TimelineGroup]:
    """The representative runs (see the module docstring). ``recommended(window, counter)``
    gives a test for the recommended configuration's rows there (or None); they are drawn as
    ``role``."""
    ok = [r for r in rows if not r.error]
    calls: dict[str, int] = {}
    for r in ok:
        calls[r.trace_id] = max(calls.get(r.trace_id, 0), r.calls)
    traces = sorted(calls, key=lambda t: (-calls[t], t))[:max_traces]
    groups = []
    for trace_id in traces:
        mine = [r for r in ok if r.trace_id == trace_id]
        window = min(r.window for r in mine)
        in_window = [r for r in mine if r.window == window]
        used = Counter(r.counter for r in in_window)
        counter = min(used, key=lambda c: (-used[c], c))
        in_window = [r for r in in_window if r.counter == counter]
        chosen: list[tuple[Row, str]] = []
        best = recommended(window, counter) if recommended else None
        for r in sorted(in_window, key=lambda r: r.run_id):
            if best is not None and best(r):
                chosen.append((r, role))
                break
        for strategy in sorted({r.strategy for r in in_window}):
            if is_default is None or len(chosen) > max_strategies:
                break
            for r in sorted(in_window, key=lambda r: r.run_id):
                if r.strategy == strategy and is_default(r):
                    if all(r is not c for c, _ in chosen):
                        chosen.append((r, "default"))
                    break
        if not chosen:
            for strategy in sorted({r.strategy for r in in_window})[:max_strategies]:
                candidates = [r for r in in_window if r.strategy == strategy]
                chosen.append((min(candidates, key=_activity), "most overflows"))
        groups.append(
            TimelineGroup(
                trace_id,
                window,
                counter,
                tuple(r for r, _ in chosen),
                tuple(role for _, role in chosen),
            )
        )
    return groups
