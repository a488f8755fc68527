"""Decision drift: where a strategy's token *estimate* puts a prompt in a different state than
the provider's true count does.

A compaction policy acts on states (DB-GPT: normal < warning 0.70 < error 0.90 < critical 0.95
< overflow 1.0 of the budget). An estimate that undercounts keeps a prompt "normal" while the
true count is already "error": the compaction comes late, and a prompt the estimate says fits
is rejected by the provider. This module compares the two states call by call, from the
``provider.call`` events of a replay (both counts are over the same provider limit).

Where a trace recorded the provider's prompt tokens, those are the truth: a replay without
compaction sends, at call k, the messages the recorded call k was made with, so its billed
prompt tokens are what the state must be judged by (:func:`with_recorded_truth`). The true
counter stands in only for calls without usage, and :class:`DriftCell` says how many calls
each truth covered. :func:`usage_ratios` gives every counter's estimate / recorded per call,
with the content class of the text that call added.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache

from ctxbench.calibration import quantile
from ctxbench.counting.base import TokenCounter
from ctxbench.engine.result import RunResult
from ctxbench.strategies.base import DEFAULT_STATE_THRESHOLDS
from ctxbench.trace import Trace

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


def run_thresholds(row: RunResult) -> Thresholds:
    """The state thresholds of a run's strategy with the run's params (a DB-GPT run with
    warning_threshold 0.6 warns at 0.6). Only built-in strategies are built: a row never
    imports code (a plug-in's run, or a row whose params no longer fit, gets the defaults)."""
    return _thresholds(row.strategy, row.params or "{}")


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
    #: first-attempt calls judged by the provider's recorded prompt tokens (the rest by ``counter``)
    recorded_calls: int = 0
    #: the pooled calls, for the chart of estimate / true per call
    calls: tuple[CallRecord, ...] = field(default=(), compare=False, repr=False)

    @property
    def truth(self) -> str:
        """What the true state was taken from: ``recorded``, ``counter`` or ``recorded+counter``."""
        if not self.recorded_calls:
            return "counter"
        return "recorded" if self.recorded_calls >= self.drift.calls else "recorded+counter"


def recorded_prompts(trace: Trace) -> dict[int, int]:
    """Call number -> the prompt tokens the provider recorded for it (calls with usage only),
    up to the first recorded compaction: after it the agent sent a compacted prompt, which a
    replay without compaction does not."""
    first = min((c.message for c in trace.recorded_compactions), default=len(trace.messages))
    out: dict[int, int] = {}
    for call, index in enumerate(trace.call_indices):
        if index >= first:
            break
        usage = trace.messages[index].usage
        if usage is not None and usage.prompt_tokens:
            out[call] = usage.prompt_tokens
    return out


def with_recorded_truth(
    records: Iterable[CallRecord], recorded: Mapping[int, int]
) -> tuple[list[CallRecord], int]:
    """``records`` of a replay without compaction, with the recorded prompt tokens as the true
    count where the call has them, and how many first attempts got them."""
    out: list[CallRecord] = []
    used = 0
    for r in records:
        billed = recorded.get(r.call)
        if billed is None:
            out.append(r)
            continue
        used += r.attempt == 0
        out.append(replace(r, true=billed, ok=billed <= r.limit))
    return out, used


@dataclass(frozen=True)
class UsageRatio:
    """One counter's estimate over the recorded prompt tokens of one call."""

    counter: str
    trace_id: str
    call: int
    content_class: str
    ratio: float


def usage_ratios(
    traces: Iterable[Trace],
    counters: Sequence[TokenCounter],
    classify: Callable[[str], str],
) -> list[UsageRatio]:
    """estimate / recorded for every call with recorded usage and every counter; the content
    class is that of the text the call added since the previous call (what drives the error)."""
    from ctxbench.calibration import samples
    from ctxbench.counting.breakdown import text_segments

    out: list[UsageRatio] = []
    for trace in traces:
        starts = dict(zip(trace.call_indices, (0, *trace.call_indices)))
        for counter in counters:
            for s in samples(trace, counter):
                added = "".join(
                    t
                    for m in trace.messages[starts[s.messages] : s.messages]
                    for t in text_segments(m)
                )
                cls = classify(added) if added else "prose"
                out.append(UsageRatio(counter.name, trace.id, s.call, cls, s.counted / s.recorded))
    return out


@dataclass(frozen=True)
class RatioSummary:
    """estimate / recorded over a set of calls: the headline number of one counter."""

    calls: int
    median: float
    p10: float
    p90: float
    within_3_percent: float

    @classmethod
    def of(cls, ratios: Sequence[float]) -> RatioSummary:
        return cls(
            len(ratios),
            statistics.median(ratios),
            quantile(ratios, 0.1),
            quantile(ratios, 0.9),
            sum(abs(r - 1) <= 0.03 for r in ratios) / len(ratios),
        )


def summarise_ratios(
    ratios: Iterable[UsageRatio], key: Callable[[UsageRatio], str]
) -> dict[tuple[str, str], RatioSummary]:
    """(counter, group) -> summary, in first-seen order."""
    groups: dict[tuple[str, str], list[float]] = {}
    for r in ratios:
        groups.setdefault((r.counter, key(r)), []).append(r.ratio)
    return {k: RatioSummary.of(v) for k, v in groups.items()}
