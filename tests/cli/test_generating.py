"""`ctxbench gen` and `ctxbench scenarios`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli, main
from ctxbench.formats.canonical import read_traces
from ctxbench.synth import generate, load_scenario, scenario_names
from ctxbench.validation import validate


def test_gen_writes_valid_deterministic_traces(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for out in (a, b):
        result = CliRunner().invoke(
            cli, ["gen", "support_agent", "-o", str(out), "--seed", "3", "--traces", "2"]
        )
        assert result.exit_code == 0, result.output
        assert f"wrote 2 trace(s) of support_agent (seed 3) to {out}" in result.output
    assert a.read_bytes() == b.read_bytes()
    traces = list(read_traces(a))
    assert [t.id for t in traces] == ["support_agent-s3-0", "support_agent-s3-1"]
    assert traces == list(generate(load_scenario("support_agent"), 3, count=2))
    assert all(validate(t) == [] for t in traces)


def test_gen_accepts_a_scenario_file_path(tmp_path: Path) -> None:
    source = Path(load_scenario("cjk_agent").source)
    result = CliRunner().invoke(cli, ["gen", str(source), "-o", str(tmp_path / "t.jsonl")])
    assert result.exit_code == 0, result.output
    (trace,) = read_traces(tmp_path / "t.jsonl")
    assert trace.id == "cjk_agent-s0-0"


def test_gen_with_an_unknown_scenario_exits_2_with_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["gen", "codingagent", "-o", str(tmp_path / "x.jsonl")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("error: no embedded scenario named 'codingagent'")
        and "did you mean 'coding_agent'?" in err
    )
    assert not (tmp_path / "x.jsonl").exists()


def test_scenarios_lists_every_embedded_scenario(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["scenarios"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split()[:4] == ["name", "rounds", "format", "lang"]
    assert [line.split()[0] for line in lines[1:]] == scenario_names()
    assert "react_text" in result.output and "tables" not in lines[0]


def test_scenarios_json_describes_rounds_format_mix_and_probes() -> None:
    result = CliRunner().invoke(cli, ["scenarios", "--json"])
    described = json.loads(result.output)
    assert [d["name"] for d in described] == scenario_names()
    first = described[0]
    assert {"rounds", "format", "content_mix", "probes", "tools"} <= set(first)
    assert first == load_scenario(first["name"]).describe()
