"""The recommendation as plain text (``ctxbench recommend`` and the end of ``sweep``)."""

from __future__ import annotations

import math
from typing import Any

from ctxbench.bootstrap import Interval
from ctxbench.decisions.recommend import (
    ConfigStanding,
    GroupVerdict,
    Recommendation,
    Tie,
    tokens_text,
)


def _cost(s: ConfigStanding) -> str:
    c = s.cost
    return f"{tokens_text(c.point)} [{tokens_text(c.low)}, {tokens_text(c.high)}] tokens/trace"


def _standing(s: ConfigStanding) -> str:
    ret = s.retention.text() if math.isfinite(s.retention.point) else "- (no probes)"
    return (
        f"retention {ret}, cost {_cost(s)}, {s.failed_calls} failed calls, "
        f"{s.overflow_errors} overflow errors"
    )


def _tie(t: Tie, traces: int) -> str:
    """What a tie's numbers say (its name aside: ties with the same numbers share a line)."""
    if t.identical:
        return "identical to the pick on every probe and cost (more traces would not separate them)"
    head = (
        f"retention {t.retention_diff.text(signed=True)}, cost "
        f"{tokens_text(t.cost_diff.point, signed=True)} tokens/trace"
    )
    if t.traces_needed is None:
        return head + "; same mean retention (more traces would not separate them)"
    more = t.traces_needed - traces
    return head + f"; about {more:,} more traces ({t.traces_needed:,} in all) would separate them"


def _tie_lines(ties: tuple[Tie, ...], traces: int) -> list[str]:
    groups: dict[str, list[str]] = {}
    for t in ties:
        groups.setdefault(_tie(t, traces), []).append(t.name)
    return [f"{', '.join(names)}: {what}" for what, names in groups.items()]


def _names(names: list[str], most: int = 3) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def group_text(g: GroupVerdict, level: float) -> list[str]:
    pct = f"{level:.0%}"
    lines = [
        f"window {g.window:,}, true counter {g.counter}: {g.traces} traces, "
        f"{len(g.configs)} configs ({pct} intervals)"
    ]
    if g.pick is None:
        lines.append(f"  no recommendation: {g.why_none}")
    else:
        lines.append(f"  deploy: {g.pick.name}")
        lines.append(f"    {_standing(g.pick)}")
        runs = list(g.pick.run_ids)
        lines.append(f"    runs: {_names(runs)}" + (" (all in --json)" if len(runs) > 3 else ""))
        if g.pick.by_kind:
            kinds = ", ".join(f"{k} {v:.2f} (n={n})" for k, (v, n) in g.pick.by_kind.items())
            lines.append(f"    retention by kind: {kinds}")
        lines.extend(f"  warning: {w}" for w in g.warnings)
        if g.ties:
            lines.append("  indistinguishable from it (paired difference, this minus the pick):")
            lines.extend(f"    {line}" for line in _tie_lines(g.ties, g.traces))
        else:
            lines.append("  indistinguishable from it: none (every paired interval excludes 0)")
    others = [s for s in g.configs if g.pick is None or s.key != g.pick.key]
    excluded = [s for s in others if not s.feasible]
    if excluded:
        lines.append("  excluded by the constraints:")
        lines.extend(f"    {s.name}: {s.excluded}" for s in excluded)
    if g.knobs:
        lines.append("  knobs:")
        lines.extend(
            f"    {k.strategy}.{k.knob} ({', '.join(k.values)}): {k.verdict}: {k.detail}"
            for k in g.knobs
        )
    if g.unkept_kinds:
        lines.append(f"  fact kinds no config keeps: {', '.join(g.unkept_kinds)}")
    lines.append("  all configs, best first:")
    lines.extend(
        f"    {s.name}: {_standing(s)}{'' if s.feasible else ' [excluded]'}" for s in g.configs
    )
    return lines


