"""The recommendation as plain text (``ctxbench recommend`` and the end of ``sweep``)."""

from __future__ import annotations

import math

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
        lines.append(f"    runs: {', '.join(g.pick.run_ids)}")
        if g.pick.by_kind:
            kinds = ", ".join(f"{k} {v:.2f} (n={n})" for k, (v, n) in g.pick.by_kind.items())
            lines.append(f"    retention by kind: {kinds}")
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
    lines.append(f"  details: ctxbench recommend {results_dir}")
    return "\n".join(lines)
