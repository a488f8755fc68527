"""The "presence vs answers" section: string presence and the model's answers per
configuration, window and probe kind, their paired gap with bootstrap intervals."""

from __future__ import annotations

from ctxbench.engine import events as ev
from ctxbench.report.answered import ALL, answered_section, calibrations
from ctxbench.report.page import Chart, TableBlock
from ctxbench.report.results import AnswerOutcome, digest_events
from tests.report_data import result_row


def answer(kind: str, outcome: str, verdict: str, i: int = 0) -> AnswerOutcome:
    return AnswerOutcome(f"p{i}", kind, verdict, outcome)


RUNS = {
    "a": [answer("recall", "in_context", "answered", 0), answer("task", "in_context", "missed", 1)],
    "b": [answer("recall", "in_context", "missed", 0), answer("task", "lost", "answered", 1)],
    "c": [answer("recall", "lost", "missed", 0)],
}
ROWS = [
    result_row(run_id="a", trace_id="t1", strategy="dbgpt", window=100),
    result_row(run_id="b", trace_id="t2", strategy="dbgpt", window=100),
    result_row(run_id="c", trace_id="t1", strategy="none", window=100),
]


def test_presence_answers_and_their_gap_per_configuration_and_kind() -> None:
    found = calibrations(ROWS, lambda r: RUNS[r], {"a": "dbgpt", "b": "dbgpt", "c": "none"})
    by = {(c.label, c.kind): c for c in found}
    assert sorted(by) == [
        ("dbgpt", ALL),
        ("dbgpt", "recall"),
        ("dbgpt", "task"),
        ("none", ALL),
        ("none", "recall"),
    ]
    overall = by["dbgpt", ALL]
    # the mean over traces of each trace's share: t1 presence 1, answered 0.5; t2 0.5, 0.5
    assert (overall.traces, overall.probes) == (2, 4)
    assert (overall.presence.point, overall.answered.point) == (0.75, 0.5)
    assert overall.gap.point == 0.25
    assert overall.gap.low <= overall.gap.point <= overall.gap.high
    assert (overall.present_missed, overall.absent_answered) == (2, 1)
    assert (by["none", ALL].presence.point, by["none", ALL].answered.point) == (0.0, 0.0)


def test_the_section_shows_a_chart_and_a_row_per_group_and_nothing_without_answers() -> None:
    found = calibrations(ROWS, lambda r: RUNS[r], {})
    section = answered_section(found)
    assert section is not None and section.id == "presence-vs-answers"
    chart = next(b for b in section.blocks if isinstance(b, Chart))
    assert chart.svg.count("<rect") == 2 * sum(c.kind == ALL for c in found)
    table = next(b for b in section.blocks if isinstance(b, TableBlock)).table
    assert len(table.rows) == len(found)
    assert answered_section(calibrations(ROWS, lambda r: [], {})) is None


def test_the_report_reads_answers_from_the_events() -> None:
    event = ev.ProbeAnswer(
        step=9, call=3, probe_id="p", kind="recall", verdict="answered", outcome="lost"
    )
    digest = digest_events([("r", event)])
    assert digest["r"].answers == (AnswerOutcome("p", "recall", "answered", "lost"),)