def recommendation_text(rec: Recommendation) -> str:
    """Every group's verdict, with the rule, constraints and method stated once."""
    lines = [
        f"rule: {rec.rule}",
        f"constraints: {rec.constraints.describe()}; cost = input + summary + rejected prompt "
        "tokens per trace",
        f"retention: {rec.weights.describe()}; intervals: {rec.level:.0%}, {rec.resamples:,} "
        f"bootstrap resamples over traces, seed {rec.seed}, paired between configs",
    ]
    lines += [f"note: {n}" for n in rec.notes]
    if not rec.groups:
        lines.append("no runs match")
    for g in rec.groups:
        lines.append("")
        lines += group_text(g, rec.level)
    return "\n".join(lines)


def closing_text(rec: Recommendation, results_dir: str) -> str:
    """The few lines ``sweep`` ends with: each group's pick and ties, and where the rest is."""
    lines = ["recommendation (no failed calls; ties by paired 95% interval):"]
    for g in rec.groups:
        where = f"  w={g.window:,} {g.counter}: "
        if g.pick is None:
            lines.append(where + f"no pick: {g.why_none}")
            continue
        tied = f"; tied: {_names([t.name for t in g.ties])}" if g.ties else ""
        retention = g.pick.retention.text() if math.isfinite(g.pick.retention.point) else "-"
        lines.append(
            where + f"{g.pick.name}, retention {retention}, "
            f"{tokens_text(g.pick.cost.point)} tokens/trace{tied}"
        )
        lines.extend(f"    warning: {w}" for w in g.warnings)
    lines.append(f"  details: ctxbench recommend {results_dir}")
    return "\n".join(lines)


def recommendation_json(rec: Recommendation) -> dict[str, Any]:
    """The same content as :func:`recommendation_text`, for machines (``--json``)."""
    return {
        "rule": rec.rule,
        "constraints": rec.constraints.describe(),
        "retention": rec.weights.describe(),
        "level": rec.level,
        "resamples": rec.resamples,
        "seed": rec.seed,
        "notes": list(rec.notes),
        "groups": [_group_json(g) for g in rec.groups],
    }


def _interval(iv: Interval) -> dict[str, float | None]:
    def value(v: float) -> float | None:
        return round(v, 6) if math.isfinite(v) else None

    return {"point": value(iv.point), "low": value(iv.low), "high": value(iv.high)}


def _standing_json(s: ConfigStanding) -> dict[str, Any]:
    return {
        "name": s.name,
        "strategy": s.key.strategy,
        "params": s.key.param_values,
        "counter": s.key.counter,
        "estimator": s.key.estimator,
        "summarizer": s.key.summarizer,
        "reserved": s.key.reserved,
        "runs": s.runs,
        "retention": _interval(s.retention),
        "cost_tokens_per_trace": _interval(s.cost),
        "failed_calls": s.failed_calls,
        "overflow_errors": s.overflow_errors,
        "errors": s.errors,
        "excluded": s.excluded or None,
        "retention_by_kind": {k: {"retention": v, "probes": n} for k, (v, n) in s.by_kind.items()},
        "run_ids": list(s.run_ids),
    }


def _group_json(g: GroupVerdict) -> dict[str, Any]:
    return {
        "window": g.window,
        "counter": g.counter,
        "traces": g.traces,
        "pick": None if g.pick is None else _standing_json(g.pick),
        "no_pick_because": g.why_none or None,
        "warnings": list(g.warnings),
        "ties": [
            {
                "name": t.name,
                "retention_diff": _interval(t.retention_diff),
                "cost_diff": _interval(t.cost_diff),
                "identical": t.identical,
                "traces_needed": t.traces_needed,
            }
            for t in g.ties
        ],
        "knobs": [
            {
                "strategy": k.strategy,
                "knob": k.knob,
                "values": list(k.values),
                "verdict": k.verdict,
                "detail": k.detail,
            }
            for k in g.knobs
        ],
        "unkept_kinds": list(g.unkept_kinds),
        "configs": [_standing_json(s) for s in g.configs],
    }
