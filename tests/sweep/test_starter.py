"""``ctxbench init`` from what the traces say (issue 40): windows around each source's peak
(one the baseline overflows, one it fits), ``auto`` counters with the measured distance from
billed usage and the profile step, and the recording framework's strategy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.sweep.spec import load_sweep
from ctxbench.sweep.starter import read_facts, windows_for
from ctxbench.windows import model_window


def _failed_calls(trace: Path, window: int) -> list[int]:
    args = ["run", str(trace), "-s", "none", "-c", "auto", "-w", str(window), "--json", "-q"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return [json.loads(line)["failed_calls"] for line in result.stdout.splitlines()]


def test_windows_bracket_the_peak() -> None:
    # room for at most 0.6 x the peak below, 1.15 x (peak + 4,096 reserved) above
    assert windows_for(33_714) == (16_384, 49_152)
    opus = model_window("claude-opus-4-6")
    assert windows_for(140_270, model=opus) == (65_536, "claude-opus-4-6")
    assert windows_for(190_000, model=opus)[1] == 262_144  # the model's window is too small


def test_init_on_mini_swe_agent_writes_an_overflowing_and_a_fitting_window(
    shared_traces: Path, tmp_path: Path
) -> None:
    trace = shared_traces / "mini-swe-agent" / "astropy__astropy-12907.traj.json"
    out = tmp_path / "sweep.toml"
    result = CliRunner().invoke(cli, ["init", str(trace), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text("utf-8")
    spec = load_sweep(out)
    assert spec.counters == ("auto",)
    assert "deepseek-v4-flash -> hf:deepseek-v3.1" in text
    # the usage is there: the distance init measured and the profile step
    assert "is off by median 6.5%" in text and "--save-profile profile.json" in text
    failed = {w: _failed_calls(trace, w)[0] for w in spec.windows}
    assert min(failed.values()) == 0 < max(failed.values()), failed


def test_claude_code_sessions_get_claude_code_and_the_models_window(
    shared_traces: Path, tmp_path: Path
) -> None:
    session = next(shared_traces.glob("marot+spotter/test/fixtures/transcripts/fa812bfe*.jsonl"))
    facts = read_facts(session)
    assert facts.format == "claude_code" and facts.versions == {"2.1.39"}
    assert facts.model_window is not None and facts.model_window.model == "claude-opus-4-6"
    out = tmp_path / "sweep.toml"
    result = CliRunner().invoke(cli, ["init", str(session), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text("utf-8")
    assert 'name = "claude_code"' in text and "recorded versions: 2.1.39" in text
    spec = load_sweep(out)
    assert {g.name for g in spec.strategies} >= {"none", "claude_code"}
    below, above = spec.windows
    assert '"claude-opus-4-6"' in text and above == 200_000
    assert _failed_calls(session, below)[0] > 0 and _failed_calls(session, above)[0] == 0


@pytest.mark.parametrize("peak", [3_000, 60_000, 800_000])
def test_below_is_under_the_peak_and_above_holds_it(peak: int) -> None:
    below, above = windows_for(peak)
    assert isinstance(below, int) and isinstance(above, int)
    assert below - 4096 < peak < above - 4096
