"""Claude Code sessions replay like Claude Code with no flags (issue 40): the strategy takes
the session's CLI version and Claude Code's 32,000 output limit from the trace, ``run`` takes
the window of the recorded model and says which values came from the trace, ``--set`` wins,
and sweeps and ``recorded`` apply the same rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cell.traces import open_traces
from ctxbench.cli import cli
from ctxbench.strategies.claude_code import ClaudeCode
from ctxbench.sweep.sources import catalogue
from ctxbench.sweep.spec import load_sweep
from ctxbench.trace_defaults import hook_meta, trace_params


@pytest.fixture(scope="module")
def session(shared_traces: Path) -> Path:
    """An Opus 4.6 session of Claude Code 2.1.39 that auto-compacted at call 102."""
    return next(shared_traces.glob("marot+spotter/test/fixtures/transcripts/258c7280*.jsonl"))


def test_the_session_gives_its_version_and_claude_codes_output_limit(session: Path) -> None:
    trace = next(open_traces(session).traces())
    defaults = {d.key: d.value for d in ClaudeCode.trace_defaults(trace.meta)}
    assert defaults == {"cli_version": "2.1.39", "max_output_tokens": 32_000}
    params, taken = trace_params(trace.meta, "claude_code", {"max_output_tokens": 4096})
    assert params == {"max_output_tokens": 4096, "cli_version": "2.1.39"}  # a given value wins
    assert [d.key for d in taken] == ["cli_version"]
    assert trace_params(trace.meta, "dbgpt", {}) == ({}, ())  # other strategies take nothing
    assert ClaudeCode.trace_defaults({"model": "claude-opus-4-6"}) == ()  # not a session


def test_run_compacts_at_the_recorded_call_with_no_flags(session: Path) -> None:
    result = CliRunner().invoke(cli, ["run", str(session), "-s", "claude_code"])
    assert result.exit_code == 0, result.output
    assert "cli_version=2.1.39" in result.stderr and "max_output_tokens=32000" in result.stderr
    assert "window: 200,000" in result.stderr
    assert "recorded auto at call 102, preTokens 167,094" in result.stdout
    assert "compacts at call 102 with 167,094 (same call, +0 tokens)" in result.stdout


def test_set_wins_over_the_trace(session: Path) -> None:
    args = ["run", str(session), "-s", "claude_code", "--set", "max_output_tokens=4096", "-q"]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout.splitlines()[0])
    assert row["compactions"] == "{}"  # 200,000 - 4,096 - 13,000: the session never gets there
    assert "no compaction" in result.stderr  # the parity goes to stderr under --json


def test_a_sweep_cell_takes_the_same_values(session: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        f'windows = ["claude-opus-4-6"]\n[[traces]]\npath = "{session}"\nformat = "claude_code"\n'
        '[[strategies]]\nname = "claude_code"\n'
        '[[strategies]]\nname = "claude_code"\nparams = { cli_version = "2.0.76" }\n',
        "utf-8",
    )
    spec = load_sweep(path)
    (entry,) = list(catalogue(spec.traces))
    assert json.loads(entry.meta)["version"] == "2.1.39"
    cells = [entry.cell(c) for c in spec.configs()]
    assert [c.params["cli_version"] for c in cells] == ["2.1.39", "2.0.76"]
    assert {c.params["max_output_tokens"] for c in cells} == {32_000}
    assert hook_meta({"imported_from": {"format": "x", "path": "/secret"}}) == (
        '{"imported_from":{"format":"x"}}'
    )
