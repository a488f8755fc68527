"""`ctxbench probes mine`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.formats.canonical import read_traces, write_traces
from ctxbench.probes.mining import mine_probes
from ctxbench.probes.probe_file import load_probes
from ctxbench.synth import generate, load_scenario


def synthetic(tmp_path: Path) -> tuple[Path, list]:
    traces = list(generate(load_scenario("support_agent"), 2, count=2))
    path = tmp_path / "in.jsonl"
    write_traces(path, traces)
    return path, traces


def test_mine_writes_traces_with_planted_and_mined_probes(tmp_path: Path) -> None:
    source, traces = synthetic(tmp_path)
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        cli, ["probes", "mine", str(source), "-o", str(out), "--max-per-trace", "4"]
    )
    assert result.exit_code == 0, result.output
    written = list(read_traces(out))
    for before, after in zip(traces, written):
        mined = [p for p in after.probes if p.id.startswith("mined-")]
        assert after.probes[: len(before.probes)] == before.probes
        assert 1 <= len(mined) <= 4
        assert after.messages == before.messages
    assert f"{source}: 2 trace(s)" in result.output


def test_mine_replace_keeps_only_mined_probes(tmp_path: Path) -> None:
    source, traces = synthetic(tmp_path)
    out = tmp_path / "out.jsonl"
    CliRunner().invoke(cli, ["probes", "mine", str(source), "-o", str(out), "--replace"])
    written = list(read_traces(out))
    assert [t.probes for t in written] == [mine_probes(t) for t in traces]


def test_mine_probes_only_writes_a_probe_file(tmp_path: Path) -> None:
    source, traces = synthetic(tmp_path)
    out = tmp_path / "probes.jsonl"
    result = CliRunner().invoke(
        cli, ["probes", "mine", str(source), "-o", str(out), "--probes-only", "--replace", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert load_probes(out) == {t.id: mine_probes(t) for t in traces}
    counts = json.loads(result.stdout)
    assert counts[str(source)]["traces"] == 2


def test_mine_reads_recorded_formats(shared_traces: Path, tmp_path: Path) -> None:
    recorded = next(shared_traces.glob("mini-swe-agent/*.json"))
    out = tmp_path / "mini.jsonl"
    result = CliRunner().invoke(cli, ["probes", "mine", str(recorded), "-o", str(out)])
    assert result.exit_code == 0, result.output
    (trace,) = read_traces(out)
    kinds = [p.kind for p in trace.probes]
    assert kinds and kinds[0] == "needed", "the facts the agent needed come first"
    assert kinds.count("needed") >= len(kinds) / 2
    assert all(p.id.startswith("needed-" if p.kind == "needed" else "mined-") for p in trace.probes)
