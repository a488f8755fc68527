"""Decision drift: the estimator's DB-GPT state against the true count's, call by call."""

from __future__ import annotations

import pytest

from ctxbench.report.decisions import CallRecord, decision_drift, state_of


@pytest.mark.parametrize(
    ("tokens", "state"),
    [
        (69, "normal"),
        (70, "warning"),
        (89, "warning"),
        (90, "error"),
        (95, "critical"),
        (100, "overflow"),
        (140, "overflow"),
    ],
)
def test_states_follow_dbgpt_thresholds_over_the_limit(tokens: int, state: str) -> None:
    assert state_of(tokens, 100) == state


def test_a_zero_limit_is_always_overflow() -> None:
    assert state_of(0, 0) == "overflow"


def call(estimated: int, true: int, *, attempt: int = 0, ok: bool = True, n: int = 0) -> CallRecord:
    return CallRecord(call=n, attempt=attempt, estimated=estimated, true=true, limit=100, ok=ok)


def test_drift_counts_lower_and_higher_estimated_states_and_undercount_overflows() -> None:
    drift = decision_drift(
        [
            call(60, 75, n=0),  # normal vs warning: estimate lower
            call(96, 85, n=1),  # critical vs warning: estimate higher
            call(50, 55, n=2),  # both normal
            call(92, 110, ok=False, n=3),  # error vs overflow, rejected: the undercount caused it
            call(120, 130, attempt=1, ok=False, n=3),  # a retry: counted as overflow only
            call(65, 72, n=4),  # normal vs warning again
        ]
    )
    assert drift.calls == 5
    assert (drift.differing, drift.under, drift.over) == (4, 3, 1)
    assert (drift.overflows, drift.undercount_overflows) == (2, 1)
    assert drift.differing_share == pytest.approx(4 / 5)
    assert drift.flips[0] == ("normal", "warning", 2)
    assert set(drift.flips[1:]) == {("critical", "warning", 1), ("error", "overflow", 1)}


def test_no_calls_means_no_share() -> None:
    assert decision_drift([]).differing_share is None
