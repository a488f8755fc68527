"""The gate's renderings: JUnit XML keeps an odd cell name intact."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from ctxbench.check import CellCheck, CheckReport, Tolerances
from ctxbench.check_report import junit_report


def test_junit_escapes_odd_cell_names() -> None:
    report = CheckReport([CellCheck('<a&"b>', "r", "ok")], [], Tolerances())
    root = ET.fromstring(junit_report(report).split("\n", 1)[1])
    assert root.find("testcase").get("name") == '<a&"b>'  # type: ignore[union-attr]
