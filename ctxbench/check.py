"""The CI regression gate: baselines, checks, and their JUnit / Markdown reports.

A baseline records the metrics of every cell of a sweep, by ``run_id`` and by a readable spec
key (trace, strategy and knobs, window, counters), so a cell whose id changed (a renamed
trace file, a new knob with its default) still finds its baseline. ``check`` compares a
results directory with a baseline:

- a cell regresses when its retention dropped by more than ``max_retention_drop``
  (absolute), its cost rose by more than ``max_cost_increase`` (relative; USD when both sides
  have a price, input tokens otherwise), it has pairing violations or an error it did not have,
  or (with ``fail_on_new_overflow``) more failed calls or overflow errors than before;
- the aggregate regresses when mean retention or total cost crosses the same tolerances;
- cells missing from the results are failures (unless allowed); new cells are reported;
- with ``match_by`` (any of trace, strategy, window, counter) a baseline cell left without a
  match is paired with the current cell that agrees on those fields (a knob whose value
  changed is compared with its old value: :mod:`ctxbench.decisions.matching`).

Improvements are reported beside regressions; a cost change comes with the change in failed
calls (rejected prompts are not billed, so fewer failures can raise the cost); the aggregate
carries a paired bootstrap interval over the matched cells; a baseline that itself has failed
calls or errors is warned about. Replays are deterministic, so the default tolerances are
zero: any change is reported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from ctxbench import jsontext
from ctxbench.config import INT64_MAX
from ctxbench.engine.result import RunResult
from ctxbench.errors import ConfigError, CtxbenchError
from ctxbench.escaping import markdown_cell, markdown_code, markdown_text, one_line, xml_text

BASELINE_SCHEMA = "ctxbench.baseline/1"

#: Metrics recorded per cell (all are columns of the result row).
METRICS: tuple[str, ...] = (
    "retention",
    "recoverability",
    "probes",
    "input_tokens_total",
    "cached_input_tokens",
    "summary_tokens",
    "cost_usd",
    "failed_calls",
    "overflow_errors",
    "pairing_violations",
    "calls",
    "error",
)

#: What a cell is, recorded beside its metrics: matching (--match-by) and readable names read them.
IDENTITY: tuple[str, ...] = (
    "trace_id",
    "strategy",
    "params",
    "window",
    "counter",
    "estimator",
    "summarizer",
    "reserved",
)


def cell_key(result: RunResult) -> str:
    """The readable key of a row: the same cell under a new id still matches its baseline."""
    from ctxbench.cell.spec import RunSpec

    try:
        spec = RunSpec.from_dict(json.loads(result.spec))
    except (TypeError, ValueError, RecursionError, CtxbenchError):  # a damaged spec
        return f"{result.trace_id}|{result.strategy}|w={result.window}|{result.counter}"
    return spec.key


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _cell(result: RunResult) -> dict[str, Any]:
    """A row as a gate cell: run id, key, identity fields and metrics."""
    cell = {"run_id": result.run_id, "key": cell_key(result)}
    cell.update({f: _clean(getattr(result, f)) for f in (*IDENTITY, *METRICS)})
    return cell


def make_baseline(results: Iterable[RunResult], results_dir: str = "") -> dict[str, Any]:
    """The baseline document of a results table (cells sorted by run_id); ``results_dir``
    is recorded so ``check`` can print the ``ctxbench diff`` command of a regressed cell."""
    from ctxbench.engine.result import SCHEMA_VERSION
    from ctxbench.version import __version__

    doc: dict[str, Any] = {
        "schema": BASELINE_SCHEMA,
        "ctxbench_version": __version__,
        "result_schema_version": SCHEMA_VERSION,
    }
    if results_dir:
        doc["results_dir"] = results_dir
    doc["cells"] = [_cell(result) for result in sorted(results, key=lambda r: r.run_id)]
    return doc


def load_baseline(path: str | Path) -> dict[str, Any]:
    """Read and check a baseline file; problems are ConfigErrors naming the file."""
    path = Path(path)
    try:
        text = path.read_text("utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(
            "no such baseline file",
            path=path,
            hint="create one with `ctxbench baseline RESULTS -o FILE`",
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})",
            path=path,
            hint="give a baseline written by `ctxbench baseline`",
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read: {exc.strerror or exc}", path=path, hint="give a baseline JSON file"
        ) from None
    data = jsontext.loads(
        text, path=path, hint="give a baseline written by `ctxbench baseline`, or fix its JSON"
    )
    if not isinstance(data, dict) or data.get("schema") != BASELINE_SCHEMA:
        raise ConfigError(
            f"schema is {data.get('schema') if isinstance(data, dict) else None!r}, expected {BASELINE_SCHEMA!r}",
            path=path,
            key="schema",
            hint="create baselines with `ctxbench baseline`",
        )
    cells = data.get("cells")
    if not isinstance(cells, list) or not all(
        isinstance(c, dict) and "run_id" in c and "key" in c for c in cells
    ):
        raise ConfigError(
            "'cells' must be a list of objects with run_id and key",
            path=path,
            key="cells",
            hint="create baselines with `ctxbench baseline`",
        )
    if not isinstance(data.get("results_dir", ""), str):
        raise ConfigError(
            "results_dir must be a string",
            path=path,
            key="results_dir",
            hint="restore the value `ctxbench baseline` wrote, or record a new baseline",
        )
    for i, cell in enumerate(cells):
        for name, value in cell.items():
            problem = _metric_problem(name, value)
            if problem:
                raise ConfigError(
                    f"{name} must be {problem}, not {value!r}",
                    path=path,
                    key=f"cells[{i}].{name}",
                    hint="restore the value `ctxbench baseline` wrote, or record a new baseline",
                )
    return data


def _metric_problem(name: str, value: Any) -> str | None:
    """What a baseline cell's field must be, when ``value`` is not that (else None)."""
    if name in ("run_id", "key"):
        return None if isinstance(value, str) else "a string"
    if name == "error":
        return None if value is None or isinstance(value, str) else "a string or null"
    if name not in METRICS or value is None:
        return None  # trace_id, strategy: labels only
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or abs(value) > INT64_MAX
    ):
        return "a finite number or null"
    return None


