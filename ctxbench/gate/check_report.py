"""What the CI regression gate found, rendered: a text summary, Markdown for CI job pages and
JUnit XML (one test case per cell)."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET

from ctxbench.escaping import markdown_cell, markdown_code, markdown_text, one_line, xml_text
from ctxbench.gate.check import CellCheck, CheckReport, KindSummary


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
KIND_HEADER = ("kind", "baseline", "current", "lowest cell", "cells", "limit", "failed cells")


def _limit(k: KindSummary) -> str:
    parts = [f">= {k.floor:g}"] if k.floor is not None else []
    parts += [f"drop <= {k.max_drop:g}"] if k.max_drop is not None else []
    return ", ".join(parts)


def kind_rows(report: CheckReport) -> list[tuple[str, ...]]:
    """(kind, baseline mean, current mean, lowest cell, cells, limit, failed) of each limited
    probe kind (``--min-kind`` / ``--max-kind-drop``)."""
    return [
        (
            k.kind,
            _fmt(k.baseline),
            _fmt(k.current),
            _fmt(k.lowest),
            str(k.cells),
            _limit(k),
            str(len(k.failed)),
        )
        for k in report.kinds
    ]


def lost_lines(report: CheckReport, kind: str = "") -> list[str]:
    """Per failed kind (or of one ``kind``) and retention drop of a cell, the probes it lost:
    id, kind, the missing answer, the call where it was lost."""
    out = []
    for c in report.regressed:
        for f in c.findings:
            if (kind and f.kind != kind) or not (f.kind or (f.lost and not kind)):
                continue
            out.append(
                f"{c.name or c.key} (run {c.run_id}): {f.metric} {_fmt(f.current)}, {f.detail}"
            )
            if f.kind and not f.lost:
                out.append("  (its events or trace were not at hand: run `ctxbench losses`)")
            out += [f"  {loss.line()}" for loss in f.lost[:MAX_LOST_LINES]]
            if len(f.lost) > MAX_LOST_LINES:
                out.append(f"  ... {len(f.lost) - MAX_LOST_LINES} more: `ctxbench losses`")
    return out


#: Lost probes listed per finding at most (the rest are counted).
MAX_LOST_LINES = 20


def _diffable(report: CheckReport) -> list[CellCheck]:
    """The regressed cells that have a baseline run to diff against."""
    return [c for c in report.regressed if c.baseline_run_id]


def run_ids(c: CellCheck) -> str:
    """``run X`` or ``run X -> Y`` when the current cell has another id."""
    if c.baseline_run_id and c.current is not None and c.baseline_run_id != c.run_id:
        return f"{c.baseline_run_id} -> {c.run_id}"
    return c.run_id


def diff_command(report: CheckReport, c: CellCheck) -> str:
    """The ``ctxbench diff`` command that shows where a regressed cell's replay diverged: from
    the events stored beside the baseline (or the baseline's results folder) to the results."""
    import shlex

    base = report.baseline_results or "BASELINE_RESULTS"
    cur = report.results_dir or "RESULTS"
    command = ["ctxbench", "diff", base, cur, "--run-a", c.baseline_run_id]
    if c.baseline_run_id != c.run_id or base.endswith((".jsonl", ".gz")):  # an events file
        command += ["--run-b", c.run_id]
    return shlex.join(command)


def _same_folder(a: str, b: str) -> bool:
    import os

    return bool(a and b) and os.path.normpath(a) == os.path.normpath(b)


def match_notes(report: CheckReport) -> list[str]:
    """How the cells that changed id were paired, with what changed between them."""
    from ctxbench.decisions.matching import changed_knobs

    notes: dict[tuple[str, str], list[str]] = {}
    for c in report.cells:
        if c.matched_by in ("", "run_id") or c.baseline is None or c.current is None:
            continue
        what = changed_knobs(c.baseline, c.current) or "same spec"
        by = "key (run id changed)" if c.matched_by == "key" else f"--match-by {c.matched_by}"
        notes.setdefault((by, what), []).append(f"{c.name} (run {run_ids(c)})")
    out = []
    for (by, what), cells in notes.items():
        if len(cells) > SAME_CHANGE_LISTED:  # one change shared by many cells: said once
            out.append(f"matched by {by}: {len(cells)} cells: {what}")
        else:
            out += [f"matched by {by}: {cell}: {what}" for cell in cells]
    return out


#: More cells than this sharing one change (a plug-in's new code) are noted in one line.
SAME_CHANGE_LISTED = 3


def failure_reasons(report: CheckReport) -> list[str]:
    """Why a failed check failed, and what to do when cells are missing rather than worse."""
    if not report.failed:
        return []
    why = []
    if report.regressed:
        why.append(f"{len(report.regressed)} cells regressed")
    if report.aggregate:
        why.append("the aggregate regressed")
    missing = len(report.missing) if not report.tolerances.allow_missing else 0
    if missing:
        new = f" and {len(report.new)} new cells have no baseline" if report.new else ""
        why.append(f"{missing} baseline cells are missing from the results{new}")
    out = [f"why: {'; '.join(why)}"]
    if missing:
        out.append(
            "  hint: if new cells replace them (a changed knob, a renamed strategy or moved "
            "plug-in), pair them with --match-by trace,strategy,window,counter (or --rename "
            "OLD=NEW); if they were removed on purpose, add --allow-missing"
        )
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
    if report.kinds:
        lines += ["", "retention by probe kind:", *_table(KIND_HEADER, kind_rows(report))]
    if lost_lines(report):
        lines += ["", "probes lost:", *lost_lines(report)]
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
    if _diffable(report):
        lines += ["", "where each regressed cell diverged:"]
        lines += [f"  {diff_command(report, c)}" for c in _diffable(report)]
        if _same_folder(report.baseline_results, report.results_dir):
            lines.append(
                "  note: the baseline's results folder is the current one (it was overwritten), "
                "so these compare the new runs with themselves; record the baseline again with "
                "`ctxbench baseline` to store its events beside it"
            )
    lines += failure_reasons(report)
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
    if report.kinds:
        out += ["### Retention by probe kind", "", "| " + " | ".join(KIND_HEADER) + " |"]
        out.append("|" + "---|" * len(KIND_HEADER))
        out += [
            "| " + " | ".join(markdown_text(v) for v in row) + " |" for row in kind_rows(report)
        ]
        out.append("")
    if lost_lines(report):
        out += ["### Probes lost", ""]
        out += [
            f"- {markdown_text(line.strip())}"
            if not line.startswith("  ")
            else f"  - {markdown_text(line.strip())}"
            for line in lost_lines(report)
        ]
        out.append("")
    out += [f"- {line}" for line in report.intervals]
    for c in report.missing:
        out.append(f"- missing: {markdown_code(c.name)} (run {markdown_code(c.run_id)})")
    for c in report.new:
        out.append(f"- new: {markdown_code(c.name)} (run {markdown_code(c.run_id)})")
    out += [f"- {one_line(line)}" for line in match_notes(report)]
    out += [f"\n{markdown_text(line.strip())}" for line in failure_reasons(report)]
    if _diffable(report):
        out += ["", "Where each regressed cell diverged:", "", "```sh"]
        out += [one_line(diff_command(report, c)).replace("`", "\\`") for c in _diffable(report)]
        out.append("```")
    return "\n".join(out).rstrip() + "\n"


def _strategy(c: CellCheck) -> str:
    """A cell's strategy for its JUnit class name: recorded, else read from its key (a key
    without ``|`` names none)."""
    if "|" not in c.key:
        return ""
    cell = c.current or c.baseline
    return (cell.strategy if cell is not None else None) or c.key.split("|")[1].split("(")[0]


def junit_report(report: CheckReport) -> str:
    """JUnit XML: one test case per cell (missing cells fail, new cells are skipped)."""
    tests = len(report.cells) + len(report.kinds) + 1
    suite = ET.Element("testsuite", name="ctxbench.check", tests=str(tests))
    failures = skipped = 0
    for c in report.cells:
        strategy = _strategy(c)
        case = ET.SubElement(
            suite,
            "testcase",
            classname=xml_text(f"ctxbench.{strategy}" if strategy else "ctxbench"),
            name=xml_text(c.name or c.key),
        )
        if c.status == "regressed":
            failures += 1
            text = "\n".join(
                f"{f.metric}: {_fmt(f.baseline)} -> {_fmt(f.current)} ({f.detail})"
                + "".join(f"\n  {loss.line()}" for loss in f.lost[:MAX_LOST_LINES])
                for f in c.findings
            )
            if c.baseline_run_id:
                text += f"\nsee: {diff_command(report, c)}"
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
    for k in report.kinds:
        case = ET.SubElement(suite, "testcase", classname="ctxbench.kind", name=xml_text(k.kind))
        if k.failed:
            failures += 1
            ET.SubElement(
                case,
                "failure",
                message=xml_text(f"{k.kind}: {len(k.failed)} cells failed ({_limit(k)})"),
                type="kind",
            ).text = xml_text("\n".join(lost_lines(report, k.kind)))
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
