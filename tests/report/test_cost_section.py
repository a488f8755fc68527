"""The report's cost section: cost per trace with and without compaction, per configuration and
window, and each compaction's payback."""

from __future__ import annotations

import pytest

from ctxbench.report.cost_section import cost_section
from ctxbench.report.document import _cost_section
from ctxbench.report.leaderboard import ConfigKey, config_labels
from ctxbench.report.page import Section, TableBlock
from ctxbench.report.results import load_results
from ctxbench.report.table import Table
from ctxbench.report.write import load_traces
from tests.report_data import CONFIGS, WINDOWS, built_report


@pytest.fixture(scope="module")
def section() -> Section:
    results = load_results(built_report())
    traces, _ = load_traces(results.rows)
    keys = {r.run_id: ConfigKey.of_result(r) for r in results.rows}
    labels = config_labels(keys.values())
    run_labels = {run_id: labels[key] for run_id, key in keys.items()}
    return _cost_section(results.rows, results, traces, run_labels)


def _table(section: Section, table_id: str) -> Table:
    return next(
        b.table for b in section.blocks if isinstance(b, TableBlock) and b.table.id == table_id
    )


def test_one_row_per_configuration_and_window_priced_with_the_tables_date(
    section: Section,
) -> None:
    table = _table(section, "cost")
    assert len(table.rows) == len(CONFIGS) * len(WINDOWS)
    assert "read 2026-12-05" in table.note and "gpt-4o" in table.note
    labels = [c.label for c in table.columns]
    window, without = labels.index("window"), labels.index("USD / trace without")
    # without compaction is the none run of the same traces and window, for every configuration
    for size in WINDOWS:
        same = {row[without].text for row in table.rows if row[window].sort == size}
        assert len(same) == 1 and same != {"–"}
    change = labels.index("change")
    assert {row[change].text for row in table.rows if row[0].text == "none"} == {"0.0%"}


def test_none_makes_no_compaction_and_compacting_strategies_list_their_paybacks(
    section: Section,
) -> None:
    table = _table(section, "cost")
    labels = [c.label for c in table.columns]
    compactions = {row[0].text: row[labels.index("compactions")].sort for row in table.rows}
    assert compactions["none"] == 0
    paybacks = _table(section, "paybacks")
    assert paybacks.rows and all(r[0].text != "none" for r in paybacks.rows)
    last = [r[-1].text for r in paybacks.rows]
    assert all(t == "never" or int(t.replace(",", "")) >= 1 for t in last)


def test_a_results_directory_without_events_says_so() -> None:
    empty = cost_section((), {}, {}, {}, lambda row: None, has_events=False)
    assert "no events" in empty.blocks[0].text  # type: ignore[union-attr]
