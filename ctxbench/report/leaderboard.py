"""The leaderboard: result rows aggregated over traces, per configuration and window.

A configuration is everything about a cell but its trace and window: strategy and params,
true counter, estimator, summarizer, output reservation. Its standing in a window averages
the per-trace ratios (each trace counts once, however many probes it has) and sums the
counts, so "3 failed calls" means three crashed calls across all its traces.

Rows whose replay raised (``error`` set) are counted, never averaged in: their zero metrics
would read as a perfect, free strategy.

Mean retention and mean input tokens carry their bootstrap interval over traces (over the
probes of a lone trace), seeded and deterministic (:mod:`ctxbench.bootstrap`): with 13 probes
a trace moves retention in steps of 0.077, so two standings a few hundredths apart are often
the same.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxbench.bootstrap import Bootstrap, Interval
from ctxbench.engine.result import RunResult

Row = RunResult


@dataclass(frozen=True, order=True)
class ConfigKey:
    """A configuration: a cell without its trace and its window."""

    strategy: str
    params: str
    counter: str
    estimator: str
    summarizer: str
    reserved: int

    @classmethod
    def of_result(cls, row: RunResult) -> ConfigKey:
        return cls(
            row.strategy,
            _canonical_params(row.params),
            row.counter,
            row.estimator,
            row.summarizer,
            row.reserved,
        )

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> ConfigKey:
        """The configuration of a row given as a mapping (a baseline's cell)."""
        return cls(
            str(row["strategy"]),
            _canonical_params(row.get("params")),
            str(row.get("counter", "")),
            str(row.get("estimator", "")),
            str(row.get("summarizer", "")),
            int(row.get("reserved") or 0),
        )

    @property
    def param_values(self) -> dict[str, Any]:
        loaded = json.loads(self.params)
        return loaded if isinstance(loaded, dict) else {}


def params_of(row: RunResult) -> dict[str, Any]:
    """A row's strategy params (its ``params`` column is their JSON)."""
    loaded = json.loads(row.params or "{}")
    return loaded if isinstance(loaded, dict) else {}


def _canonical_params(value: Any) -> str:
    if isinstance(value, str):
        value = json.loads(value or "{}")
    return json.dumps(value or {}, sort_keys=True, separators=(",", ":"))


#: the param naming the release a reproduction follows (dbgpt, agentscope, hermes)
RELEASE_PARAM = "release"


def config_labels(keys: Iterable[ConfigKey]) -> dict[ConfigKey, str]:
    """Short, unique labels: the strategy (``@release`` when its params name the release it
    reproduces, e.g. ``dbgpt@0.8.2``), plus only what varies among that strategy's
    configurations (a swept param, the counter, estimator, summarizer or reservation). Rows
    written before a strategy had a ``release`` knob keep the bare name."""
    keys = sorted(set(keys))
    labels = {}
    for strategy in sorted({k.strategy for k in keys}):
        mine = [k for k in keys if k.strategy == strategy]
        params = [k.param_values for k in mine]
        names = sorted({n for p in params for n in p})
        swept = [
            n
            for n in names
            if n != RELEASE_PARAM
            and len({json.dumps(p.get(n), sort_keys=True) for p in params}) > 1
        ]
        fields = [
            f
            for f in ("counter", "estimator", "summarizer", "reserved")
            if len({getattr(k, f) for k in mine}) > 1
        ]
        for k, values in zip(mine, params):
            parts = [f"{n}={_short(values.get(n))}" for n in swept]
            parts += [f"{f}={getattr(k, f)}" for f in fields]
            name = strategy
            if isinstance(values.get(RELEASE_PARAM), str):
                name += f"@{values[RELEASE_PARAM]}"
            labels[k] = name + (f" ({', '.join(parts)})" if parts else "")
    return labels


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return value
    return json.dumps(value)


@dataclass(frozen=True)
class Standing:
    """One configuration in one window, aggregated over its traces."""

    key: ConfigKey
    window: int
    runs: int
    traces: int
    errors: int
    probes: int
    #: mean over traces with probes (None when no trace had probes)
    retention: float | None
    recoverability: float | None
    retention_by_kind: Mapping[str, float]
    #: mean input tokens per trace, and the sum over traces
    input_tokens_mean: float
    input_tokens: int
    cached_input_tokens: int
    cost_usd: float | None
    calls: int
    overflow_errors: int
    failed_calls: int
    reactive_retries: int
    compactions: int
    summary_calls: int
    pairing_violations: int
    system_lost: int
    run_ids: tuple[str, ...]
    #: bootstrap intervals of ``retention`` and ``input_tokens_mean`` (None: nothing to draw)
    retention_interval: Interval | None = None
    tokens_interval: Interval | None = None
    #: probes lost because their task had failed, and recorded actions whose value was gone
    after_failure: int = 0
    open_loop_breaks: int = 0


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _kind_means(rows: Sequence[Row]) -> dict[str, float]:
    by_kind: dict[str, list[float]] = {}
    for row in rows:
        for kind, value in json.loads(row.retention_by_kind or "{}").items():
            by_kind.setdefault(kind, []).append(float(value))
    return {k: statistics.fmean(v) for k, v in sorted(by_kind.items())}


def compaction_layers(row: Row) -> dict[str, int]:
    """Compactions of a run by layer (its ``compactions`` column is their JSON)."""
    return {str(k): int(v) for k, v in json.loads(row.compactions or "{}").items()}


def intervals(scored: Sequence[Row], ok: Sequence[Row]) -> tuple[Interval | None, Interval | None]:
    """The bootstrap intervals of mean retention (rows with probes: each row's kept and lost
    probes) and of mean input tokens (rows without error), each over its rows' traces."""
    retention = None
    counts = [r.probes for r in scored]
    if scored and all(counts):
        kept = [
            [[1.0]] * r.in_context + [[0.0]] * (n - r.in_context) for r, n in zip(scored, counts)
        ]
        boot = Bootstrap(counts)
        point, replicates = boot.retention(kept, [[1.0] * n for n in counts])
        retention = boot.interval(float(point[0]), replicates[:, 0])
    tokens = None
    if ok:
        boot = Bootstrap([0] * len(ok))
        point, replicates = boot.mean([[float(r.input_tokens_total)] for r in ok])
        tokens = boot.interval(float(point[0]), replicates[:, 0])
    return retention, tokens


def standing(
    key: ConfigKey,
    window: int,
    rows: Sequence[Row],
    cost_of: Callable[[Row], float | None] | None = None,
) -> Standing:
    """Aggregate the rows of one configuration in one window."""
    ok = [r for r in rows if not r.error]
    scored = [r for r in ok if r.retention is not None]
    costs = [cost_of(r) if cost_of else r.cost_usd for r in ok]
    known = [c for c in costs if c is not None]
    retention_interval, tokens_interval = intervals(scored, ok)
    return Standing(
        key=key,
        window=window,
        runs=len(rows),
        traces=len({r.trace_id for r in ok}),
        errors=len(rows) - len(ok),
        probes=sum(r.probes for r in ok),
        retention=_mean([float(r.retention) for r in scored if r.retention is not None]),
        recoverability=_mean([float(r.recoverability or 0.0) for r in scored]),
        retention_by_kind=_kind_means(scored),
        input_tokens_mean=_mean([float(r.input_tokens_total) for r in ok]) or 0.0,
        input_tokens=sum(r.input_tokens_total for r in ok),
        cached_input_tokens=sum(r.cached_input_tokens for r in ok),
        cost_usd=round(sum(known), 6) if known and len(known) == len(ok) else None,
        calls=sum(r.calls for r in ok),
        overflow_errors=sum(r.overflow_errors for r in ok),
        failed_calls=sum(r.failed_calls for r in ok),
        reactive_retries=sum(r.reactive_retries for r in ok),
        compactions=sum(sum(compaction_layers(r).values()) for r in ok),
        summary_calls=sum(r.summary_calls for r in ok),
        pairing_violations=sum(r.pairing_violations for r in ok),
        system_lost=sum(1 for r in ok if not r.system_kept),
        run_ids=tuple(sorted(r.run_id for r in rows)),
        retention_interval=retention_interval,
        tokens_interval=tokens_interval,
        after_failure=sum(r.after_failure for r in ok),
        open_loop_breaks=sum(r.open_loop_breaks for r in ok),
    )


def leaderboard(
    rows: Iterable[Row], cost_of: Callable[[Row], float | None] | None = None
) -> dict[int, list[Standing]]:
    """window -> standings, best first: fewest failed calls (a failed call is one the real
    agent would have crashed on: a crashed run's probes from there on count as lost), then
    highest retention, then fewest input tokens; no probes last."""
    groups: dict[tuple[int, ConfigKey], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.window, ConfigKey.of_result(row)), []).append(row)
    board: dict[int, list[Standing]] = {}
    for (window, key), members in sorted(groups.items()):
        board.setdefault(window, []).append(standing(key, window, members, cost_of))
    for standings in board.values():
        standings.sort(
            key=lambda s: (
                s.retention is None,
                s.failed_calls,
                -(s.retention or 0.0),
                s.input_tokens_mean,
                s.key,
            )
        )
    return board
