"""`ctxbench report` and `ctxbench drift`: they write the file, say where, and fail clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli, main
from ctxbench.formats.canonical import write_traces
from tests.report_data import hostile_trace


def test_report_of_a_folder_without_results_is_a_clean_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(tmp_path), "-o", str(tmp_path / "r.html")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    # stderr is not a terminal here: no progress, just the one error
    assert err.startswith("error: ") and "ctxbench sweep" in err and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


def test_drift_writes_the_file_and_prints_its_path_and_size(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    write_traces(traces, [hostile_trace(6)])
    out = tmp_path / "drift.html"
    result = CliRunner().invoke(
        cli,
        [
            "drift",
            str(traces),
            "-c",
            "chars4",
            "-w",
            "3000",
            "--reserved",
            "100",
            "-e",
            "hermes",
            "-o",
            str(out),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"wrote {out} (") and out.stat().st_size > 10_000
    assert '<section id="decision-drift"' in out.read_text("utf-8")


def test_drift_refuses_a_reservation_as_large_as_the_window(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    write_traces(traces, [hostile_trace(2)])
    result = CliRunner().invoke(
        cli,
        ["drift", str(traces), "-w", "1000", "--reserved", "1000", "-o", str(tmp_path / "d.html")],
    )
    assert result.exit_code == 2
    assert "--reserved" in result.output


def test_drift_of_an_unknown_counter_suggests_a_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = tmp_path / "t.jsonl"
    write_traces(traces, [hostile_trace(2)])
    with pytest.raises(SystemExit) as exit_info:
        main(["drift", str(traces), "-c", "chars5", "-o", str(tmp_path / "d.html")])
    assert exit_info.value.code == 2
    assert "chars4" in capsys.readouterr().err
