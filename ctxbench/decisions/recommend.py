"""The config to deploy, per window and true counter, with what the data cannot tell apart.

The rule, stated in every answer: among the configs that meet the constraints (by default no
failed calls and no replay errors; optionally a token budget on input + summary + rejected
prompt tokens per trace), the one with the highest retention (equal retention: the cheaper).
Alongside: the configs indistinguishable from the pick, i.e. whose paired retention interval
with it includes 0, with their cost difference (a cheaper tie is a fair choice) and how many
more traces would separate each (from the interval's 1/sqrt(n) shrinkage), each knob's effect
(inert: no outcome changed; mattered: a paired interval excludes 0 or failed calls changed;
otherwise no detectable effect), and the fact kinds no config keeps.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ctxbench.bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Bootstrap,
    Interval,
    traces_to_separate,
)
from ctxbench.decisions.cautions import cautions
from ctxbench.decisions.outcomes import Constraints, KindWeights, RunOutcome, kind_retention
from ctxbench.report.leaderboard import ConfigKey, config_labels
from ctxbench.report.leaderboard import _short as _text


@dataclass(frozen=True)
class ConfigStanding:
    """One config in one (window, counter) group."""

    name: str
    key: ConfigKey
    runs: int
    retention: Interval
    #: mean tokens per trace (input + summary + rejected prompts)
    cost: Interval
    failed_calls: int
    overflow_errors: int
    rejected_tokens: int
    errors: int
    #: why it may not be deployed ("" when it meets the constraints)
    excluded: str
    by_kind: Mapping[str, tuple[float, int]]
    run_ids: tuple[str, ...]

    @property
    def feasible(self) -> bool:
        return not self.excluded


@dataclass(frozen=True)
class Tie:
    """A config the data cannot tell from the pick."""

    name: str
    #: this config minus the pick
    retention_diff: Interval
    cost_diff: Interval
    #: every probe outcome and every cost is the same as the pick's
    identical: bool
    #: traces in all that would separate the two (None: identical, no number would)
    traces_needed: int | None


@dataclass(frozen=True)
class KnobEffect:
    """Whether changing one knob (everything else fixed) changed anything."""

    strategy: str
    knob: str
    values: tuple[str, ...]
    verdict: str  # "inert", "mattered", "no detectable effect"
    detail: str


@dataclass(frozen=True)
class GroupVerdict:
    """The answer for one window and true counter."""

    window: int
    counter: str
    traces: int
    configs: tuple[ConfigStanding, ...]
    pick: ConfigStanding | None
    ties: tuple[Tie, ...]
    knobs: tuple[KnobEffect, ...]
    unkept_kinds: tuple[str, ...]
    why_none: str = ""
    #: what to check before deploying the pick (:mod:`ctxbench.decisions.cautions`)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recommendation:
    """Every group's verdict and how it was computed."""

    groups: tuple[GroupVerdict, ...]
    constraints: Constraints
    weights: KindWeights
    level: float
    resamples: int
    seed: int
    notes: tuple[str, ...] = ()

    @property
    def rule(self) -> str:
        return (
            "the highest retention among the configs that meet the constraints (equal: the "
            "cheaper); tied configs are those its paired interval cannot tell from it"
        )


def recommend(
    runs: Iterable[RunOutcome],
    *,
    constraints: Constraints | None = None,
    weights: KindWeights | None = None,
    window: int | None = None,
    counter: str | None = None,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    strategies: Collection[str] = (),
) -> Recommendation:
    """The verdict of every (window, true counter) group of ``runs`` (or the one asked for;
    only the configs of ``strategies`` when given)."""
    constraints = constraints or Constraints()
    weights = weights or KindWeights()
    groups: dict[tuple[int, str], list[RunOutcome]] = {}
    for run in runs:
        if strategies and run.config.strategy not in strategies:
            continue
        if (window is None or run.window == window) and (counter is None or run.counter == counter):
            groups.setdefault((run.window, run.counter), []).append(run)
    every = [r for members in groups.values() for r in members]
    notes = []
    if every and not any(r.probes for r in every):
        notes.append("no probes were scored: the pick is the cheapest config")
    if any(not r.from_events for r in every):
        notes.append(
            "some runs have no events: their rejected prompts are not counted as cost and "
            "their probes have no kind (kind weights and per-kind retention skip them)"
        )
    verdicts = tuple(
        _group(w, c, members, constraints, weights, level, resamples, seed)
        for (w, c), members in sorted(groups.items())
    )
    return Recommendation(verdicts, constraints, weights, level, resamples, seed, tuple(notes))


