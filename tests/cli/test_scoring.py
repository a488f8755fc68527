"""``ctxbench score --compacted``: a saved compaction graded from the command line, as text and
as JSON, and its usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.errors import TraceFormatError
from ctxbench.formats.importing import open_source
from ctxbench.probes.probe_file import write_probes
from ctxbench.trace import Trace
from tests.probes.test_compacted import SESSION


@pytest.fixture(scope="module")
def saved(shared_traces: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The session, and the summary its real compaction wrote, saved to a file."""
    session = shared_traces / SESSION
    (trace,) = open_source(session).traces()
    summary = tmp_path_factory.mktemp("score") / "summary.md"
    summary.write_text(trace.recorded_compactions[0].summary, "utf-8")
    return session, summary


def test_json_gives_each_probe_each_kind_and_the_share(saved: tuple[Path, Path]) -> None:
    session, summary = saved
    args = ["score", "--compacted", str(summary), "--trace", str(session), "--json"]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["read_as"] == "summary text" and doc["replaced_before_call"] == 102
    assert doc["share"] == round(doc["compacted_tokens"] / doc["history_tokens"], 4)
    outcomes = [p["outcome"] for p in doc["probes"]]
    kinds = doc["by_kind"]
    assert sum(k["probes"] for k in kinds.values()) == len(outcomes) > 0
    kept = outcomes.count("in_context")
    assert sum(k["in_context"] for k in kinds.values()) == kept
    assert doc["retention"] == round(kept / len(outcomes), 4)


def test_the_text_names_every_probe_and_the_size(saved: tuple[Path, Path]) -> None:
    session, summary = saved
    out = CliRunner().invoke(cli, ["score", "--compacted", str(summary), "--trace", str(session)])
    assert out.exit_code == 0, out.output
    doc = json.loads(
        CliRunner()
        .invoke(cli, ["score", "--compacted", str(summary), "--trace", str(session), "--json"])
        .output
    )
    assert f"{doc['compacted_tokens']:,} tokens (tiktoken:o200k_base)" in out.output
    assert f"{doc['share']:.1%} of it" in out.output
    for probe in doc["probes"]:
        assert any(
            line.split()[:3] == [probe["id"], probe["kind"], probe["outcome"]]
            for line in out.output.splitlines()
        ), probe["id"]
    assert f"left out: {doc['left_out']} probe(s)" in out.output


def test_probes_from_a_probe_file(saved: tuple[Path, Path], tmp_path: Path) -> None:
    session, summary = saved
    (trace,) = open_source(session).traces()
    from ctxbench.probes.mining import mine_probes

    probes = tmp_path / "probes.jsonl"
    write_probes(probes, [Trace(trace.id, trace.messages, probes=mine_probes(trace))])
    only = ["score", "--compacted", str(summary), "--probes", str(probes), "--json"]
    doc = json.loads(CliRunner().invoke(cli, only).output)
    assert doc["history_tokens"] is None and doc["left_out"] == 0  # no trace: no cut, no share
    assert len(doc["probes"]) == len(mine_probes(trace))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --probes PROBES or --trace TRACE"),
        (["--probes", "p.jsonl", "--at", "3"], "--at needs --trace"),
    ],
)
def test_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "s.txt").write_text("summary", "utf-8")
    out = CliRunner().invoke(cli, ["score", "--compacted", str(tmp_path / "s.txt"), *args])
    assert out.exit_code == 2 and message in out.output


def test_a_cut_past_the_end_is_refused(saved: tuple[Path, Path]) -> None:
    session, summary = saved
    args = ["score", "--compacted", str(summary), "--trace", str(session), "--at", "9999"]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 2 and "the trace has 152 model calls" in out.output


def test_trace_id_picks_the_probes_of_one_trace(tmp_path: Path) -> None:
    from ctxbench.probes.model import Probe
    from ctxbench.trace import Message

    probes = tmp_path / "probes.jsonl"
    traces = [
        Trace(t, (Message("user", "x"),), probes=(Probe(f"{t}-p", "recall", "?", (answer,)),))
        for t, answer in (("a", "alpha"), ("b", "beta"))
    ]
    write_probes(probes, traces)
    (tmp_path / "s.txt").write_text("We chose beta.", "utf-8")
    base = ["score", "--compacted", str(tmp_path / "s.txt"), "--probes", str(probes)]
    out = CliRunner().invoke(cli, base)
    assert isinstance(out.exception, TraceFormatError)
    assert "holds the probes of 2 traces" in str(out.exception)
    doc = json.loads(CliRunner().invoke(cli, [*base, "--trace-id", "b", "--json"]).output)
    assert [(p["id"], p["outcome"]) for p in doc["probes"]] == [("b-p", "in_context")]
    out = CliRunner().invoke(cli, [*base, "--trace-id", "c"])
    assert isinstance(out.exception, TraceFormatError)
    assert "has no probes for trace 'c'" in str(out.exception)
