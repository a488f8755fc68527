"""The cache model against the cache reads providers recorded on the shared traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxbench.cell.traces import open_traces
from ctxbench.cost.calibration import cache_calibration, has_cache_usage, rules_for
from ctxbench.trace import Trace


def _traces(folder: Path, pattern: str) -> list[Trace]:
    return [t for path in sorted(folder.glob(pattern)) for t in open_traces(path).traces()]


def test_deepseek_cache_reads_are_within_5_percent_per_call(shared_traces: Path) -> None:
    traces = _traces(shared_traces, "mini-swe-agent/*.traj.json")
    (result,) = cache_calibration(traces)
    assert result.provider == "deepseek"
    assert result.calls == 64 and result.hit_calls == 64
    assert result.median_abs_rel_error is not None and result.median_abs_rel_error < 0.05


def test_claude_code_cache_reads_and_one_hour_writes(shared_traces: Path) -> None:
    session = "marot+spotter/test/fixtures/transcripts/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    traces = _traces(shared_traces, session)
    assert rules_for(traces[0], "claude_code").provider == "anthropic-1h"
    (result,) = cache_calibration(traces)
    assert result.hit_calls > 100
    assert result.median_abs_rel_error is not None and result.median_abs_rel_error < 0.05
    assert result.read_ratio == pytest.approx(1.0, abs=0.05)


def test_a_claude_run_that_recorded_no_cache_use_had_caching_off(shared_traces: Path) -> None:
    traces = _traces(
        shared_traces, "OpenHands+software-agent-sdk/tests/fixtures/llm_data/llm-logs/*.json"
    )
    assert traces and all(has_cache_usage(t) for t in traces)
    assert {rules_for(t, "claude_code").provider for t in traces} == {"anthropic-off"}


def test_the_tau2_claude_run_kept_its_zero_cache_figures_in_the_raw_response(
    shared_traces: Path,
) -> None:
    traces = _traces(
        shared_traces,
        "sierra-research+tau2-bench/web/leaderboard/public/submissions/*/trajectories/*.json",
    )
    assert traces and all(has_cache_usage(t) for t in traces)
    (result,) = cache_calibration(traces[:3])
    assert result.provider == "anthropic-off" and result.hit_calls == 0
    assert result.hit_agreement == 1.0
