"""``ctxbench sweep`` on the command line: options, messages, progress, probe files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli, main
from ctxbench.cli.progress import ProgressBar
from ctxbench.formats.canonical import write_traces
from ctxbench.probes.model import Probe
from ctxbench.sweep import ResultsDir
from tests.factories import tool_trace

SWEEP = """
name = "cli"
windows = [4000]
reserved = [500]
counters = ["chars4"]

[[traces]]
path = "traces.jsonl"
{extra}

[[strategies]]
name = "sliding_window"
params = {{ keep_rounds = [2, 3] }}
"""


def make(folder: Path, extra: str = "") -> Path:
    traces = [tool_trace(6, output="value 4242 " * 30, trace_id=f"t{i}") for i in range(3)]
    write_traces(folder / "traces.jsonl", traces)
    path = folder / "sweep.toml"
    path.write_text(SWEEP.format(extra=extra), encoding="utf-8")
    return path


def test_sweep_prints_a_summary_and_writes_the_table(tmp_path: Path) -> None:
    sweep = make(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["sweep", str(sweep), "-o", str(out), "-j", "1", "-q"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "6 cells: 6 ran, 0 already done, 0 failed"
    assert result.stderr == ""  # --quiet: no progress bar
    assert len(ResultsDir(out).results()) == 6
    assert json.loads((out / "sweep.json").read_text("utf-8"))["name"] == "cli"
    again = CliRunner().invoke(cli, ["sweep", str(sweep), "-o", str(out), "-q", "--resume"])
    assert again.stdout.splitlines()[0] == "6 cells: 0 ran, 6 already done, 0 failed"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give the results directory with -o DIR"),
        (["-o", "X", "--scheduler", "tcp://h:1", "--dask-local", "2"], "not both"),
        (["-o", "X", "--workers", "2", "--dask-local", "2"], "--workers is for local processes"),
    ],
)
def test_contradictory_options_are_usage_errors(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = CliRunner().invoke(cli, ["sweep", str(make(tmp_path)), *args])
    assert result.exit_code == 2
    assert message in result.output


def test_a_bad_sweep_file_prints_one_error_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = make(tmp_path)
    sweep.write_text(sweep.read_text("utf-8").replace("windows", "widnows"), encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["sweep", str(sweep), "--dry-run"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {sweep}: widnows: unknown key")
    assert "did you mean 'windows'?" in err
    assert "Traceback" not in err


def test_a_probe_file_attaches_probes_to_the_traces_of_its_source(tmp_path: Path) -> None:
    probe = Probe("p1", "recall", "Which value?", ("4242",))
    lines = [{"trace_id": f"t{i}", "probes": [probe.to_dict()]} for i in (0, 2)]
    (tmp_path / "probes.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    sweep = make(tmp_path, extra='probes = "probes.jsonl"')
    result = CliRunner().invoke(cli, ["sweep", str(sweep), "-o", str(tmp_path / "o"), "-q"])
    assert result.exit_code == 0, result.output
    probes = {(r.trace_id, r.probes) for r in ResultsDir(tmp_path / "o").results()}
    assert probes == {("t0", 1), ("t1", 0), ("t2", 1)}


def test_the_progress_bar_shows_count_rate_eta_and_failures() -> None:
    stream = io.StringIO()
    bar = ProgressBar("sweep", stream=stream, log_every=0.0)
    bar.update(0, 40)
    line = bar.render(12, 40, 2, elapsed=6.0)
    assert line.startswith("sweep [")
    assert "12/40 2.0/s ETA 0:14 failed 2" in line
    bar.update(40, 40, 0, final=True)
    logged = stream.getvalue().splitlines()
    assert logged[0].endswith("0/40 0.0/s ETA -")
    assert "40/40" in logged[-1]


def test_sweep_warns_about_a_strategy_that_splits_tool_pairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "splits.py").write_text(
        "def compact(messages, budget):\n"
        "    # drops every assistant message but the last: its calls' results are orphans\n"
        "    return [m for m in messages if m['role'] != 'assistant' or m is messages[-1]]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sweep = make(tmp_path, extra='[[strategies]]\nname = "splits:compact"\n')
    result = CliRunner().invoke(
        cli,
        ["sweep", str(sweep), "-o", str(tmp_path / "out"), "-j", "1", "-q", "--allow-plugins"],
    )
    assert result.exit_code == 0, result.output
    (warning,) = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warning.startswith("warning: 3 of 3 cells of splits:compact split tool calls")
    assert "sliding_window" not in result.stderr
