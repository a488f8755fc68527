"""The report's single-run sections: the cliffs of each probe kind per configuration."""

from __future__ import annotations

import json

from ctxbench.report.page import Paragraph, TableBlock
from ctxbench.report.run_sections import cliff_section
from tests.report_data import result_row


def test_cliffs_count_the_runs_falling_with_the_earliest_and_median_compaction() -> None:
    rows = [
        result_row(run_id="a", strategy="sw", window=8192, cliff_by_kind=json.dumps({"safety": 4})),
        result_row(run_id="b", strategy="sw", window=8192, cliff_by_kind=json.dumps({"safety": 2})),
        result_row(run_id="c", strategy="sw", window=8192, cliff_by_kind="{}"),
        result_row(run_id="d", strategy="none", window=8192, cliff_by_kind=""),  # an older row
    ]
    section = cliff_section(rows, {"a": "sw", "b": "sw", "c": "sw", "d": "none"})
    (table,) = [b.table for b in section.blocks if isinstance(b, TableBlock)]
    (row,) = table.rows
    assert [cell.text for cell in row[:4]] == ["sw @8,192", "safety", "2 of 3", "2"]
    assert row[4].sort == 3.0  # the median of 2 and 4


def test_without_a_cliff_the_section_says_so() -> None:
    section = cliff_section([result_row(run_id="a", cliff_by_kind="{}")], {"a": "none"})
    assert any(
        isinstance(b, Paragraph) and b.text == "No run fell past a cliff." for b in section.blocks
    )