@dataclass
class _Data:
    """The paired data of a group: configs (columns) x common traces."""

    keys: list[ConfigKey]
    traces: list[str]
    kept: list[Any]  # per trace: probes x configs
    weights: list[Any]  # per trace: probes
    cost: Any  # traces x configs


def _paired(by_config: Mapping[ConfigKey, Mapping[str, RunOutcome]], weights: KindWeights) -> _Data:
    """Columns of the configs on the traces every config ran (probes every run scored)."""
    keys = sorted(by_config)
    traces = sorted(set.intersection(*(set(by_config[k]) for k in keys))) if keys else []
    kept, probe_weights = [], []
    for t in traces:
        runs = [by_config[k][t] for k in keys]
        common = set.intersection(*({pid for pid, _, _ in r.probes} for r in runs))
        shared = [r.only(common) for r in runs]
        columns = [r.kept(weights)[0] for r in shared]
        w = shared[0].kept(weights)[1]
        kept.append(np.array(columns, dtype=float).T.reshape(len(w), len(keys)))
        probe_weights.append(np.array(w, dtype=float))
    cost = np.array([[by_config[k][t].cost for k in keys] for t in traces], dtype=float)
    return _Data(keys, traces, kept, probe_weights, cost.reshape(len(traces), len(keys)))


def _excluded(runs: Sequence[RunOutcome], cost: float, constraints: Constraints) -> str:
    errors = sum(1 for r in runs if r.error)
    failed = sum(r.failed_calls for r in runs)
    if errors and not constraints.allow_errors:
        return f"{errors} replay error(s)"
    if failed > constraints.max_failed_calls:
        return f"{failed} failed call(s)"
    if constraints.max_tokens is not None and cost > constraints.max_tokens:
        return f"{cost:,.0f} tokens per trace > budget {constraints.max_tokens:,.0f}"
    priced = [r.usd for r in runs if r.usd is not None]
    if constraints.max_usd is not None and priced:
        usd = sum(priced) / len(priced)
        if usd > constraints.max_usd:
            return f"${usd:,.4g} per trace > budget ${constraints.max_usd:,.4g}"
    return ""


