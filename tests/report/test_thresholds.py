"""Threshold maps: retention and failed calls over the params a sweep varied."""

from __future__ import annotations

import json

import pytest

from ctxbench.report.thresholds import swept_params, threshold_maps
from tests.report.test_leaderboard import row


def params(w: float, e: float, keep: int = 3) -> str:
    return json.dumps(
        {
            "warning_threshold": w,
            "error_threshold": e,
            "min_keep_recent_rounds": keep,
            "snapshots": True,
        }
    )


def test_swept_params_are_numeric_params_with_several_values_thresholds_first() -> None:
    rows = [row("a", "t", params=params(0.6, 0.9, 2)), row("b", "t", params=params(0.7, 0.9, 3))]
    assert swept_params(rows) == ["warning_threshold", "min_keep_recent_rounds"]


def test_a_two_param_grid_averages_each_cell_over_traces() -> None:
    rows = [
        row("a", "t1", params=params(0.6, 0.85), retention=1.0, failed_calls=0),
        row("b", "t2", params=params(0.6, 0.85), retention=0.5, failed_calls=2),
        row("c", "t1", params=params(0.7, 0.85), retention=0.25),
        row("d", "t1", params=params(0.6, 0.9), retention=0.0),
    ]
    (grid,) = threshold_maps(rows)
    assert (grid.x_param, grid.y_param) == ("error_threshold", "warning_threshold")
    assert grid.x_values == (0.85, 0.9) and grid.y_values == (0.6, 0.7)
    assert grid.retention[0] == (pytest.approx(0.75), 0.0)
    assert grid.retention[1] == (0.25, None)  # (0.7, 0.9) was not run
    assert grid.failed_calls[0][0] == pytest.approx(1.0)
    assert grid.runs == ((2, 1), (1, 0))
    assert grid.averaged_over == ("traces",)


def test_one_swept_param_gives_one_row_per_window() -> None:
    rows = [
        row(
            f"r{w}{k}",
            "t",
            strategy="sliding_window",
            params=json.dumps({"keep_rounds": k}),
            window=w,
        )
        for w in (8192, 32768)
        for k in (2, 8)
    ]
    maps = threshold_maps(rows)
    assert [(m.window, m.y_param, m.x_values) for m in maps] == [
        (8192, None, (2.0, 8.0)),
        (32768, None, (2.0, 8.0)),
    ]


def test_strategies_without_swept_params_have_no_map() -> None:
    assert threshold_maps([row("a", "t", strategy="none", params="{}")]) == []