@dataclass(frozen=True)
class Tolerances:
    """How much worse a cell may get before ``check`` fails."""

    max_retention_drop: float = 0.0
    max_cost_increase: float = 0.0
    fail_on_new_overflow: bool = False
    allow_missing: bool = False

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


@dataclass
class CellCheck:
    """The comparison of one cell (matched, new or missing)."""

    key: str
    run_id: str
    status: str  # "ok", "regressed", "improved", "new", "missing"
    matched_by: str = ""  # "run_id", "key" or the --match-by fields
    findings: list[Finding] = field(default_factory=list)
    baseline: Mapping[str, Any] = field(default_factory=dict)
    current: Mapping[str, Any] = field(default_factory=dict)
    improvements: list[Finding] = field(default_factory=list)
    #: short readable name (config, trace, window)
    name: str = ""

    @property
    def baseline_run_id(self) -> str:
        return str(self.baseline.get("run_id") or "")


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


def _cost_metric(base: Mapping[str, Any], cur: Mapping[str, Any]) -> str:
    """USD when both sides have a price, input tokens otherwise."""
    priced = base.get("cost_usd") is not None and cur.get("cost_usd") is not None
    return "cost_usd" if priced else "input_tokens_total"


def compare_cell(base: Mapping[str, Any], cur: Mapping[str, Any], tol: Tolerances) -> list[Finding]:
    """The regressions of one matched cell."""
    out: list[Finding] = []
    b_ret, c_ret = base.get("retention"), cur.get("retention")
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
    cost_name = _cost_metric(base, cur)
    b_cost, c_cost = base.get(cost_name), cur.get(cost_name)
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
    if (cur.get("pairing_violations") or 0) > (base.get("pairing_violations") or 0):
        out.append(
            Finding(
                "pairing_violations",
                base.get("pairing_violations"),
                cur.get("pairing_violations"),
                "tool calls and results were split",
            )
        )
    if cur.get("error") and not base.get("error"):
        out.append(Finding("error", base.get("error"), cur.get("error"), "the cell raised"))
    if tol.fail_on_new_overflow:
        for metric in ("failed_calls", "overflow_errors"):
            if (cur.get(metric) or 0) > (base.get(metric) or 0):
                out.append(
                    Finding(metric, base.get(metric), cur.get(metric), "new context overflows")
                )
    return out