def _group(
    window: int,
    counter: str,
    members: Sequence[RunOutcome],
    constraints: Constraints,
    weights: KindWeights,
    level: float,
    resamples: int,
    seed: int,
) -> GroupVerdict:
    all_keys = sorted({r.config for r in members})
    labels = config_labels(all_keys)
    by_config: dict[ConfigKey, dict[str, RunOutcome]] = {}
    for r in members:
        if not r.error:
            by_config.setdefault(r.config, {})[r.trace_id] = r
    data = _paired(by_config, weights)
    standings: list[ConfigStanding] = []
    if data.traces:
        boot = Bootstrap(
            [len(w) for w in data.weights], resamples=resamples, seed=seed, level=level
        )
        ret_point, ret_reps = boot.retention(data.kept, data.weights)
        cost_point, cost_reps = boot.mean(data.cost)
        ret = boot.intervals(ret_point, ret_reps)
        cost = boot.intervals(cost_point, cost_reps)
    column = {k: j for j, k in enumerate(data.keys)}
    nan = Interval(math.nan, math.nan, math.nan, level)
    for key in all_keys:
        runs = [r for r in members if r.config == key]
        j = column.get(key)
        r_iv = ret[j] if j is not None else nan
        c_iv = cost[j] if j is not None else nan
        excluded = _excluded(runs, c_iv.point, constraints)
        if j is None and not excluded:
            excluded = "not run on the traces the others share"
        standings.append(
            ConfigStanding(
                name=labels[key],
                key=key,
                runs=len(runs),
                retention=r_iv,
                cost=c_iv,
                failed_calls=sum(r.failed_calls for r in runs),
                overflow_errors=sum(r.overflow_errors for r in runs),
                rejected_tokens=sum(r.rejected_tokens for r in runs),
                errors=sum(1 for r in runs if r.error),
                excluded=excluded,
                by_kind=kind_retention(r for r in runs if not r.error),
                run_ids=tuple(sorted(r.run_id for r in runs)),
            )
        )
    standings.sort(key=_rank)
    kinds = kind_retention(r for r in members if not r.error)
    unkept = tuple(k for k, (share, _) in kinds.items() if share == 0)
    if not data.traces:
        return GroupVerdict(
            window,
            counter,
            0,
            tuple(standings),
            None,
            (),
            (),
            unkept,
            "no trace was replayed without error by every config",
        )
    feasible = [s for s in standings if s.feasible]
    knobs = tuple(_knobs(standings, column, boot, ret_point, ret_reps, cost_point, cost_reps, data))
    if not feasible:
        fewest = min(standings, key=lambda s: (s.errors, s.failed_calls, _rank(s)))
        why = (
            f"no config meets the constraints ({constraints.describe()}); closest: "
            f"{fewest.name} ({fewest.excluded})"
        )
        return GroupVerdict(
            window, counter, len(data.traces), tuple(standings), None, (), knobs, unkept, why
        )
    pick = feasible[0]
    ties = []
    for s in feasible:
        if s is pick or not math.isfinite(pick.retention.point):
            continue  # no probes scored: the pick is the cheapest, nothing is "tied"
        diff = _diff(boot, ret_point, ret_reps, column, s, pick)
        if diff.excludes_zero:
            continue
        a, b = column[s.key], column[pick.key]
        identical = bool(
            all(np.array_equal(k[:, a], k[:, b]) for k in data.kept)
            and np.array_equal(data.cost[:, a], data.cost[:, b])
        )
        needed = None if identical else traces_to_separate(diff, len(data.traces))
        ties.append(
            Tie(
                s.name,
                diff,
                _diff(boot, cost_point, cost_reps, column, s, pick),
                identical,
                needed,
            )
        )
    inert = {(k.strategy, k.knob) for k in knobs if k.verdict == "inert"}
    warnings = cautions(pick, standings, constraints, len(data.traces), inert)
    return GroupVerdict(
        window,
        counter,
        len(data.traces),
        tuple(standings),
        pick,
        tuple(ties),
        knobs,
        unkept,
        warnings=warnings,
    )


def _rank(s: ConfigStanding) -> tuple[Any, ...]:
    """Best first: feasible, then highest retention, then cheapest, then by name."""
    retention = s.retention.point if math.isfinite(s.retention.point) else -1.0
    cost = s.cost.point if math.isfinite(s.cost.point) else math.inf
    return (not s.feasible, -retention, cost, s.name)


def _diff(
    boot: Bootstrap,
    point: Any,
    reps: Any,
    column: Mapping[ConfigKey, int],
    a: ConfigStanding,
    b: ConfigStanding,
) -> Interval:
    return boot.difference(point, reps, column[a.key], column[b.key])


def _knobs(
    standings: Sequence[ConfigStanding],
    column: Mapping[ConfigKey, int],
    boot: Bootstrap,
    ret_point: Any,
    ret_reps: Any,
    cost_point: Any,
    cost_reps: Any,
    data: _Data,
) -> Iterable[KnobEffect]:
    """Each swept knob of each strategy: compare configs that differ in it alone."""
    present = [s for s in standings if s.key in column]
    by_key = {s.key: s for s in present}
    for strategy in sorted({s.key.strategy for s in present}):
        mine = [s.key for s in present if s.key.strategy == strategy]
        params = {k: k.param_values for k in mine}
        names = sorted({n for p in params.values() for n in p})
        for knob in names:
            values = {_text(p.get(knob)) for p in params.values()}
            if len(values) < 2:
                continue
            buckets: dict[str, list[ConfigKey]] = {}
            for k in mine:
                rest = {n: v for n, v in params[k].items() if n != knob}
                other = (_text(rest), k.counter, k.estimator, k.summarizer, k.reserved)
                buckets.setdefault(repr(other), []).append(k)
            effects = []
            for bucket in buckets.values():
                ordered = sorted(bucket, key=lambda k: _order(params[k].get(knob)))
                for a, b in itertools.pairwise(ordered):
                    effects.append(
                        _pair_effect(
                            a,
                            b,
                            knob,
                            params,
                            by_key,
                            column,
                            boot,
                            data,
                            ret_point,
                            ret_reps,
                            cost_point,
                            cost_reps,
                        )
                    )
            if not effects:
                continue
            shown = tuple(sorted(values, key=lambda v: _order(_parse(v))))
            yield _knob_verdict(strategy, knob, shown, effects)


