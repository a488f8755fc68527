"""Timelines and decision drift use each run's own state thresholds, not DB-GPT's defaults."""

from __future__ import annotations

import dataclasses
import json
import sys

from ctxbench.engine.result import RunResult
from ctxbench.report.counting_sections import drift_from_events
from ctxbench.report.decisions import CallRecord, run_thresholds, state_of
from ctxbench.report.results import RunEvents
from ctxbench.report.timeline import timeline
from ctxbench.strategies.base import DEFAULT_STATE_THRESHOLDS
from tests.report_data import result_row


def row(strategy: str, **params: object) -> RunResult:
    return result_row(
        run_id=f"{strategy}-{sorted(params.items())}",
        strategy=strategy,
        params=json.dumps(params),
        window=1000,
        counter="c",
        estimator="e",
    )


def test_a_dbgpt_run_is_judged_by_its_own_thresholds() -> None:
    early = run_thresholds(row("dbgpt", warning_threshold=0.6, error_threshold=0.8))
    assert dict((s, t) for t, s in early)["warning"] == 0.6
    assert state_of(65, 100, early) == "warning" and state_of(65, 100) == "normal"
    assert state_of(85, 100, early) == "error" and state_of(85, 100) == "warning"
    assert run_thresholds(row("sliding_window", keep_rounds=4)) == DEFAULT_STATE_THRESHOLDS


def test_rows_never_import_code_and_bad_params_fall_back_to_the_defaults() -> None:
    assert run_thresholds(row("tests.not_a_module_anyone_imports:X")) == DEFAULT_STATE_THRESHOLDS
    assert "tests.not_a_module_anyone_imports" not in sys.modules
    assert run_thresholds(row("dbgpt", warning_threshold=2.0)) == DEFAULT_STATE_THRESHOLDS


def test_timeline_lines_and_drift_states_follow_the_run() -> None:
    call = CallRecord(call=0, attempt=0, estimated=650, true=720, limit=1000, ok=True)
    events = {"a": RunEvents(calls=(call,)), "b": RunEvents(calls=(call,))}
    early = dataclasses.replace(row("dbgpt", warning_threshold=0.6), run_id="a")
    default = dataclasses.replace(row("dbgpt"), run_id="b")
    lines = timeline("a", "a", events["a"], run_thresholds(early)).state_lines
    assert (
        (0.6, "warning") in lines and (0.7, "warning") not in lines and lines[-1] == (1.0, "limit")
    )
    assert (0.7, "warning") in timeline("b", "b", events["b"]).state_lines
    (only_early,) = drift_from_events([early], events)
    (only_default,) = drift_from_events([default], events)
    # 0.65 estimated vs 0.72 true: both "warning" at 0.6; "normal" vs "warning" at DB-GPT's 0.70
    assert only_early.drift.differing == 0 and only_default.drift.under == 1
    (pooled,) = drift_from_events([early, default], events)
    assert pooled.runs == 2 and pooled.drift.calls == 2 and pooled.drift.under == 1
