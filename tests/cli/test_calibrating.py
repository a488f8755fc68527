"""`ctxbench calibrate`: the table, exactly one JSON object, and --save-profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli, main
from ctxbench.counting.profile import load_profile


@pytest.fixture(scope="module")
def tau2(shared_traces: Path) -> Path:
    return next(shared_traces.glob("tau2-bench/*.json"))


def test_json_prints_exactly_one_object_with_the_documented_keys(tau2: Path) -> None:
    result = CliRunner().invoke(
        cli, ["calibrate", str(tau2), "--counter", "tiktoken:o200k_base", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["calls"] == 217 and data["counter"]["name"] == "tiktoken:o200k_base"
    assert set(data["baselines"]) == {"chars4", "dbgpt", "agentscope", "hermes"}
    for block in (data["counter"], *data["baselines"].values()):
        assert {"median_abs_rel_error", "p90_abs_rel_error", "bias"} <= set(block)
    assert len(data["per_trace"]) == 20


def test_json_output_is_deterministic(tau2: Path) -> None:
    args = ["calibrate", str(tau2), "-c", "chars4", "--json"]
    assert CliRunner().invoke(cli, args).stdout == CliRunner().invoke(cli, args).stdout


def test_text_output_shows_counter_baselines_and_per_trace_rows(tau2: Path) -> None:
    result = CliRunner().invoke(cli, ["calibrate", str(tau2), "-c", "tiktoken:o200k_base"])
    lines = result.output.splitlines()
    assert lines[0] == "217 calls with recorded prompt tokens in 20 of 20 traces"
    table = [line.split()[0] for line in lines[3:9]]
    assert table == ["counter", "tiktoken:o200k_base", "chars4", "dbgpt", "agentscope", "hermes"]
    simulations = json.loads(tau2.read_text())["simulations"]
    assert all(any(line.startswith(s["id"]) for line in lines) for s in simulations)


def test_save_profile_writes_a_fitted_profile_the_counter_spec_can_use(
    tau2: Path, tmp_path: Path
) -> None:
    path = tmp_path / "gpt-4o.json"
    result = CliRunner().invoke(
        cli,
        [
            "calibrate",
            str(tau2),
            "-c",
            "tiktoken:o200k_base",
            "--save-profile",
            str(path),
            "--json",
        ],
    )
    json.loads(result.stdout)  # still exactly one JSON object on stdout
    profile = load_profile(path)
    assert profile.base == "tiktoken:o200k_base" and profile.family == "gpt-4o"
    assert profile.fitted_on["calls"] == 217 and profile.constant > 0
    again = CliRunner().invoke(cli, ["calibrate", str(tau2), "-c", f"profile:{path}", "--json"])
    assert json.loads(again.stdout)["counter"]["median_abs_rel_error"] <= 0.01


def test_traces_without_usage_are_a_clear_error(
    shared_traces: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = next(shared_traces.glob("tau-bench/*.json"))
    with pytest.raises(SystemExit) as exit_:
        main(["calibrate", str(path), "-c", "chars4"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "no call with recorded prompt tokens" in err