def failure_context(base: Mapping[str, Any], cur: Mapping[str, Any]) -> str:
    """The failed-call change beside a cost change: a rejected prompt is not billed, so a
    cell that fails fewer calls sends (and pays for) more input."""
    parts = []
    for metric, label in (("failed_calls", "failed calls"), ("overflow_errors", "overflow errors")):
        b, c = base.get(metric) or 0, cur.get(metric) or 0
        if b != c:
            parts.append(f"{label} {b} -> {c}")
    if not parts:
        return ""
    fewer = (cur.get("failed_calls") or 0) < (base.get("failed_calls") or 0)
    why = "; fewer failed calls: more prompts accepted and billed" if fewer else ""
    return f"; {', '.join(parts)}{why}"


def improvements_of(base: Mapping[str, Any], cur: Mapping[str, Any]) -> list[Finding]:
    """What got better in a matched cell: retention up, cost down, fewer failed calls."""
    out = []
    b_ret, c_ret = base.get("retention"), cur.get("retention")
    if b_ret is not None and c_ret is not None and c_ret > b_ret + 1e-12:
        out.append(Finding("retention", b_ret, c_ret, f"rose {c_ret - b_ret:.4f}"))
    cost_name = _cost_metric(base, cur)
    b_cost, c_cost = base.get(cost_name), cur.get(cost_name)
    if b_cost is not None and c_cost is not None and float(c_cost) < float(b_cost):
        fell = _relative(float(b_cost), float(c_cost))
        out.append(
            Finding(cost_name, b_cost, c_cost, f"fell {fell:+.2%}" + failure_context(base, cur))
        )
    b_failed, c_failed = base.get("failed_calls") or 0, cur.get("failed_calls") or 0
    if c_failed < b_failed:
        out.append(Finding("failed_calls", b_failed, c_failed, "fewer crashed calls"))
    return out