@dataclass(frozen=True)
class _PairEffect:
    label: str
    identical: bool
    retention: Interval
    cost: Interval
    failed: tuple[int, int]


def _pair_effect(
    a: ConfigKey,
    b: ConfigKey,
    knob: str,
    params: Mapping[ConfigKey, Mapping[str, Any]],
    by_key: Mapping[ConfigKey, ConfigStanding],
    column: Mapping[ConfigKey, int],
    boot: Bootstrap,
    data: _Data,
    ret_point: Any,
    ret_reps: Any,
    cost_point: Any,
    cost_reps: Any,
) -> _PairEffect:
    i, j = column[a], column[b]
    identical = bool(
        all(np.array_equal(k[:, i], k[:, j]) for k in data.kept)
        and np.array_equal(data.cost[:, i], data.cost[:, j])
        and by_key[a].failed_calls == by_key[b].failed_calls
    )
    label = f"{_text(params[a].get(knob))} -> {_text(params[b].get(knob))}"
    return _PairEffect(
        label,
        identical,
        boot.difference(ret_point, ret_reps, j, i),
        boot.difference(cost_point, cost_reps, j, i),
        (by_key[a].failed_calls, by_key[b].failed_calls),
    )


def _knob_verdict(
    strategy: str, knob: str, values: tuple[str, ...], effects: Sequence[_PairEffect]
) -> KnobEffect:
    if all(e.identical for e in effects):
        return KnobEffect(
            strategy,
            knob,
            values,
            "inert",
            f"every probe outcome, cost and failed call identical across {len(effects)} change(s)",
        )
    strong = [
        e
        for e in effects
        if e.retention.excludes_zero or e.cost.excludes_zero or e.failed[0] != e.failed[1]
    ]
    if strong:
        e = max(strong, key=lambda e: (abs(e.retention.point), abs(e.cost.point)))
        parts = []
        if e.retention.excludes_zero:
            parts.append(f"retention {e.retention.text(signed=True)}")
        if e.cost.excludes_zero:
            c = e.cost
            parts.append(
                f"cost {tokens_text(c.point, signed=True)} "
                f"[{tokens_text(c.low, signed=True)}, {tokens_text(c.high, signed=True)}] "
                "tokens/trace"
            )
        if e.failed[0] != e.failed[1]:
            parts.append(f"failed calls {e.failed[0]} -> {e.failed[1]}")
        return KnobEffect(strategy, knob, values, "mattered", f"{e.label}: " + ", ".join(parts))
    scored = [e for e in effects if not math.isnan(e.retention.point)]
    if scored:  # the largest retention change; without probes, the largest cost change
        e = max(scored, key=lambda e: abs(e.retention.point))
        largest = f"retention {e.retention.text(signed=True)}"
    else:
        e = max(effects, key=lambda e: abs(e.cost.point))
        largest = f"cost {tokens_text(e.cost.point, signed=True)} tokens/trace, no probes"
    return KnobEffect(
        strategy,
        knob,
        values,
        "no detectable effect",
        f"outcomes changed but no paired interval excludes 0 (largest: {e.label}, {largest})",
    )


def tokens_text(value: float, *, signed: bool = False) -> str:
    """A token count for people: 1,234 or 56.7k."""
    if not math.isfinite(value):
        return "-"
    sign = "+" if signed and value >= 0 else ""
    return f"{sign}{value / 1000:,.1f}k" if abs(value) >= 1000 else f"{sign}{value:,.0f}"


def _parse(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text


def _order(value: Any) -> tuple[int, float, str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, _text(value))
