"""Runs of a results directory priced through the prompt cache, and `recommend --max-usd`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.cost.runs import run_costs
from ctxbench.results import ResultsDir
from tests.report_data import built_report


@pytest.fixture(scope="module")
def results() -> Path:
    return built_report()


def test_every_run_is_priced_and_anthropic_costs_more_than_openai(results: Path) -> None:
    rows = ResultsDir(results).results()
    openai = run_costs(results)
    anthropic = run_costs(results, "anthropic")
    assert set(openai) == {r.run_id for r in rows}
    assert all(v > 0 for v in openai.values())
    assert sum(anthropic.values()) > sum(openai.values())


def test_recommend_excludes_configs_over_a_usd_budget(results: Path) -> None:
    args = ["recommend", str(results), "--window", "9000", "--max-failed-calls", "1000"]
    free = CliRunner().invoke(cli, args)
    tight = CliRunner().invoke(cli, [*args, "--max-usd", "0.000001"])
    assert free.exit_code == 0 and tight.exit_code == 0, tight.output
    assert "per trace > budget $1e-06" not in free.output
    assert "per trace > budget $1e-06" in tight.output
    assert "at most $1e-06 per trace" in tight.output
