"""`ctxbench import`: per-source report lines, validated output, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli, main
from ctxbench.formats.canonical import read_traces
from ctxbench.formats.importing import import_file


def test_import_prints_format_and_counts_per_file_and_writes_canonical_traces(
    shared_traces: Path, tmp_path: Path
) -> None:
    tau2 = next(shared_traces.glob("tau2-bench/*.json"))
    mini = next(shared_traces.glob("mini-swe-agent/*"))
    out = tmp_path / "traces.jsonl"
    result = CliRunner().invoke(cli, ["import", str(tau2), str(mini), "-o", str(out)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    _, tau2_report = import_file(tau2)
    assert lines[0] == (
        f"{tau2}: tau2_bench (auto-detected): {tau2_report.traces} traces, {tau2_report.messages} messages, "
        f"{tau2_report.model_calls} model calls, {tau2_report.calls_with_usage} with usage, "
        f"{tau2_report.tool_calls} tool calls, 0 thinking blocks, 0 recorded compactions, "
        "0 unmapped entries; problems: none"
    )
    assert tau2_report.tool_calls > 0
    # mini-swe-agent's final submit has no result: the run's end, not a problem
    assert "mini_swe_agent (auto-detected)" in lines[1] and lines[1].endswith("problems: none")
    assert lines[-1] == f"wrote {tau2_report.traces + 1} traces to {out}"
    assert len(list(read_traces(out))) == tau2_report.traces + 1


def test_json_reports_one_object_per_source(shared_traces: Path, tmp_path: Path) -> None:
    path = next(shared_traces.glob("mini-swe-agent/*"))
    result = CliRunner().invoke(
        cli, ["import", str(path), "--json", "-o", str(tmp_path / "o.jsonl")]
    )
    (line,) = result.output.splitlines()
    report = json.loads(line)
    assert report["format"] == "mini_swe_agent" and report["calls_with_usage"] == 64
    assert report["unmapped"]["usage.prompt_cache_miss_tokens"] == 64


def test_given_format_is_reported_as_given(shared_traces: Path, tmp_path: Path) -> None:
    path = next(shared_traces.glob("tau-bench/*.json"))
    result = CliRunner().invoke(
        cli, ["import", str(path), "-f", "tau_bench", "-o", str(tmp_path / "o.jsonl")]
    )
    assert "tau_bench (given)" in result.output


def test_duplicate_trace_ids_across_files_are_renamed_with_a_note(
    shared_traces: Path, tmp_path: Path
) -> None:
    path = next(shared_traces.glob("mini-swe-agent/*"))
    out = tmp_path / "o.jsonl"
    result = CliRunner().invoke(cli, ["import", str(path), str(path), "-o", str(out)])
    ids = [t.id for t in read_traces(out)]
    assert ids == [ids[0], f"{ids[0]}~2"] and "already used" in result.output


@pytest.mark.parametrize(
    ("content", "args", "words"),
    [
        ('{"rows": []}', [], "cannot tell the format"),
        ('[{"role": "user", "content": 3}]', [], "$[0].content"),
        ("[1, 2", [], "malformed JSON"),
        ("[]", ["--format", "tau2bench"], "did you mean 'tau2_bench'"),
    ],
)
def test_bad_input_prints_one_error_and_exits_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, args: list[str], words: str
) -> None:
    path = tmp_path / "in.json"
    path.write_text(content)
    out = tmp_path / "o.jsonl"
    with pytest.raises(SystemExit) as exit_:
        main(["import", str(path), "-o", str(out), *args])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("error: ") and words in err
    assert "Traceback" not in err and not out.exists()


def test_nothing_to_import_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["import", "-o", str(tmp_path / "o.jsonl")])
    assert exit_.value.code == 2 and "nothing to import" in capsys.readouterr().err