def _aggregate(
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]], tol: Tolerances
) -> list[Finding]:
    out: list[Finding] = []
    rets = [
        (b["retention"], c["retention"])
        for b, c in pairs
        if b.get("retention") is not None and c.get("retention") is not None
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
    use_usd = (
        all(b.get("cost_usd") is not None and c.get("cost_usd") is not None for b, c in pairs)
        and pairs
    )
    metric = "cost_usd" if use_usd else "input_tokens_total"
    totals = [(b.get(metric), c.get(metric)) for b, c in pairs]
    if totals and all(b is not None and c is not None for b, c in totals):
        b_sum = float(sum(b for b, _ in totals))  # type: ignore[misc]
        c_sum = float(sum(c for _, c in totals))  # type: ignore[misc]
        rise = _relative(b_sum, c_sum)
        if rise > tol.max_cost_increase + 1e-12:
            out.append(Finding(f"total {metric}", b_sum, c_sum, f"rose {rise:+.2%}"))
    return out


def check(
    results: Iterable[RunResult],
    baseline: Mapping[str, Any],
    tol: Tolerances,
    match_by: Sequence[str] = (),
) -> CheckReport:
    """Compare result rows with a baseline document (``match_by``: see the module docstring)."""
    from ctxbench.decisions.changes import baseline_warnings, paired_intervals
    from ctxbench.decisions.matching import cell_names, match_leftovers

    current = {r.run_id: _cell(r) for r in results}
    by_key = {c["key"]: c for c in current.values()}
    matched: set[str] = set()
    found: list[tuple[Mapping[str, Any], Mapping[str, Any] | None, str]] = []
    for base in sorted(baseline["cells"], key=lambda c: str(c["run_id"])):
        same = current.get(str(base["run_id"]))
        how = "run_id"
        if same is None or same["run_id"] in matched:
            same = by_key.get(base["key"])
            how = "key"
        if same is None or same["run_id"] in matched:
            found.append((base, None, ""))
            continue
        matched.add(same["run_id"])
        found.append((base, same, how))
    leftovers = [b for b, c, _ in found if c is None]
    unmatched = [c for run_id, c in sorted(current.items()) if run_id not in matched]
    paired = {str(b["run_id"]): c for b, c in match_leftovers(leftovers, unmatched, match_by)}
    matched |= {str(c["run_id"]) for c in paired.values()}
    names = cell_names([*baseline["cells"], *current.values()])
    cells: list[CellCheck] = []
    pairs = []
    for base, cur, how in found:
        if cur is None and str(base["run_id"]) in paired:
            cur, how = paired[str(base["run_id"])], ",".join(match_by)
        if cur is None:
            name = names[str(base["run_id"])]
            cells.append(
                CellCheck(base["key"], str(base["run_id"]), "missing", baseline=base, name=name)
            )
            continue
        findings = compare_cell(base, cur, tol)
        better = improvements_of(base, cur)
        status = "regressed" if findings else "improved" if better else "ok"
        pairs.append((base, cur))
        cells.append(
            CellCheck(
                base["key"],
                str(cur["run_id"]),
                status,
                how,
                findings,
                base,
                cur,
                better,
                names[str(cur["run_id"])],
            )
        )
    for run_id, new in sorted(current.items()):
        if run_id not in matched:
            cells.append(CellCheck(new["key"], run_id, "new", current=new, name=names[run_id]))
    return CheckReport(
        cells,
        _aggregate(pairs, tol),
        tol,
        paired_intervals(pairs),
        baseline_warnings(baseline["cells"]),
        baseline_results=str(baseline.get("results_dir") or ""),
    )


# -- rendering ----------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


# What the reports say (shared by the text and Markdown renderers; escaping stays in them).

_STATUSES = ("ok", "improved", "regressed", "missing", "new")


def summary_line(report: CheckReport) -> str:
    """``12 cells: 8 ok, 1 improved, 2 regressed, 1 missing, 0 new``."""
    counts = {s: sum(1 for c in report.cells if c.status == s) for s in _STATUSES}
    return f"{len(report.cells)} cells: " + ", ".join(f"{counts[s]} {s}" for s in _STATUSES)


def finding_rows(report: CheckReport, *, improvements: bool = False) -> list[tuple[str, ...]]:
    """(cell, runs, metric, baseline, current, change) of every regression (or improvement),
    then the aggregate regressions."""
    cells = report.improved if improvements else report.regressed
    rows: list[tuple[str, ...]] = [
        (c.name or c.key, run_ids(c), f.metric, _fmt(f.baseline), _fmt(f.current), f.detail)
        for c in cells
        for f in (c.improvements if improvements else c.findings)
    ]
    if not improvements:
        rows += [
            ("(aggregate)", "", f.metric, _fmt(f.baseline), _fmt(f.current), f.detail)
            for f in report.aggregate
        ]
    return rows


FINDING_HEADER = ("cell", "runs", "metric", "baseline", "current", "change")


def run_ids(c: CellCheck) -> str:
    """``run X`` or ``run X -> Y`` when the current cell has another id."""
    if c.baseline_run_id and c.current and c.baseline_run_id != c.run_id:
        return f"{c.baseline_run_id} -> {c.run_id}"
    return c.run_id


def diff_command(report: CheckReport, c: CellCheck) -> str:
    """The ``ctxbench diff`` command that shows where a regressed cell's replay diverged."""
    import shlex

    base = report.baseline_results or "BASELINE_RESULTS"
    cur = report.results_dir or "RESULTS"
    command = ["ctxbench", "diff", base, cur, "--run-a", c.baseline_run_id]
    if c.baseline_run_id != c.run_id:
        command += ["--run-b", c.run_id]
    return shlex.join(command)


def match_notes(report: CheckReport) -> list[str]:
    """How the cells that changed id were paired, with what changed between them."""
    from ctxbench.decisions.matching import changed_knobs

    out = []
    for c in report.cells:
        if c.matched_by in ("", "run_id"):
            continue
        what = changed_knobs(c.baseline, c.current) or "same spec"
        by = "key (run id changed)" if c.matched_by == "key" else f"--match-by {c.matched_by}"
        out.append(f"matched by {by}: {c.name} (run {run_ids(c)}): {what}")
    return out


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in [header, *rows]]


