"""Timelines: usage ratios per call, and the fixed rule choosing which runs to draw."""

from __future__ import annotations

import json
from typing import Any

from ctxbench.report.decisions import CallRecord
from ctxbench.report.results import RunEvents
from ctxbench.report.timeline import pick_timelines, timeline
from tests.report.test_leaderboard import row


def test_a_timeline_reads_first_attempts_and_marks_every_rejection() -> None:
    events = RunEvents(
        calls=(
            CallRecord(0, 0, 40, 50, 100, True),
            CallRecord(1, 0, 90, 120, 100, False),
            CallRecord(1, 1, 30, 60, 100, True),
        ),
        compactions=((1, "layer4"),),
    )
    line = timeline("r", "dbgpt", events)
    assert line.calls == (0, 1)
    assert line.true_ratio == (0.5, 1.2)
    assert line.estimated_ratio == (0.4, 0.9)
    assert line.overflows == ((1, 1.2),)
    assert line.compactions == ((1, "layer4"),)


def test_the_longest_traces_are_drawn_at_their_smallest_window_one_run_per_strategy() -> None:
    rows = [
        row("a1", "long", calls=50, window=8192, overflow_errors=1),
        row(
            "a2",
            "long",
            calls=50,
            window=8192,
            overflow_errors=3,
            params=json.dumps({"warning_threshold": 0.6}),
        ),
        row("a3", "long", calls=50, window=32768, overflow_errors=9),
        row("a4", "long", calls=50, window=8192, strategy="none", params="{}"),
        row("a5", "long", calls=50, window=8192, counter="hf:qwen2.5", overflow_errors=99),
        row("b1", "short", calls=5, window=8192),
        row("c1", "mid", calls=20, window=8192),
    ]
    groups = pick_timelines(rows, max_traces=2)
    assert [(g.trace_id, g.window, g.counter) for g in groups] == [
        ("long", 8192, "tiktoken:o200k_base"),
        ("mid", 8192, "tiktoken:o200k_base"),
    ]
    assert [r.run_id for r in groups[0].rows] == ["a2", "a4"]


def test_the_recommended_and_default_configurations_are_drawn() -> None:
    rows = [
        row("a1", "long", calls=50, window=8192, overflow_errors=9),  # most overflows
        row("a2", "long", calls=50, window=8192, params=json.dumps({"warning_threshold": 0.6})),
        row("a3", "long", calls=50, window=8192, strategy="none", params="{}"),
        row("a4", "long", calls=50, window=8192, strategy="sliding_window", params="{}"),
    ]

    def recommended(window: int, counter: str) -> Any:
        assert (window, counter) == (8192, "tiktoken:o200k_base")
        return lambda r: r.run_id == "a2"

    (group,) = pick_timelines(rows, recommended=recommended, is_default=lambda r: r.params == "{}")
    assert [r.run_id for r in group.rows] == ["a2", "a3", "a4"]
    assert group.roles == ("recommended", "default", "default")
    # without either rule, the old one: the run with the most overflows per strategy
    (fallback,) = pick_timelines(rows)
    assert fallback.roles[0] == "most overflows" and fallback.rows[0].run_id == "a1"
