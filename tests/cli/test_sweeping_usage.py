"""A sweep over traces with billed usage says, before its cells run, how far the counter is
from the bill and how to fit a profile (issue 40); --quiet keeps it silent."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.formats.canonical import write_traces
from tests.counting.test_billing import reasoner_trace


def test_an_auto_sweep_notes_the_distance_from_billed_usage(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    write_traces(traces, [reasoner_trace("none", "stripped")])
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        f'windows = ["32k"]\ncounters = ["auto"]\n[[traces]]\npath = "{traces}"\n'
        '[[strategies]]\nname = "none"\n',
        "utf-8",
    )
    result = CliRunner().invoke(cli, ["sweep", str(sweep), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "note: on trace stripped: hf:deepseek-v3.1 (reasoning none) is off" in result.stderr
    assert "--save-profile" in result.stderr
    again = CliRunner().invoke(cli, ["sweep", str(sweep), "-o", str(tmp_path / "q"), "-q"])
    assert again.exit_code == 0 and "note:" not in again.stderr  # --quiet says nothing
