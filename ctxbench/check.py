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
- cells missing from the results are failures (unless allowed); new cells are reported.

Replays are deterministic, so the default tolerances are zero: any change is reported.
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
from ctxbench.errors import ConfigError, CtxbenchError
from ctxbench.escaping import markdown_cell, markdown_code, markdown_text, xml_text

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
    "error",
)


def cell_key(row: Mapping[str, Any]) -> str:
    """The readable key of a row: the same cell under a new id still matches its baseline."""
    from ctxbench.cell.spec import RunSpec

    try:
        spec = RunSpec.from_dict(json.loads(row["spec"]))
    except (KeyError, TypeError, ValueError, RecursionError, CtxbenchError):  # a damaged spec
        return f"{row.get('trace_id')}|{row.get('strategy')}|w={row.get('window')}|{row.get('counter')}"
    return spec.key


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def make_baseline(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The baseline document of a results table (cells sorted by run_id)."""
    from ctxbench import __version__
    from ctxbench.engine.result import SCHEMA_VERSION

    cells = []
    for row in sorted(rows, key=lambda r: str(r["run_id"])):
        cell = {
            "run_id": row["run_id"],
            "key": cell_key(row),
            "trace_id": row.get("trace_id"),
            "strategy": row.get("strategy"),
        }
        cell.update({m: _clean(row.get(m)) for m in METRICS})
        cells.append(cell)
    return {
        "schema": BASELINE_SCHEMA,
        "ctxbench_version": __version__,
        "result_schema_version": SCHEMA_VERSION,
        "cells": cells,
    }


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
    status: str  # "ok", "regressed", "new", "missing"
    matched_by: str = ""  # "run_id" or "key"
    findings: list[Finding] = field(default_factory=list)
    baseline: Mapping[str, Any] = field(default_factory=dict)
    current: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class CheckReport:
    """Everything ``check`` found; ``failed`` decides the exit code."""

    cells: list[CellCheck]
    aggregate: list[Finding]
    tolerances: Tolerances

    @property
    def regressed(self) -> list[CellCheck]:
        return [c for c in self.cells if c.status == "regressed"]

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
    cost_name = (
        "cost_usd"
        if base.get("cost_usd") is not None and cur.get("cost_usd") is not None
        else "input_tokens_total"
    )
    b_cost, c_cost = base.get(cost_name), cur.get(cost_name)
    if b_cost is not None and c_cost is not None:
        rise = _relative(float(b_cost), float(c_cost))
        if rise > tol.max_cost_increase + 1e-12:
            out.append(
                Finding(
                    cost_name,
                    b_cost,
                    c_cost,
                    f"rose {rise:+.2%} (max +{tol.max_cost_increase:.2%})",
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
    rows: Iterable[Mapping[str, Any]], baseline: Mapping[str, Any], tol: Tolerances
) -> CheckReport:
    """Compare result rows with a baseline document."""
    current = {
        str(r["run_id"]): {
            **{m: _clean(r.get(m)) for m in METRICS},
            "key": cell_key(r),
            "run_id": str(r["run_id"]),
        }
        for r in rows
    }
    by_key = {c["key"]: c for c in current.values()}
    cells: list[CellCheck] = []
    matched: set[str] = set()
    pairs = []
    for base in sorted(baseline["cells"], key=lambda c: str(c["run_id"])):
        cur = current.get(str(base["run_id"]))
        how = "run_id"
        if cur is None or cur["run_id"] in matched:
            cur = by_key.get(base["key"])
            how = "key"
        if cur is None or cur["run_id"] in matched:
            cells.append(CellCheck(base["key"], str(base["run_id"]), "missing", baseline=base))
            continue
        matched.add(cur["run_id"])
        findings = compare_cell(base, cur, tol)
        pairs.append((base, cur))
        cells.append(
            CellCheck(
                base["key"],
                cur["run_id"],
                "regressed" if findings else "ok",
                how,
                findings,
                base,
                cur,
            )
        )
    for run_id, cur in sorted(current.items()):
        if run_id not in matched:
            cells.append(CellCheck(cur["key"], run_id, "new", current=cur))
    return CheckReport(cells, _aggregate(pairs, tol), tol)


# -- rendering ----------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def text_report(report: CheckReport) -> str:
    """A plain table of what regressed, by how much, per cell and in aggregate."""
    lines = []
    counts = {
        s: sum(1 for c in report.cells if c.status == s)
        for s in ("ok", "regressed", "missing", "new")
    }
    lines.append(
        f"{len(report.cells)} cells: {counts['ok']} ok, {counts['regressed']} regressed, "
        f"{counts['missing']} missing, {counts['new']} new"
    )
    rows = [
        (c.key, f.metric, _fmt(f.baseline), _fmt(f.current), f.detail)
        for c in report.regressed
        for f in c.findings
    ]
    rows += [
        ("(aggregate)", f.metric, _fmt(f.baseline), _fmt(f.current), f.detail)
        for f in report.aggregate
    ]
    if rows:
        header = ("cell", "metric", "baseline", "current", "change")
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
        lines.append("")
        for r in [header, *rows]:
            lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    for c in report.missing:
        lines.append(f"missing: {c.key} (run {c.run_id}) is in the baseline but not in the results")
    for c in report.new:
        lines.append(f"new: {c.key} (run {c.run_id}) has no baseline")
    renamed = [c for c in report.cells if c.matched_by == "key"]
    for c in renamed:
        lines.append(f"matched by key (run id changed): {c.key} -> {c.run_id}")
    lines.append("RESULT: " + ("REGRESSION" if report.failed else "ok"))
    return "\n".join(lines)


def markdown_report(report: CheckReport) -> str:
    """A Markdown summary for CI job pages."""
    status = "❌ regression" if report.failed else "✅ no regression"
    counts = {
        s: sum(1 for c in report.cells if c.status == s)
        for s in ("ok", "regressed", "missing", "new")
    }
    out = [
        f"## ctxbench check: {status}",
        "",
        f"{len(report.cells)} cells — {counts['ok']} ok, {counts['regressed']} regressed, "
        f"{counts['missing']} missing, {counts['new']} new",
        "",
    ]
    findings = [(c.key, f) for c in report.regressed for f in c.findings] + [
        ("aggregate", f) for f in report.aggregate
    ]
    if findings:
        out += ["| cell | metric | baseline | current | change |", "|---|---|---|---|---|"]
        for key, f in findings:
            cells = [key, f.metric, _fmt(f.baseline), _fmt(f.current), f.detail]
            text = [markdown_cell(key)] + [markdown_text(v) for v in cells[1:]]
            out.append("| " + " | ".join(text) + " |")
        out.append("")
    for c in report.missing:
        out.append(f"- missing: {markdown_code(c.key)}")
    for c in report.new:
        out.append(f"- new: {markdown_code(c.key)}")
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
            name=xml_text(c.key),
        )
        if c.status == "regressed":
            failures += 1
            text = "\n".join(
                f"{f.metric}: {_fmt(f.baseline)} -> {_fmt(f.current)} ({f.detail})"
                for f in c.findings
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
