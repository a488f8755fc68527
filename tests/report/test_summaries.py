"""The report's Summaries section: the summarizer of each summarising configuration, and the
stand-in's retention beside the recorded summaries' when the results hold both."""

from __future__ import annotations

from ctxbench.engine.result import RunResult
from ctxbench.report.leaderboard import ConfigKey, config_labels
from ctxbench.report.page import TableBlock
from ctxbench.report.summaries import summaries_section
from tests.report_data import result_row


def row(summarizer: str, trace: str, retention: float, recorded: int = 0) -> RunResult:
    return result_row(
        run_id=f"{summarizer}-{trace}",
        trace_id=trace,
        strategy="claude_code",
        window=200_000,
        summarizer=summarizer,
        summary_calls=1,
        recorded_summaries=recorded,
        retention=retention,
        probes=4,
    )


def tables(rows: list[RunResult]) -> list[TableBlock]:
    labels = config_labels(ConfigKey.of_result(r) for r in rows)
    section = summaries_section(rows, labels)
    assert section is not None
    return [b for b in section.blocks if isinstance(b, TableBlock)]


def test_no_summarising_row_no_section() -> None:
    assert summaries_section([result_row(strategy="none")], {}) is None


def test_each_configuration_names_its_summarizer_and_extractive_is_the_upper_bound() -> None:
    (listing,) = tables([row("extractive", "a", 0.9)])
    ((_label, name, what, calls, real),) = listing.table.rows
    assert (name.text, calls.text, real.text) == ("extractive", "1", "0")
    assert what.text.startswith("verbatim upper bound")


def test_the_stand_in_is_shown_beside_the_recorded_summaries() -> None:
    rows = [
        row("recorded", "a", 0.25, recorded=1),
        row("recorded", "b", 0.75, recorded=1),
        row("model_like", "a", 0.5),
        row("model_like", "b", 0.5),
        row("extractive", "a", 1.0),  # only one trace in common
    ]
    _, beside = tables(rows)
    got = {r[2].text: (r[3].text, r[4].text, r[5].text) for r in beside.table.rows}
    assert got == {"extractive": ("0.250", "1.000", "1"), "model_like": ("0.500", "0.500", "2")}
