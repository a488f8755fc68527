"""Decision drift: where a strategy's token *estimate* puts a prompt in a different state than
the provider's true count does.

A compaction policy acts on states (DB-GPT: normal < warning 0.70 < error 0.90 < critical 0.95
< overflow 1.0 of the budget). An estimate that undercounts keeps a prompt "normal" while the
true count is already "error": the compaction comes late, and a prompt the estimate says fits
is rejected by the provider. This module compares the two states call by call, from the
``provider.call`` events of a replay (both counts are over the same provider limit).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from ctxbench.strategies.base import DEFAULT_STATE_THRESHOLDS

#: DB-GPT's states from the lowest to the highest usage.
STATES: tuple[str, ...] = ("normal", "warning", "error", "critical", "overflow")
_RANK = {state: rank for rank, state in enumerate(STATES)}

Thresholds = tuple[tuple[float, str], ...]


def state_of(tokens: int, limit: int, thresholds: Thresholds = DEFAULT_STATE_THRESHOLDS) -> str:
    """The state of a prompt of ``tokens`` against ``limit`` (by default DB-GPT's 0.70 / 0.90
    / 0.95 / 1.0; a run's own are :func:`run_thresholds`)."""
    if limit <= 0:
        return "overflow"
    ratio = tokens / limit
    for threshold, state in thresholds:
        if ratio >= threshold:
            return state
    return "normal"


def run_thresholds(row: Mapping[str, Any]) -> Thresholds:
    """The state thresholds of a run's strategy with the run's params (a DB-GPT run with
    warning_threshold 0.6 warns at 0.6). Only built-in strategies are built: a row never
    imports code (a plug-in's run, or a row whose params no longer fit, gets the defaults)."""
    raw = row.get("params") or "{}"
    params = raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True)
    return _thresholds(str(row.get("strategy") or ""), params)


@cache
def _thresholds(strategy: str, params: str) -> Thresholds:
    from ctxbench.errors import CtxbenchError
    from ctxbench.strategies import STRATEGIES, build_strategy

    if ":" in strategy or strategy not in STRATEGIES:
        return DEFAULT_STATE_THRESHOLDS
    try:
        built = build_strategy(strategy, json.loads(params))
    except (CtxbenchError, ValueError, TypeError):
        return DEFAULT_STATE_THRESHOLDS
    return built.state_thresholds()


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One ``provider.call`` event, reduced to what drift and timelines need."""

    call: int
    attempt: int
    estimated: int
    true: int
    limit: int
    ok: bool


@dataclass(frozen=True)
class DecisionDrift:
    """Counts over a set of calls (first attempts) and provider requests (all attempts)."""

    calls: int = 0
    differing: int = 0
    #: the estimate's state is lower than the true one (compaction comes too late)
    under: int = 0
    #: the estimate's state is higher (compaction comes too early)
    over: int = 0
    #: provider requests rejected as too long (all attempts)
    overflows: int = 0
    #: rejected requests whose estimate was within the limit: the undercount caused them
    undercount_overflows: int = 0
    #: (estimated state, true state, calls), most frequent first
    flips: tuple[tuple[str, str, int], ...] = ()

    @property
    def differing_share(self) -> float | None:
        return self.differing / self.calls if self.calls else None


def decision_drift(
    records: Iterable[CallRecord], thresholds: Thresholds = DEFAULT_STATE_THRESHOLDS
) -> DecisionDrift:
    """Compare the estimated and the true state of every call; count the undercount overflows."""
    return pooled_drift([(records, thresholds)])


def pooled_drift(runs: Iterable[tuple[Iterable[CallRecord], Thresholds]]) -> DecisionDrift:
    """:func:`decision_drift` over several runs, each judged by its own thresholds."""
    calls = under = over = overflows = caused = 0
    flips: Counter[tuple[str, str]] = Counter()
    for records, thresholds in runs:
        for r in records:
            if not r.ok:
                overflows += 1
                if r.estimated <= r.limit:
                    caused += 1
            if r.attempt != 0:
                continue
            calls += 1
            estimated = state_of(r.estimated, r.limit, thresholds)
            true = state_of(r.true, r.limit, thresholds)
            if estimated == true:
                continue
            flips[(estimated, true)] += 1
            if _RANK[estimated] < _RANK[true]:
                under += 1
            else:
                over += 1
    ranked = sorted(
        flips.items(), key=lambda item: (-item[1], _RANK[item[0][0]], _RANK[item[0][1]])
    )
    return DecisionDrift(
        calls=calls,
        differing=under + over,
        under=under,
        over=over,
        overflows=overflows,
        undercount_overflows=caused,
        flips=tuple((a, b, n) for (a, b), n in ranked),
    )


@dataclass(frozen=True)
class DriftCell:
    """Decision drift of one estimator against one true counter in one window, pooled over
    ``runs`` replays."""

    estimator: str
    counter: str
    window: int
    runs: int
    drift: DecisionDrift
