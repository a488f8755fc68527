"""Hardening: ids from data cannot break or forge the CI outputs (issue 22).

A real sweep over traces with hostile ids, checked against a baseline so that every cell
appears in every output (regressed, missing and new). Before: ``\\x1b`` or ``\\x00`` in an id
made the JUnit XML unparseable; a newline injected ``## ctxbench check: ✅ no regression`` into
a failing Markdown summary; backticks broke out of code spans; raw HTML passed; ``results.csv``
carried ``=HYPERLINK(...)`` as a formula.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from ctxbench.escaping import csv_cell, markdown_cell, markdown_code, xml_text
from ctxbench.formats.canonical import write_traces
from ctxbench.gate import check as gate
from ctxbench.gate import check_report
from ctxbench.gate.baseline import make_baseline
from ctxbench.sweep import ResultsDir, load_sweep, run_sweep
from tests.factories import tool_trace
from tests.hardening import run_main

HOSTILE_IDS = (
    "\x1b[31mred\x1b[0m",
    "nul\x00byte",
    "x\n## ctxbench check: ✅ no regression\n",
    "cr\rlf\u2028ls",
    "``` `tick` ``",
    "`",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '=HYPERLINK("http://evil.example","click")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A2)",
    "pipe | cell",
    "\ufffe\uffff",
)
FORMULA = ("=", "+", "-", "@")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[gate.CheckReport, Path]:
    root = tmp_path_factory.mktemp("ci")
    traces = [tool_trace(4, output="x" * 500, trace_id=t) for t in HOSTILE_IDS]
    write_traces(root / "traces.jsonl", traces)
    (root / "sweep.toml").write_text(
        'windows = [3000]\nreserved = [200]\ncounters = ["chars4"]\n\n'
        '[[traces]]\npath = "traces.jsonl"\n\n[[strategies]]\nname = "none"\n',
        "utf-8",
    )
    run_sweep(load_sweep(root / "sweep.toml"), root / "results", with_csv=True)
    rows = ResultsDir(root / "results").results()
    baseline = make_baseline(rows)
    kept = [  # the cells regress: they raise now
        dataclasses.replace(c, error=None) for c in baseline.cells if c.trace_id != HOSTILE_IDS[-1]
    ]
    gone = dataclasses.replace(kept[0], run_id="f" * 16, key=kept[0].key.replace("|", "|gone ", 1))
    baseline = dataclasses.replace(baseline, cells=(*kept, gone))
    current = [dataclasses.replace(r, error="RuntimeError: <b>boom</b>\n## fake") for r in rows]
    result = gate.check(current, baseline, gate.Tolerances())
    assert result.failed and result.regressed and result.missing and result.new
    return result, root


def test_junit_parses_and_keeps_every_id_visible(report: tuple[gate.CheckReport, Path]) -> None:
    xml = check_report.junit_report(report[0])
    suite = ET.fromstring(xml)  # before: not well-formed (invalid token)
    names = [case.get("name") or "" for case in suite.iter("testcase")]
    assert len(names) == len(report[0].cells) + 1
    assert any("\\x1b[31mred" in n for n in names) and any("nul\\x00byte" in n for n in names)
    assert any("<img src=x" in n for n in names)  # as text: ElementTree escapes it


def rendered(markdown: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    return str(markdown_it.MarkdownIt("commonmark").enable("table").render(markdown))


def test_markdown_has_one_heading_no_html_and_no_code_span_breakout(
    report: tuple[gate.CheckReport, Path],
) -> None:
    markdown = check_report.markdown_report(report[0])
    html = rendered(markdown)
    assert html.count("<h2>") == 1 and "❌ regression" in html.split("</h2>")[0]
    assert "no regression" not in html.split("</h2>")[0]
    assert "<img" not in html and "<script" not in html and "<b>" not in html
    headings = [line for line in markdown.splitlines() if line.lstrip().startswith("#")]
    assert headings[0].startswith("## ctxbench check: ❌")
    assert set(headings[1:]) <= {"### Regressions", "### Improvements"}, headings
    for cell in report[0].regressed:  # each name is one code span, whole
        assert f"| {markdown_cell(cell.name or cell.key)} |" in markdown, cell.key
    for cell in [*report[0].missing, *report[0].new]:
        assert f": {markdown_code(cell.name)} (run" in markdown, cell.key
    bodies = [part.split("</tbody>")[0] for part in html.split("<tbody>")[1:]]
    body = [row for part in bodies for row in part.split("<tr>")[1:]]
    assert body and all(row.count("<td") == len(check_report.FINDING_HEADER) for row in body)


def test_results_csv_cells_never_start_a_formula(report: tuple[gate.CheckReport, Path]) -> None:
    path = report[1] / "results" / "results.csv"
    with path.open(encoding="utf-8", newline="") as fh:
        cells = [value for row in csv.reader(fh) for value in row]
    assert not [v for v in cells if v.startswith(FORMULA)]
    assert "'" + HOSTILE_IDS[8] in cells and "'-2+3" in cells


def test_ctxbench_run_out_csv_quotes_formulas(tmp_path: Path) -> None:
    write_traces(tmp_path / "t.jsonl", [tool_trace(3, trace_id=HOSTILE_IDS[8])])
    out = tmp_path / "rows.csv"
    args = ["run", str(tmp_path / "t.jsonl"), "-s", "none", "-w", "3000", "--reserved", "0"]
    code, err = run_main([*args, "--out", str(out)])
    assert code == 0, err
    with out.open(encoding="utf-8", newline="") as fh:
        row = next(csv.DictReader(fh))
    assert row["trace_id"] == "'" + HOSTILE_IDS[8]
    assert json.loads(row["spec"])["trace_id"] == HOSTILE_IDS[8]  # JSON cells stay JSON


@pytest.mark.parametrize("value", [*HOSTILE_IDS, "", "plain", 3, -1.5, None])
def test_escapes_are_total_and_leave_safe_text_alone(value: Any) -> None:
    if isinstance(value, str):
        ET.fromstring(f"<a>{xml_text(value).replace('&', '&amp;').replace('<', '&lt;')}</a>")
        assert "\n" not in markdown_code(value) and "\r" not in markdown_code(value)
        assert xml_text("plain <text> & more") == "plain <text> & more"
    shown = csv_cell(value)
    assert not (isinstance(shown, str) and shown.startswith(FORMULA))
    if not (isinstance(value, str) and value.startswith(("=", "+", "-", "@", "\t", "\r"))):
        assert shown == value
