"""The leaderboard: rows aggregated over traces per configuration and window."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxbench.engine.result import RunResult
from ctxbench.report.leaderboard import ConfigKey, config_labels, leaderboard
from tests.report_data import result_row


def row(run_id: str, trace: str, **changes: Any) -> RunResult:
    base: dict[str, Any] = {
        "run_id": run_id,
        "trace_id": trace,
        "strategy": "dbgpt",
        "params": json.dumps({"warning_threshold": 0.7, "error_threshold": 0.9}),
        "window": 32768,
        "reserved": 4096,
        "counter": "tiktoken:o200k_base",
        "estimator": "dbgpt",
        "summarizer": "extractive",
        "calls": 10,
        "failed_calls": 0,
        "overflow_errors": 0,
        "reactive_retries": 0,
        "compactions": json.dumps({"layer1": 2, "layer2": 1}),
        "summary_calls": 0,
        "input_tokens_total": 1000,
        "cached_input_tokens": 250,
        "pairing_violations": 0,
        "system_kept": True,
        "probes": 2,
        "retention": 1.0,
        "recoverability": 1.0,
        "retention_by_kind": json.dumps({"recall": 1.0}),
        "cost_usd": 0.5,
        "error": None,
    }
    base.update(changes)
    return result_row(**base)


def test_ratios_are_means_over_traces_and_counts_are_sums() -> None:
    rows = [
        row("a", "t1", retention=1.0, recoverability=1.0, probes=2, input_tokens_total=1000),
        row(
            "b",
            "t2",
            retention=0.0,
            recoverability=0.5,
            probes=10,
            input_tokens_total=3000,
            failed_calls=1,
            overflow_errors=2,
            retention_by_kind=json.dumps({"recall": 0.0, "artifact": 0.0}),
        ),
    ]
    (standing,) = leaderboard(rows)[32768]
    assert standing.traces == 2
    assert standing.probes == 12
    assert standing.retention == pytest.approx(0.5)  # not pooled 2/12
    assert standing.recoverability == pytest.approx(0.75)
    assert standing.retention_by_kind == {"artifact": 0.0, "recall": 0.5}
    assert standing.input_tokens_mean == 2000
    assert standing.input_tokens == 4000
    assert (standing.failed_calls, standing.overflow_errors, standing.compactions) == (1, 2, 6)
    assert standing.cost_usd == pytest.approx(1.0)


def test_rows_that_raised_are_counted_but_never_averaged() -> None:
    rows = [
        row("a", "t1", retention=0.5),
        row("b", "t2", retention=None, error="ValueError: x", input_tokens_total=0),
    ]
    (standing,) = leaderboard(rows)[32768]
    assert (standing.runs, standing.errors, standing.traces) == (2, 1, 1)
    assert standing.retention == 0.5
    assert standing.input_tokens_mean == 1000


def test_cost_is_unknown_when_any_run_has_no_price() -> None:
    (standing,) = leaderboard([row("a", "t1"), row("b", "t2", cost_usd=None)])[32768]
    assert standing.cost_usd is None


def test_a_configuration_that_failed_calls_ranks_below_one_that_did_not() -> None:
    never = json.dumps({"warning_threshold": 0.6, "error_threshold": 0.9})
    rows = [
        row("a", "t1", retention=1.0, failed_calls=3),
        row("b", "t1", params=never, retention=0.4, input_tokens_total=900),
        row("c", "t1", strategy="none", params="{}", retention=0.9),
    ]
    board = leaderboard(rows)[32768]
    assert [s.run_ids for s in board] == [("c",), ("b",), ("a",)]


def test_each_window_has_its_own_table() -> None:
    board = leaderboard([row("a", "t1"), row("b", "t1", window=8192)])
    assert sorted(board) == [8192, 32768]


def test_labels_name_only_what_varies_within_a_strategy() -> None:
    keys = [
        ConfigKey.of_result(
            row(
                "a",
                "t",
                params=json.dumps({"warning_threshold": w, "error_threshold": 0.9}),
                counter=c,
            )
        )
        for w in (0.6, 0.7)
        for c in ("tiktoken:o200k_base", "hf:qwen2.5")
    ] + [ConfigKey.of_result(row("n", "t", strategy="none", params="{}", estimator="chars4"))]
    labels = config_labels(keys)
    assert len(set(labels.values())) == len(keys)
    assert labels[keys[0]] == "dbgpt (warning_threshold=0.6, counter=tiktoken:o200k_base)"
    assert labels[keys[-1]] == "none"


def test_labels_say_which_release_a_row_reproduces() -> None:
    keys = [
        ConfigKey.of_result(
            row("a", "t", params=json.dumps({"release": r, "warning_threshold": 0.7}))
        )
        for r in ("0.8.2", "design")
    ] + [ConfigKey.of_result(row("old", "t", params=json.dumps({"warning_threshold": 0.6})))]
    labels = config_labels(keys)
    assert labels[keys[0]] == "dbgpt@0.8.2 (warning_threshold=0.7)"
    assert labels[keys[1]] == "dbgpt@design (warning_threshold=0.7)"
    assert labels[keys[2]] == "dbgpt (warning_threshold=0.6)", "a row from before the knob"


def test_retention_and_tokens_carry_seeded_bootstrap_intervals() -> None:
    spread = [
        row(f"r{i}", f"t{i}", probes=4, in_context=k, retention=k / 4, input_tokens_total=t)
        for i, (k, t) in enumerate([(4, 900), (1, 2100), (3, 1500), (2, 1200), (4, 800)])
    ]
    (first,) = leaderboard(spread)[32768]
    again = leaderboard(spread)[32768][0]
    r, t = first.retention_interval, first.tokens_interval
    assert r is not None and t is not None
    assert r == again.retention_interval and t == again.tokens_interval  # deterministic
    assert r.point == pytest.approx(first.retention) and r.low < r.point < r.high
    assert t.point == pytest.approx(first.input_tokens_mean) and t.low < t.point < t.high
    # the same retention on every trace: nothing to be unsure about
    same = [row(f"s{i}", f"t{i}", probes=4, in_context=2, retention=0.5) for i in range(4)]
    flat = leaderboard(same)[32768][0].retention_interval
    assert flat is not None and flat.low == flat.high == 0.5
    # a lone trace: the interval comes from its probes
    lone = leaderboard([row("x", "t0", probes=10, in_context=6, retention=0.6)])[32768][0]
    assert lone.retention_interval is not None and lone.retention_interval.low < 0.6
