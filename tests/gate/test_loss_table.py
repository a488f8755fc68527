"""The loss table at the command line: ``ctxbench losses RESULTS|ROWS`` and ``run --losses``
name each probe not kept, where it was stated, the call (and compaction) it was lost at, the
answer missing, and per kind the retention and the cliff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli, main
from ctxbench.engine.result import RunResult
from ctxbench.formats.canonical import write_traces
from ctxbench.gate.loss_table import results_losses
from ctxbench.synth import generate, load_scenario

TRACE = next(generate(load_scenario("coding_agent"), 1))
RUN = ["-s", "sliding_window", "-w", "12000", "--set", "keep_rounds=2", "-q"]


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("losses")
    write_traces(folder / "t.jsonl", [TRACE])
    args = ["run", str(folder / "t.jsonl"), *RUN, "--out", str(folder / "rows.jsonl")]
    args += ["--events", str(folder / "events.jsonl")]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    return folder / "rows.jsonl"


def test_a_rows_file_replayed_gives_the_loss_table_its_events_give(rows: Path) -> None:
    (replayed,) = results_losses(rows)
    (recorded,) = results_losses(rows, rows.with_name("events.jsonl"))
    assert replayed == recorded  # replays are deterministic
    row = RunResult.from_row(json.loads(rows.read_text("utf-8").splitlines()[0]))
    assert recorded.run_id == row.run_id and recorded.cliffs == json.loads(row.cliff_by_kind)
    kinds = json.loads(row.retention_by_kind)
    assert {k: round(kept / asked, 4) for k, (kept, asked) in recorded.kinds.items()} == kinds
    assert len(recorded.losses) == row.probes - row.in_context


def test_losses_prints_each_lost_probe_and_each_kinds_cliff(rows: Path) -> None:
    (table,) = results_losses(rows)
    lost = next(x for x in table.losses if x.how == "dropped")
    out = CliRunner().invoke(cli, ["losses", str(rows), "--kind", lost.kind])
    assert out.exit_code == 0, out.output
    line = next(s for s in out.output.splitlines() if s.split()[:1] == [lost.probe_id])
    assert f"call {lost.lost_at} (compaction {lost.compaction}, dropped)" in line
    assert lost.missing[0] in line and f"msg {lost.stated[0]}" in line
    assert "kind           kept  asked  retention  cliff" in out.output
    shown = CliRunner().invoke(cli, ["losses", str(rows), "--json"])
    doc = json.loads(shown.output)
    assert doc["losses"][0]["probe_id"] == table.losses[0].probe_id
    assert set(doc["kinds"]) == set(table.kinds)


def test_run_losses_prints_the_table_after_the_rows(rows: Path) -> None:
    out = CliRunner().invoke(cli, ["run", str(rows.with_name("t.jsonl")), *RUN, "--losses"])
    assert out.exit_code == 0, out.output
    table_at = out.output.index(f"{TRACE.id}  sliding_window w=12000")
    assert out.output.index("retention") < table_at  # the rows first
    assert "probe " in out.output[table_at:] and "cliff" in out.output[table_at:]


def test_an_unknown_kind_or_run_is_named(rows: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args, says in (
        (["--kind", "safty"], "--kind: unknown probe kind 'safty'"),
        (["--run-id", "nope"], "no run 'nope'"),
    ):
        with pytest.raises(SystemExit) as info:
            main(["losses", str(rows), *args])
        assert info.value.code == 2 and says in capsys.readouterr().err


def test_watch_names_the_exact_call_of_a_loss_whose_call_was_inferred(tmp_path: Path) -> None:
    """claude_code's summaries may carry a fact past the compaction that dropped its message,
    so the table infers those calls; --watch replays the run once more, asking each such probe
    at every call, and names the call it left the prompt (``seen``), kinds and cliffs as they
    were."""
    write_traces(tmp_path / "t.jsonl", [TRACE])
    rows = tmp_path / "rows.jsonl"
    args = ["run", str(tmp_path / "t.jsonl"), "-s", "claude_code", "-w", "32k", "-q"]
    assert CliRunner().invoke(cli, [*args, "--out", str(rows)]).exit_code == 0
    (plain,) = results_losses(rows)
    (exact,) = results_losses(rows, watch=True)
    inferred = {x.probe_id for x in plain.losses if x.how in ("dropped", "rewritten")}
    seen = {x.probe_id for x in exact.losses if x.how == "seen"}
    assert seen and seen <= inferred and not any(x.how == "seen" for x in plain.losses)
    assert [x.probe_id for x in exact.losses] == [x.probe_id for x in plain.losses]
    assert (exact.kinds, exact.cliffs) == (plain.kinds, plain.cliffs)
    run_id = plain.run_id
    out = CliRunner().invoke(cli, ["losses", str(rows), "--run-id", run_id, "--watch", "--json"])
    assert out.exit_code == 0, out.output
    hows = {x["probe_id"]: x["how"] for x in json.loads(out.output)["losses"]}
    assert {p for p, how in hows.items() if how == "seen"} == seen