def text_report(report: CheckReport) -> str:
    """What regressed and improved, per cell and in aggregate, with readable cell names."""
    lines = [f"warning: {w}" for w in report.warnings]
    lines.append(summary_line(report))
    for title, rows in (
        ("regressions", finding_rows(report)),
        ("improvements", finding_rows(report, improvements=True)),
    ):
        if rows:
            lines += ["", f"{title}:", *_table(FINDING_HEADER, rows)]
    if report.intervals:
        lines += ["", *report.intervals]
    lines += [""] if report.missing or report.new or match_notes(report) else []
    for c in report.missing:
        lines.append(
            f"missing: {c.name} (run {c.run_id}) is in the baseline but not in the results"
        )
    for c in report.new:
        lines.append(f"new: {c.name} (run {c.run_id}) has no baseline")
    lines += match_notes(report)
    if report.regressed:
        lines += ["", "where each regressed cell diverged:"]
        lines += [f"  {diff_command(report, c)}" for c in report.regressed]
    lines.append("RESULT: " + ("REGRESSION" if report.failed else "ok"))
    return "\n".join(lines)


def markdown_report(report: CheckReport) -> str:
    """A Markdown summary for CI job pages."""
    status = "❌ regression" if report.failed else "✅ no regression"
    out = [f"## ctxbench check: {status}", ""]
    out += [f"> ⚠️ {markdown_text(w)}" for w in report.warnings]
    out += ["", summary_line(report), ""] if report.warnings else [summary_line(report), ""]
    for title, rows in (
        ("Regressions", finding_rows(report)),
        ("Improvements", finding_rows(report, improvements=True)),
    ):
        if rows:
            out += [f"### {title}", "", "| " + " | ".join(FINDING_HEADER) + " |"]
            out.append("|" + "---|" * len(FINDING_HEADER))
            for cells in rows:
                text = [markdown_cell(cells[0]), *(markdown_text(v) for v in cells[1:])]
                out.append("| " + " | ".join(text) + " |")
            out.append("")
    out += [f"- {line}" for line in report.intervals]
    for c in report.missing:
        out.append(f"- missing: {markdown_code(c.name)} (run {markdown_code(c.run_id)})")
    for c in report.new:
        out.append(f"- new: {markdown_code(c.name)} (run {markdown_code(c.run_id)})")
    out += [f"- {one_line(line)}" for line in match_notes(report)]
    if report.regressed:
        out += ["", "Where each regressed cell diverged:", "", "```sh"]
        out += [one_line(diff_command(report, c)).replace("`", "\\`") for c in report.regressed]
        out.append("```")
    return "\n".join(out).rstrip() + "\n"


def junit_report(report: CheckReport) -> str:
    """JUnit XML: one test case per cell (missing cells fail, new cells are skipped)."""
    suite = ET.Element("testsuite", name="ctxbench.check", tests=str(len(report.cells) + 1))
    failures = skipped = 0
    for c in report.cells:
        strategy = str(
            (c.current or c.baseline).get("strategy") or c.key.split("|")[1].split("(")[0]
            if "|" in c.key
            else ""
        )
        case = ET.SubElement(
            suite,
            "testcase",
            classname=xml_text(f"ctxbench.{strategy}" if strategy else "ctxbench"),
            name=xml_text(c.name or c.key),
        )
        if c.status == "regressed":
            failures += 1
            text = (
                "\n".join(
                    f"{f.metric}: {_fmt(f.baseline)} -> {_fmt(f.current)} ({f.detail})"
                    for f in c.findings
                )
                + f"\nsee: {diff_command(report, c)}"
            )
            ET.SubElement(
                case,
                "failure",
                message=xml_text("; ".join(f.metric for f in c.findings)),
                type="regression",
            ).text = xml_text(text)
        elif c.status == "missing":
            if not report.tolerances.allow_missing:
                failures += 1
                ET.SubElement(case, "failure", message="missing from the results", type="missing")
            else:
                skipped += 1
                ET.SubElement(case, "skipped", message="missing from the results (allowed)")
        elif c.status == "new":
            skipped += 1
            ET.SubElement(case, "skipped", message="new cell: no baseline")
    agg = ET.SubElement(suite, "testcase", classname="ctxbench", name="aggregate")
    if report.aggregate:
        failures += 1
        ET.SubElement(
            agg, "failure", message="aggregate regression", type="regression"
        ).text = xml_text(
            "\n".join(
                f"{f.metric}: {_fmt(f.baseline)} -> {_fmt(f.current)} ({f.detail})"
                for f in report.aggregate
            )
        )
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("errors", "0")
    ET.indent(suite)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
    )
