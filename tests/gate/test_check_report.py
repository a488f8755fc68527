"""The gate's renderings: JUnit XML keeps an odd cell name intact."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from ctxbench.gate.baseline import BaselineCell
from ctxbench.gate.check import CellCheck, CheckReport, Tolerances
from ctxbench.gate.check_report import junit_report


def test_junit_escapes_odd_cell_names() -> None:
    report = CheckReport([CellCheck('<a&"b>', "r", "ok")], [], Tolerances())
    root = ET.fromstring(junit_report(report).split("\n", 1)[1])
    assert root.find("testcase").get("name") == '<a&"b>'  # type: ignore[union-attr]


def test_a_check_that_fails_on_missing_cells_says_so_and_how_to_pair_them() -> None:
    from ctxbench.gate.check import CellCheck, CheckReport, Tolerances
    from ctxbench.gate.check_report import failure_reasons, text_report

    gone = [CellCheck(f"k{i}", f"a{i}", "missing", name=f"old {i}") for i in range(12)]
    added = [CellCheck(f"n{i}", f"b{i}", "new", name=f"new {i}") for i in range(12)]
    report = CheckReport([*gone, *added], [], Tolerances())
    text = text_report(report)
    assert "0 regressed, 12 missing, 12 new" in text
    why, hint = failure_reasons(report)
    assert (
        why
        == "why: 12 baseline cells are missing from the results and 12 new cells have no baseline"
    )
    assert "--match-by trace,strategy,window,counter" in hint and "--allow-missing" in hint
    assert text.endswith(f"{why}\n{hint}\nRESULT: REGRESSION")
    allowed = CheckReport([*gone, *added], [], Tolerances(allow_missing=True))
    assert failure_reasons(allowed) == [] and text_report(allowed).endswith("RESULT: ok")


def test_one_change_shared_by_many_matched_cells_is_noted_once() -> None:
    from ctxbench.gate.check import CellCheck, CheckReport, Tolerances
    from ctxbench.gate.check_report import match_notes

    def pair(i: int) -> CellCheck:
        base = BaselineCell(run_id=f"a{i}", key=f"k{i}", plugin="m:f@sha256:1")
        cur = BaselineCell(run_id=f"b{i}", key=f"k{i}", plugin="m:f@sha256:2")
        return CellCheck(f"k{i}", f"b{i}", "ok", "key", [], base, cur, [], f"cell {i}")

    (note,) = match_notes(CheckReport([pair(i) for i in range(8)], [], Tolerances()))
    assert note == "matched by key (run id changed): 8 cells: plug-in code m:f sha256:1 -> sha256:2"
    assert len(match_notes(CheckReport([pair(i) for i in range(3)], [], Tolerances()))) == 3


def test_diff_hints_that_would_compare_a_folder_with_itself_say_so() -> None:
    from ctxbench.gate.check import CellCheck, CheckReport, Finding, Tolerances
    from ctxbench.gate.check_report import text_report

    worse = Finding("retention", 0.8, 0.5, "dropped 0.3")
    base, cur = BaselineCell(run_id="a", key="k"), BaselineCell(run_id="b", key="k")
    cell = CellCheck("k", "b", "regressed", "key", [worse], base, cur)
    report = CheckReport([cell], [], Tolerances(), results_dir="ci-results")
    report.baseline_results = "ci-results/"  # an old baseline: only its results folder, reused
    assert "compare the new runs with themselves" in text_report(report)
    report.baseline_results = "baseline.events.jsonl.gz"
    assert "themselves" not in text_report(report)
