"""Threshold maps: how retention and failed calls move with the parameters a sweep varied.

For each strategy, the numeric params that take more than one value across its rows are the
swept axes. One axis gives a line per window; two or more give a grid of the first two (names
with "threshold" first, as those are what users tune), averaged over everything else (traces,
the other swept params), which the map says.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxbench.engine.result import RunResult
from ctxbench.report.leaderboard import params_of as _params

Row = RunResult


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def swept_params(rows: Iterable[Row]) -> list[str]:
    """Numeric params with more than one value, "threshold" names first, then by name."""
    values: dict[str, set[float]] = {}
    for row in rows:
        for name, value in _params(row).items():
            if _numeric(value):
                values.setdefault(name, set()).add(float(value))
    swept = [name for name, seen in values.items() if len(seen) > 1]
    return sorted(swept, key=lambda n: ("threshold" not in n, n))


@dataclass(frozen=True)
class ThresholdMap:
    """Mean retention and failed calls per run over a grid of one or two swept params.

    ``y_param`` is None for a one-axis sweep; cells are indexed ``[y][x]`` (one row when
    there is no y). A cell with no rows holds None.
    """

    strategy: str
    window: int
    x_param: str
    x_values: tuple[float, ...]
    y_param: str | None
    y_values: tuple[float, ...]
    retention: tuple[tuple[float | None, ...], ...]
    failed_calls: tuple[tuple[float | None, ...], ...]
    runs: tuple[tuple[int, ...], ...]
    averaged_over: tuple[str, ...]


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def threshold_map(
    strategy: str, window: int, rows: Sequence[Row], axes: Sequence[str]
) -> ThresholdMap:
    """The map of ``rows`` (one strategy, one window) over the first one or two ``axes``."""
    x_param = axes[0]
    y_param = axes[1] if len(axes) > 1 else None
    ok = [r for r in rows if not r.error]
    xs = sorted({float(_params(r)[x_param]) for r in ok if _numeric(_params(r).get(x_param))})
    ys: list[float] = (
        sorted({float(_params(r)[y_param]) for r in ok if _numeric(_params(r).get(y_param))})
        if y_param
        else [0.0]
    )
    cells: dict[tuple[float, float], list[Row]] = {}
    for r in ok:
        p = _params(r)
        if not _numeric(p.get(x_param)) or (y_param and not _numeric(p.get(y_param))):
            continue
        y = float(p[y_param]) if y_param else 0.0
        cells.setdefault((y, float(p[x_param])), []).append(r)
    retention, failed, runs = [], [], []
    for y in ys:
        members = [cells.get((y, x), []) for x in xs]
        retention.append(
            tuple(
                _mean([float(r.retention) for r in m if r.retention is not None]) for m in members
            )
        )
        failed.append(tuple(_mean([float(r.failed_calls) for r in m]) for m in members))
        runs.append(tuple(len(m) for m in members))
    others = ["traces", *axes[2:]]
    others += [
        f
        for f in ("counter", "estimator", "summarizer", "reserved")
        if len({getattr(r, f) for r in ok}) > 1
    ]
    return ThresholdMap(
        strategy=strategy,
        window=window,
        x_param=x_param,
        x_values=tuple(xs),
        y_param=y_param,
        y_values=tuple(ys) if y_param else (),
        retention=tuple(retention),
        failed_calls=tuple(failed),
        runs=tuple(runs),
        averaged_over=tuple(others),
    )


def threshold_maps(rows: Iterable[Row]) -> list[ThresholdMap]:
    """One map per (strategy, window) whose strategy swept at least one numeric param."""
    by_strategy: dict[str, list[Row]] = {}
    for row in rows:
        by_strategy.setdefault(row.strategy, []).append(row)
    maps = []
    for strategy, members in sorted(by_strategy.items()):
        axes = swept_params(members)
        if not axes:
            continue
        windows = sorted({r.window for r in members})
        for window in windows:
            in_window = [r for r in members if r.window == window]
            maps.append(threshold_map(strategy, window, in_window, axes))
    return maps
