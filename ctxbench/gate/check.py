"""The CI regression gate: result rows checked against a baseline (:mod:`ctxbench.gate.baseline`),
cell by cell and in aggregate; :mod:`ctxbench.gate.check_report` renders the findings.

``check`` compares a results directory with a baseline:

- a cell regresses when its retention dropped by more than ``max_retention_drop``
  (absolute), its cost rose by more than ``max_cost_increase`` (relative; USD when both sides
  have a price, input tokens otherwise), it has pairing violations or an error it did not have,
  or (with ``fail_on_new_overflow``) more failed calls or overflow errors than before;
- the aggregate regresses when mean retention or total cost crosses the same tolerances;
- cells missing from the results are failures (unless allowed); new cells are reported;
- with ``match_by`` (any of trace, strategy, window, counter) a baseline cell left without a
  match is paired with the current cell that agrees on those fields (a knob whose value
  changed is compared with its old value: :mod:`ctxbench.decisions.matching`); a pairing
  that would be a guess (several cells agree, or two strategies) is refused; ``renames``
  maps a renamed or moved strategy to its new name first;
- per probe kind (``kinds``, :class:`~ctxbench.probes.kind_limits.KindLimits`): a cell fails
  when a kind's retention is under its floor (``--min-kind safety=1.0``; new cells too: a
  floor needs no baseline) or dropped more than allowed from the baseline
  (``--max-kind-drop constraint=0``); the finding names the probes of that kind the cell lost,
  with the call where each was lost and the answer missing (``losses``: a run id's
  :class:`~ctxbench.probes.losses.Loss` list, read from its events).

Improvements are reported beside regressions; a cost change comes with the change in failed
calls (rejected prompts are not billed, so fewer failures can raise the cost); the aggregate
carries a paired bootstrap interval over the matched cells; a baseline that itself has failed
calls or errors is warned about. Replays are deterministic, so the default tolerances are
zero: any change is reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ctxbench.engine.result import RunResult
from ctxbench.errors import ConfigError
from ctxbench.gate.baseline import Baseline, BaselineCell, gate_cell, version_warnings
from ctxbench.probes.kind_limits import KindLimits
from ctxbench.probes.losses import Loss

#: a run id's losses (:func:`ctxbench.probes.losses.losses` over its events and trace)
LossLookup = Callable[[str], Sequence[Loss]]


@dataclass(frozen=True)
class Tolerances:
    """How much worse a cell may get before ``check`` fails."""

    max_retention_drop: float = 0.0
    max_cost_increase: float = 0.0
    fail_on_new_overflow: bool = False
    allow_missing: bool = False
    kinds: KindLimits = field(default_factory=KindLimits)

    def __post_init__(self) -> None:
        for name in ("max_retention_drop", "max_cost_increase"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
                raise ConfigError(f"{name} must be a number >= 0, not {value!r}", key=name)


@dataclass(frozen=True)
class Finding:
    """One regression: which metric, from what to what."""

    metric: str
    baseline: Any
    current: Any
    detail: str
    #: the probe kind of a per-kind finding, and the probes of that kind the cell lost
    kind: str = ""
    lost: tuple[Loss, ...] = ()


@dataclass
class CellCheck:
    """The comparison of one cell (matched, new or missing)."""

    key: str
    run_id: str
    status: str  # "ok", "regressed", "improved", "new", "missing"
    matched_by: str = ""  # "run_id", "key" or the --match-by fields
    findings: list[Finding] = field(default_factory=list)
    baseline: BaselineCell | None = None
    current: BaselineCell | None = None
    improvements: list[Finding] = field(default_factory=list)
    #: short readable name (config, trace, window)
    name: str = ""

    @property
    def baseline_run_id(self) -> str:
        return self.baseline.run_id if self.baseline is not None else ""


@dataclass(frozen=True)
class KindSummary:
    """One limited probe kind over the cells: mean retention on each side (over the cells
    that have probes of the kind), the lowest cell, its limits, and the cells that failed."""

    kind: str
    baseline: float | None
    current: float | None
    lowest: float | None
    cells: int
    floor: float | None
    max_drop: float | None
    failed: tuple[str, ...]


@dataclass
class CheckReport:
    """Everything ``check`` found; ``failed`` decides the exit code."""

    cells: list[CellCheck]
    aggregate: list[Finding]
    tolerances: Tolerances
    #: paired intervals of the aggregate changes (lines of text), and baseline warnings
    intervals: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: where the two sides' events are, for the printed ``ctxbench diff`` commands
    results_dir: str = ""
    baseline_results: str = ""
    #: per limited probe kind: the comparison over the cells (Markdown, JUnit)
    kinds: list[KindSummary] = field(default_factory=list)

    @property
    def kind_failures(self) -> list[tuple[CellCheck, Finding]]:
        """Every per-kind finding, with its cell."""
        return [(c, f) for c in self.regressed for f in c.findings if f.kind]

    @property
    def regressed(self) -> list[CellCheck]:
        return [c for c in self.cells if c.status == "regressed"]

    @property
    def improved(self) -> list[CellCheck]:
        return [c for c in self.cells if c.improvements]

    @property
    def missing(self) -> list[CellCheck]:
        return [c for c in self.cells if c.status == "missing"]

    @property
    def new(self) -> list[CellCheck]:
        return [c for c in self.cells if c.status == "new"]

    @property
    def failed(self) -> bool:
        return bool(
            self.regressed or self.aggregate or (self.missing and not self.tolerances.allow_missing)
        )


def _relative(before: float, after: float) -> float:
    if before == 0:
        return 0.0 if after == 0 else math.inf
    return (after - before) / before


def _cost(base: BaselineCell, cur: BaselineCell) -> tuple[str, float | None, float | None]:
    """The cost the two sides are compared by: USD when both have a price, input tokens
    otherwise (the metric's name, the baseline's, the current one)."""
    if base.cost_usd is not None and cur.cost_usd is not None:
        return "cost_usd", base.cost_usd, cur.cost_usd
    return "input_tokens_total", base.input_tokens_total, cur.input_tokens_total


def compare_cell(base: BaselineCell, cur: BaselineCell, tol: Tolerances) -> list[Finding]:
    """The regressions of one matched cell."""
    out: list[Finding] = []
    b_ret, c_ret = base.retention, cur.retention
    if b_ret is not None:
        if c_ret is None:
            out.append(Finding("retention", b_ret, c_ret, "no probes were scored"))
        elif b_ret - c_ret > tol.max_retention_drop + 1e-12:
            out.append(
                Finding(
                    "retention",
                    b_ret,
                    c_ret,
                    f"dropped {b_ret - c_ret:.4f} (max {tol.max_retention_drop})",
                )
            )
    cost_name, b_cost, c_cost = _cost(base, cur)
    if b_cost is not None and c_cost is not None:
        rise = _relative(float(b_cost), float(c_cost))
        if rise > tol.max_cost_increase + 1e-12:
            out.append(
                Finding(
                    cost_name,
                    b_cost,
                    c_cost,
                    f"rose {rise:+.2%} (max +{tol.max_cost_increase:.2%})"
                    + failure_context(base, cur),
                )
            )
    if (cur.pairing_violations or 0) > (base.pairing_violations or 0):
        out.append(
            Finding(
                "pairing_violations",
                base.pairing_violations,
                cur.pairing_violations,
                "tool calls and results were split",
            )
        )
    if cur.error and not base.error:
        out.append(Finding("error", base.error, cur.error, "the cell raised"))
    if tol.fail_on_new_overflow:
        for metric, was, now in _failures(base, cur):
            if (now or 0) > (was or 0):
                out.append(Finding(metric, was, now, "new context overflows"))
    return out + kind_findings(base, cur, tol.kinds)


def _failures(
    base: BaselineCell, cur: BaselineCell
) -> tuple[tuple[str, float | None, float | None], ...]:
    """(metric, baseline, current) of the failed calls and of the overflow errors."""
    return (
        ("failed_calls", base.failed_calls, cur.failed_calls),
        ("overflow_errors", base.overflow_errors, cur.overflow_errors),
    )


def kind_findings(
    base: BaselineCell | None, cur: BaselineCell, limits: KindLimits
) -> list[Finding]:
    """A cell's per-kind failures: a kind under its floor, or dropped more than allowed from
    the baseline cell (``base``; None for a new cell: floors only). A kind the cell has no
    probes of is not judged."""
    now: Mapping[str, float] = cur.retention_by_kind or {}
    before: Mapping[str, float] = (base.retention_by_kind if base else None) or {}
    out: list[Finding] = []
    for kind in limits.kinds():
        if kind not in now:
            continue
        value, was = now[kind], before.get(kind)
        floor, drop = limits.min_retention.get(kind), limits.max_drop.get(kind)
        if floor is not None and value < floor - 1e-12:
            out.append(Finding(f"{kind} retention", was, value, f"under the floor {floor:g}", kind))
        elif drop is not None and was is not None and was - value > drop + 1e-12:
            detail = f"dropped {was - value:.4f} (max {drop:g})"
            out.append(Finding(f"{kind} retention", was, value, detail, kind))
    return out


def failure_context(base: BaselineCell, cur: BaselineCell) -> str:
    """The failed-call change beside a cost change: a rejected prompt is not billed, so a
    cell that fails fewer calls sends (and pays for) more input."""
    parts = []
    for metric, was, now in _failures(base, cur):
        b, c = was or 0, now or 0
        if b != c:
            parts.append(f"{metric.replace('_', ' ')} {b} -> {c}")
    if not parts:
        return ""
    fewer = (cur.failed_calls or 0) < (base.failed_calls or 0)
    why = "; fewer failed calls: more prompts accepted and billed" if fewer else ""
    return f"; {', '.join(parts)}{why}"


def improvements_of(base: BaselineCell, cur: BaselineCell) -> list[Finding]:
    """What got better in a matched cell: retention up, cost down, fewer failed calls."""
    out = []
    b_ret, c_ret = base.retention, cur.retention
    if b_ret is not None and c_ret is not None and c_ret > b_ret + 1e-12:
        out.append(Finding("retention", b_ret, c_ret, f"rose {c_ret - b_ret:.4f}"))
    cost_name, b_cost, c_cost = _cost(base, cur)
    if b_cost is not None and c_cost is not None and float(c_cost) < float(b_cost):
        fell = _relative(float(b_cost), float(c_cost))
        out.append(
            Finding(cost_name, b_cost, c_cost, f"fell {fell:+.2%}" + failure_context(base, cur))
        )
    b_failed, c_failed = base.failed_calls or 0, cur.failed_calls or 0
    if c_failed < b_failed:
        out.append(Finding("failed_calls", b_failed, c_failed, "fewer crashed calls"))
    return out


def _aggregate(
    pairs: Sequence[tuple[BaselineCell, BaselineCell]], tol: Tolerances
) -> list[Finding]:
    out: list[Finding] = []
    rets = [
        (b.retention, c.retention)
        for b, c in pairs
        if b.retention is not None and c.retention is not None
    ]
    if rets:
        b_mean = sum(b for b, _ in rets) / len(rets)
        c_mean = sum(c for _, c in rets) / len(rets)
        if b_mean - c_mean > tol.max_retention_drop + 1e-12:
            out.append(
                Finding(
                    "mean retention",
                    round(b_mean, 4),
                    round(c_mean, 4),
                    f"dropped {b_mean - c_mean:.4f} over {len(rets)} cells",
                )
            )
    use_usd = all(b.cost_usd is not None and c.cost_usd is not None for b, c in pairs) and pairs
    metric = "cost_usd" if use_usd else "input_tokens_total"
    totals = [
        (b.cost_usd, c.cost_usd) if use_usd else (b.input_tokens_total, c.input_tokens_total)
        for b, c in pairs
    ]
    known = [(b, c) for b, c in totals if b is not None and c is not None]
    if totals and len(known) == len(totals):
        b_sum = float(sum(b for b, _ in known))
        c_sum = float(sum(c for _, c in known))
        rise = _relative(b_sum, c_sum)
        if rise > tol.max_cost_increase + 1e-12:
            out.append(Finding(f"total {metric}", b_sum, c_sum, f"rose {rise:+.2%}"))
    return out


def check(
    results: Iterable[RunResult],
    baseline: Baseline,
    tol: Tolerances,
    match_by: Sequence[str] = (),
    renames: Mapping[str, str] | None = None,
    losses: LossLookup | None = None,
    baseline_losses: LossLookup | None = None,
) -> CheckReport:
    """Compare result rows with a baseline (``match_by``: see the module docstring;
    ``renames``: baseline strategy -> the strategy that replaces it; ``losses``: a run id's
    lost probes, named in its per-kind and retention findings; ``baseline_losses``: a baseline
    run id's, so a retention finding names only the probes the baseline kept)."""
    from ctxbench.decisions.changes import baseline_warnings, paired_intervals
    from ctxbench.decisions.matching import cell_names, match_leftovers, renamed

    if tol.kinds.max_drop and any(c.retention_by_kind is None for c in baseline.cells):
        raise ConfigError(
            "the baseline records no retention by probe kind, so --max-kind-drop has nothing "
            "to compare with",
            key="--max-kind-drop",
            hint="record the baseline again with this ctxbench (`ctxbench baseline RESULTS -o "
            "FILE`), or gate on a floor with --min-kind",
        )
    cells_before = renamed(baseline.cells, renames or {})

    current = {r.run_id: gate_cell(r) for r in results}
    by_key = {c.key: c for c in current.values()}
    matched: set[str] = set()
    found: list[tuple[BaselineCell, BaselineCell | None, str]] = []
    for base in sorted(cells_before, key=lambda c: c.run_id):
        same = current.get(base.run_id)
        how = "run_id"
        if same is None or same.run_id in matched:
            same = by_key.get(base.key)
            how = "key"
        if same is None or same.run_id in matched:
            found.append((base, None, ""))
            continue
        matched.add(same.run_id)
        found.append((base, same, how))
    leftovers = [b for b, c, _ in found if c is None]
    unmatched = [c for run_id, c in sorted(current.items()) if run_id not in matched]
    paired = {b.run_id: c for b, c in match_leftovers(leftovers, unmatched, match_by)}
    matched |= {c.run_id for c in paired.values()}
    names = cell_names([*cells_before, *current.values()])
    cells: list[CellCheck] = []
    pairs = []
    for base, cur, how in found:
        if cur is None and base.run_id in paired:
            cur, how = paired[base.run_id], ",".join(match_by)
        if cur is None:
            name = names[base.run_id]
            cells.append(CellCheck(base.key, base.run_id, "missing", baseline=base, name=name))
            continue
        findings = compare_cell(base, cur, tol)
        better = improvements_of(base, cur)
        status = "regressed" if findings else "improved" if better else "ok"
        pairs.append((base, cur))
        cells.append(
            CellCheck(
                base.key, cur.run_id, status, how, findings, base, cur, better, names[cur.run_id]
            )
        )
    for run_id, new in sorted(current.items()):
        if run_id not in matched:
            floors = kind_findings(None, new, tol.kinds)  # a floor needs no baseline
            status = "regressed" if floors else "new"
            cells.append(CellCheck(new.key, run_id, status, "", floors, current=new))
            cells[-1].name = names[run_id]
    if losses is not None:
        for c in cells:
            _name_losses(c, losses, baseline_losses)
    return CheckReport(
        cells,
        _aggregate(pairs, tol),
        tol,
        paired_intervals(pairs),
        version_warnings(baseline) + baseline_warnings(cells_before),
        baseline_results=baseline.results_dir,
        kinds=kind_summaries(cells, tol.kinds),
    )


def _name_losses(c: CellCheck, losses: LossLookup, baseline_losses: LossLookup | None) -> None:
    """Name the probes behind a cell's retention and per-kind findings: each kind's losses;
    for retention, those the baseline run kept (all the cell's when its losses are unknown)."""
    if not any(f.kind or f.metric == "retention" for f in c.findings):
        return
    lost = losses(c.run_id)
    before: set[str] = set()
    if baseline_losses is not None and c.baseline_run_id:
        before = {x.probe_id for x in baseline_losses(c.baseline_run_id)}
    named = []
    for f in c.findings:
        if f.kind:
            f = replace(f, lost=tuple(x for x in lost if x.kind == f.kind))
        elif f.metric == "retention":
            f = replace(f, lost=tuple(x for x in lost if x.probe_id not in before))
        named.append(f)
    c.findings = named


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _shares(cell: BaselineCell | None) -> Mapping[str, float]:
    """A cell's retention by probe kind ({} when it has none)."""
    return (cell.retention_by_kind if cell is not None else None) or {}


def kind_summaries(cells: Sequence[CellCheck], limits: KindLimits) -> list[KindSummary]:
    """The per-kind comparison of the limited kinds over the cells."""
    out = []
    for kind in limits.kinds():
        before = [
            shares[kind]
            for c in cells
            if c.status != "missing" and kind in (shares := _shares(c.baseline))
        ]
        now = [shares[kind] for c in cells if kind in (shares := _shares(c.current))]
        failed = tuple(c.name or c.key for c in cells if any(f.kind == kind for f in c.findings))
        out.append(
            KindSummary(
                kind,
                _mean(before),
                _mean(now),
                min(now) if now else None,
                len(now),
                limits.min_retention.get(kind),
                limits.max_drop.get(kind),
                failed,
            )
        )
    return out
