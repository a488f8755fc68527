"""``ctxbench run``: a progress bar per trace, by model call, on a terminal only; a warning
for a run whose strategy split tool pairs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.cli import running as running_cli
from ctxbench.cli.progress import ProgressBar, terminal_bar
from ctxbench.formats.canonical import write_traces
from tests.factories import tool_trace


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("quiet", [False, True])
def test_run_draws_one_bar_per_trace_by_model_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet: bool
) -> None:
    trace = tool_trace(4, calls=1)
    path = tmp_path / "t.jsonl"
    write_traces(path, [trace])
    screen = Terminal()

    def on_screen(label: str, *, quiet: bool = False) -> ProgressBar:
        return terminal_bar(label, quiet=quiet, stream=screen)

    monkeypatch.setattr(running_cli, "terminal_bar", on_screen)
    args = ["run", str(path), "-s", "none", "-w", "32k", *(["--quiet"] if quiet else [])]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    n = len(trace.call_indices)
    if quiet:
        assert screen.getvalue() == ""
    else:
        assert f"run {trace.id} [" in screen.getvalue() and f"{n}/{n}" in screen.getvalue()


def test_run_warns_when_a_strategy_splits_tool_calls_from_their_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "splits_pairs.py").write_text(
        "def compact(messages, budget):\n"
        "    # drops every assistant message but the last: its calls' results are orphans\n"
        "    return [m for m in messages if m['role'] != 'assistant' or m is messages[-1]]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    write_traces(tmp_path / "t.jsonl", [tool_trace(5, trace_id="five")])
    result = CliRunner().invoke(
        cli, ["run", str(tmp_path / "t.jsonl"), "-s", "splits_pairs:compact", "-w", "100000"]
    )
    assert result.exit_code == 0, result.output
    assert "warning: five: the strategy split tool calls from their results (" in result.stderr
    assert "pairing violations over 6 calls" in result.stderr
