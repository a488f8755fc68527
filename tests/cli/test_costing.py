"""`ctxbench cost` and `ctxbench calibrate --cache` on the shared recorded traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli


@pytest.fixture(scope="module")
def mini(shared_traces: Path) -> Path:
    return next(shared_traces.glob("mini-swe-agent/*.traj.json"))


def _cost(mini: Path, *extra: str) -> dict[str, Any]:
    args = ["cost", str(mini), "-s", "dbgpt", "--set", "release=design", "-w", "16k"]
    result = CliRunner().invoke(cli, [*args, "-c", "hf:deepseek-v3.1", *extra, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_cost_prices_a_threshold_per_1000_tasks_with_the_price_tables_date(mini: Path) -> None:
    data = _cost(mini, "--paybacks")
    assert data["traces"] == 1
    (prices,) = data["prices"]
    assert "deepseek-v4-flash" in prices and "read 2026-12-05" in prices
    with_, without = data["usd_per_1000_with"], data["usd_per_1000_without"]
    assert isinstance(with_, float) and isinstance(without, float) and 0 < with_ < without
    paybacks = data["paybacks"]
    assert isinstance(paybacks, list) and len(paybacks) == data["compactions"]
    never = sum(p["calls_to_payback"] is None for p in paybacks)
    assert never == data["never_paid_back"]


def test_cost_lists_every_call_split_into_cache_reads_writes_and_fresh_tokens(
    mini: Path,
) -> None:
    data = _cost(mini, "--calls")
    calls = data["calls"]
    assert len(calls) == 64
    assert all(c["cache_read"] + c["cache_write"] + c["fresh"] == c["prompt"] for c in calls)
    assert all(c["cache_write"] == 0 and c["cache_read"] % 64 == 0 for c in calls)  # DeepSeek
    assert sum(c["usd"] for c in calls) == pytest.approx(data["usd_with"], abs=1e-4)


def test_cost_on_anthropic_prices_costs_more_than_on_deepseek(mini: Path) -> None:
    deepseek = _cost(mini)
    anthropic = _cost(mini, "--provider", "anthropic")
    assert anthropic["usd_per_1000_with"] > 10 * deepseek["usd_per_1000_with"]


def test_calibrate_cache_reports_the_cache_model_error_per_provider(mini: Path) -> None:
    result = CliRunner().invoke(cli, ["calibrate", str(mini), "-c", "auto", "--cache", "--json"])
    assert result.exit_code == 0, result.output
    *_, last = result.stdout.strip().splitlines()
    (deepseek,) = json.loads(last)["cache"]
    assert deepseek["provider"] == "deepseek" and deepseek["median_abs_rel_error"] < 0.05
