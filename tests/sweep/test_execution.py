"""Running sweeps: one row per cell, crash safety and resume, error rows, executors agree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.decisions.outcomes import RunOutcome, outcome_of_record, read_outcomes
from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.result import TIMING_COLUMNS, RunResult
from ctxbench.errors import ConfigError, OutputError
from ctxbench.formats.canonical import write_traces
from ctxbench.results.layout import JOURNAL
from ctxbench.strategies.base import Strategy
from ctxbench.sweep import (
    DaskExecutor,
    ProcessExecutor,
    ResultsDir,
    load_sweep,
    plan,
    run_sweep,
)
from ctxbench.sweep.execution import DEFAULT_BATCH, WHOLE_TRACE_BATCH, batch_for
from ctxbench.sweep.store import ResultsWriter
from tests import REPO
from tests.factories import react_trace, tool_trace

SWEEP = """
windows = [3000, 6000]
reserved = [500]
counters = ["chars4", "hermes"]

[[traces]]
path = "traces.jsonl"

[[strategies]]
name = "none"

[[strategies]]
name = "sliding_window"
params = { keep_rounds = [2, 4] }

[[strategies]]
name = "dbgpt"
params = { warning_threshold = [0.6, 0.7] }
"""


def make_sweep(folder: Path, *, rounds: int = 12, extra: str = "") -> Path:
    """Six traces (native tool calls and text ReAct) and a 20-configuration sweep over them."""
    folder.mkdir(parents=True, exist_ok=True)
    traces = [
        tool_trace(
            rounds + 4 * i, output="log line " * (40 + 30 * i), calls=1 + i % 2, trace_id=f"t{i}"
        )
        for i in range(5)
    ]
    write_traces(folder / "traces.jsonl", [*traces, react_trace(rounds, observation="row " * 200)])
    path = folder / "sweep.toml"
    path.write_text(SWEEP + extra, encoding="utf-8")
    return path


def table(out: Path) -> list[dict[str, Any]]:
    """The final rows without the timing columns (what must not depend on the executor)."""
    return [
        {k: v for k, v in row.to_row().items() if k not in TIMING_COLUMNS}
        for row in ResultsDir(out).results()
    ]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sweep run uninterrupted, in this process."""
    folder = tmp_path_factory.mktemp("reference")
    run_sweep(load_sweep(make_sweep(folder)), folder / "out")
    return folder / "out"


def test_every_cell_has_exactly_one_row_sorted_by_run_id(reference: Path) -> None:
    results = ResultsDir(reference)
    rows = results.results()
    expected = sorted(plan(load_sweep(reference.parent / "sweep.toml")).run_ids())
    assert [r.run_id for r in rows] == expected
    assert len(expected) == 6 * 20
    assert list(rows[0].to_row()) == RunResult.columns()
    assert all(r.error is None for r in rows)
    assert results.spec()["cells"] == 120
    assert results.complete


def test_events_carry_their_run_id_and_are_sorted_by_it(reference: Path) -> None:
    lines = (reference / "events.jsonl").read_text("utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    assert all(line.startswith('{"run_id":"') for line in lines)
    run_ids = [e["run_id"] for e in events]
    assert run_ids == sorted(run_ids)
    assert set(run_ids) == {r.run_id for r in ResultsDir(reference).results()}
    for rid in run_ids[:: len(run_ids) // 7]:
        steps = [e["step"] for e in events if e["run_id"] == rid]
        assert steps == list(range(len(steps)))


def test_snapshot_files_are_stored_per_run_id(reference: Path) -> None:
    snapshots = [
        (run, e) for run, e in ResultsDir(reference).typed_events() if isinstance(e, ev.Snapshot)
    ]
    assert snapshots, "the dbgpt cells should have written snapshots"
    for run, event in snapshots[:5]:
        stored = ResultsDir(reference).files_dir(run) / event.path
        assert stored.stat().st_size == event.bytes


def test_results_dir_reads_an_unfinished_sweep_from_its_journal(
    reference: Path, tmp_path: Path
) -> None:
    partial = tmp_path / "partial"
    partial.mkdir()
    journal = (reference / JOURNAL).read_text("utf-8").splitlines(keepends=True)
    (partial / JOURNAL).write_text("".join(journal[:7]), encoding="utf-8")
    results = ResultsDir(partial)
    assert not results.complete
    rows = results.results()
    assert [r.run_id for r in rows] == sorted(json.loads(j)["run_id"] for j in journal[:7])
    full = {r.run_id: r for r in ResultsDir(reference).results()}
    assert all(row == replace(full[row.run_id], replay_seconds=row.replay_seconds) for row in rows)
    rid = rows[0].run_id
    assert list(results.typed_events(rid)) == list(ResultsDir(reference).typed_events(rid))


class Explodes(Strategy):
    """A plug-in strategy with a bug that shows only on trace t1."""

    name = "explodes"

    def before_call(self, ctx: ReplayContext) -> None:
        if ctx.trace_id == "t1" and ctx.call == 3:
            raise RuntimeError("boom on t1")


def test_a_cell_that_raises_becomes_an_error_row_and_the_sweep_goes_on(tmp_path: Path) -> None:
    extra = f'\n[[strategies]]\nname = "{__name__}:Explodes"\n'
    summary = run_sweep(load_sweep(make_sweep(tmp_path, extra=extra)), tmp_path / "out")
    rows = ResultsDir(tmp_path / "out").results()
    failed = [r for r in rows if r.error is not None]
    assert summary.failed == len(failed) == 4  # t1 x 2 windows x 2 counters
    assert {(r.trace_id, r.strategy) for r in failed} == {("t1", f"{__name__}:Explodes")}
    raised = (
        f"PluginError: strategy {__name__}:Explodes: before_call raised RuntimeError: boom on t1"
        " (trace 't1', model call 3)"
    )
    assert all(r.error == raised and r.calls == 0 for r in failed)
    # beside each failed cell: the plug-in's frames and the command that re-runs it alone
    for row in failed:
        saved = (tmp_path / "out" / "files" / row.run_id / "traceback.txt").read_text()
        assert saved.startswith(f"run {row.run_id}: strategy {__name__}:Explodes: before_call")
        assert 'raise RuntimeError("boom on t1")' in saved and "ctxbench/engine" not in saved
        assert f"ctxbench run --from-row RESULTS_DIR --run-id {row.run_id} --allow-plugins" in saved
    assert not any(ResultsDir(tmp_path / "out").typed_events(failed[0].run_id))
    fine = [r for r in rows if r.strategy.endswith("Explodes") and r.error is None]
    assert len(fine) == 5 * 4 and all(r.calls > 0 for r in fine)
    assert len(rows) == 6 * 24


def test_resume_cuts_a_torn_last_line_and_completes_the_table(
    reference: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    lines = (reference / JOURNAL).read_bytes().splitlines(keepends=True)
    (out / JOURNAL).write_bytes(b"".join(lines[:30]) + lines[30][: len(lines[30]) // 2])
    summary = run_sweep(load_sweep(reference.parent / "sweep.toml"), out, resume=True)
    assert (summary.skipped, summary.ran) == (30, 90)
    assert table(out) == table(reference)
    assert (out / "events.jsonl").read_bytes() == (reference / "events.jsonl").read_bytes()
    journal = (out / JOURNAL).read_text("utf-8").splitlines()
    assert len(journal) == len({json.loads(line)["run_id"] for line in journal}) == 120


PROBED_SWEEP = """
windows = [4096, 8192]
reserved = [1024]
counters = ["chars4"]

[[traces]]
scenario = "support_agent"
seeds = [0, 1]

[[strategies]]
name = "sliding_window"
params = { keep_rounds = [2, 6] }

[[strategies]]
name = "dbgpt"
params = { warning_threshold = [0.6] }
"""


def test_the_sweep_decides_from_what_it_wrote_as_a_reader_of_its_directory_would(
    tmp_path: Path,
) -> None:
    """Cells this run wrote (events split from the line) and cells an earlier run wrote (read
    back whole) give the outcomes ``read_outcomes`` reads from the finished directory."""
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(PROBED_SWEEP, encoding="utf-8")
    first: list[RunOutcome] = []
    resumed: list[RunOutcome] = []

    def collect(into: list[RunOutcome]) -> Any:
        return lambda row, events: into.append(outcome_of_record(RunResult.from_row(row), events))

    run_sweep(load_sweep(sweep), tmp_path / "first", on_cell=collect(first))
    out = tmp_path / "out"
    out.mkdir()
    lines = (tmp_path / "first" / JOURNAL).read_bytes().splitlines(keepends=True)
    (out / JOURNAL).write_bytes(b"".join(lines[:5]))
    summary = run_sweep(load_sweep(sweep), out, resume=True, on_cell=collect(resumed))
    assert (summary.skipped, summary.ran) == (5, 7)
    read = read_outcomes(out)
    assert resumed == first == read
    assert all(o.from_events for o in read)
    assert {o for p in read for _, _, o in p.probes} >= {"in_context", "lost"}


def test_resuming_an_edited_sweep_runs_only_the_new_cells_and_drops_the_removed(
    reference: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / JOURNAL).write_bytes((reference / JOURNAL).read_bytes())
    edited = tmp_path / "edited.toml"
    edited.write_text(
        SWEEP.replace("windows = [3000, 6000]", "windows = [3000, 6000, 9000]")
        .replace("warning_threshold = [0.6, 0.7]", "warning_threshold = [0.6]")
        .replace('path = "traces.jsonl"', f'path = "{reference.parent / "traces.jsonl"}"'),
        encoding="utf-8",
    )
    summary = run_sweep(load_sweep(edited), out, resume=True)
    configs = (1 + 2 + 1) * 3 * 2
    assert summary.cells == 6 * configs
    assert (summary.skipped, summary.ran) == (6 * 4 * 2 * 2, 6 * 4 * 1 * 2)
    rows = ResultsDir(out).results()
    assert sorted(r.run_id for r in rows) == sorted(plan(load_sweep(edited)).run_ids())
    assert not any(json.loads(r.params).get("warning_threshold") == 0.7 for r in rows)
    assert ResultsDir(out).spec()["spec"]["windows"] == [3000, 6000, 9000]


def test_a_results_dir_is_not_overwritten_without_resume(reference: Path) -> None:
    before = (reference / JOURNAL).read_bytes()
    with pytest.raises(OutputError, match="--resume"):
        run_sweep(load_sweep(reference.parent / "sweep.toml"), reference)
    assert (reference / JOURNAL).read_bytes() == before
    assert (reference / "results.parquet").exists()


def test_two_sweeps_never_write_one_directory(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path, resume=False), pytest.raises(OutputError, match="another sweep"):
        ResultsWriter(tmp_path, resume=True)


def test_prices_give_cost_and_csv_repeats_the_table(tmp_path: Path) -> None:
    extra = "\n[prices.hermes]\ninput_per_mtok = 2.0\ncached_input_per_mtok = 0.5\n"
    run_sweep(load_sweep(make_sweep(tmp_path, extra=extra)), tmp_path / "out", with_csv=True)
    rows = ResultsDir(tmp_path / "out").results()
    assert all((r.cost_usd is not None) == (r.counter == "hermes") for r in rows)
    assert any(r.cost_usd for r in rows)
    import csv

    with (tmp_path / "out" / "results.csv").open(encoding="utf-8") as fh:
        csv_rows = list(csv.DictReader(fh))
    assert [r["run_id"] for r in csv_rows] == [r.run_id for r in rows]
    assert [int(r["input_tokens_total"]) for r in csv_rows] == [r.input_tokens_total for r in rows]


def test_any_row_reruns_alone_from_its_spec(reference: Path, tmp_path: Path) -> None:
    rows = ResultsDir(reference).results()
    row = next(r for r in rows if r.strategy == "dbgpt" and r.window == 3000)
    args = ["run", "--from-row", str(reference), "--run-id", row.run_id, "--json"]
    result = CliRunner().invoke(cli, [*args, "--files-dir", str(tmp_path / "f")])
    assert result.exit_code == 0, result.output
    rerun = json.loads(result.stdout.splitlines()[0])
    assert {k: v for k, v in rerun.items() if k not in TIMING_COLUMNS} == {
        k: v for k, v in row.to_row().items() if k not in TIMING_COLUMNS
    }
    assert "reproduces the recorded row" in result.stderr
    line = tmp_path / "row.jsonl"
    line.write_text(json.dumps(row.to_row()) + "\n", encoding="utf-8")
    assert CliRunner().invoke(cli, ["run", "--from-row", str(line)]).exit_code == 0
    tampered = dict(row.to_row(), spec=row.spec.replace('"window":3000', '"window":3001'))
    line.write_text(json.dumps(tampered) + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", "--from-row", str(line)])
    assert isinstance(result.exception, ConfigError)
    assert "does not match the spec" in str(result.exception)


def _journal_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_a_sweep_killed_with_sigkill_resumes_to_the_uninterrupted_table(
    reference: Path, tmp_path: Path
) -> None:
    import psutil

    sweep = reference.parent / "sweep.toml"
    out = tmp_path / "out"
    command = [sys.executable, "-m", "ctxbench.cli", "sweep", str(sweep), "-o", str(out)]
    command += ["--workers", "2", "--batch", "2", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while _journal_lines(out / JOURNAL) < 6:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the sweep made no progress"
            time.sleep(0.01)
        workers = psutil.Process(proc.pid).children(recursive=True)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        _, alive = psutil.wait_procs(workers, timeout=10)
        assert not alive, "worker processes outlived the killed driver"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    done_before = _journal_lines(out / JOURNAL)
    assert 6 <= done_before < 120
    assert not (out / "results.parquet").exists()

    resumed = subprocess.run(
        [*command, "--resume"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{120 - done_before} ran, {done_before} already done" in resumed.stdout

    rows = table(out)
    assert len(rows) == len({r["run_id"] for r in rows}) == 120
    assert rows == table(reference)
    assert (out / "events.jsonl").read_bytes() == (reference / "events.jsonl").read_bytes()


@pytest.mark.dask
def test_one_worker_two_workers_and_a_dask_cluster_give_identical_results(
    reference: Path, tmp_path: Path
) -> None:
    spec = load_sweep(reference.parent / "sweep.toml")
    run_sweep(spec, tmp_path / "two", executor=ProcessExecutor(2), batch=3)
    run_sweep(spec, tmp_path / "dask", executor=DaskExecutor(local=2), batch=5)
    expected_events = (reference / "events.jsonl").read_bytes()
    for out in (tmp_path / "two", tmp_path / "dask"):
        assert table(out) == table(reference)
        assert (out / "events.jsonl").read_bytes() == expected_events
        files = sorted(p.relative_to(out) for p in (out / "files").rglob("*") if p.is_file())
        ref_files = sorted(
            p.relative_to(reference) for p in (reference / "files").rglob("*") if p.is_file()
        )
        assert files == ref_files


CITED_SWEEP = """
windows = [16384]
keep_files = "{keep}"

[[traces]]
scenario = "support_agent"

[[strategies]]
name = "dbgpt"
params = {{ release = "design", warning_threshold = [0.6] }}

[[strategies]]
name = "sliding_window"
params = {{ keep_rounds = [4] }}
"""


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One sweep (a DB-GPT cell whose probes are answered by a snapshot file, and a cell
    that writes none) run with each ``keep_files`` value."""
    folder = tmp_path_factory.mktemp("kept")
    out = {}
    for keep in ("all", "cited", "none"):
        path = folder / f"{keep}.toml"
        path.write_text(CITED_SWEEP.format(keep=keep), encoding="utf-8")
        run_sweep(load_sweep(path), folder / keep)
        out[keep] = folder / keep
    return out


def _files(out: Path) -> dict[str, bytes]:
    root = out / "files"
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_keep_files_changes_the_files_only(kept: dict[str, Path]) -> None:
    events = {k: (v / "events.jsonl").read_bytes() for k, v in kept.items()}
    assert events["all"] == events["cited"] == events["none"]
    assert table(kept["all"]) == table(kept["cited"]) == table(kept["none"])
    assert not (kept["none"] / "files").exists() or not _files(kept["none"])


def test_keep_files_cited_keeps_exactly_the_files_probe_evidence_was_found_in(
    kept: dict[str, Path],
) -> None:
    from ctxbench.cell.traces import load_trace

    spec = load_sweep(kept["cited"].parent / "cited.toml")
    entry = plan(spec).entries[0]
    trace = load_trace(entry.address, entry.trace_id, entry.trace_hash)
    answers = {p.id: p.answers for p in trace.probes}
    everything, cited = _files(kept["all"]), _files(kept["cited"])
    assert cited and len(cited) < len(everything) / 10
    assert all(everything[path] == content for path, content in cited.items())
    events = list(ResultsDir(kept["cited"]).typed_events())
    by_reference = [
        (run, e)
        for run, e in events
        if isinstance(e, ev.ProbeScored) and e.outcome == "via_reference"
    ]
    assert by_reference
    for run, event in by_reference:  # its answer is in a kept file of its run, which the run wrote
        run_files = {k: v for k, v in cited.items() if k.startswith(run + "/")}
        assert any(
            a in v.decode("utf-8") for v in run_files.values() for a in answers[event.probe_id]
        ), event
    written = {(run, e.path) for run, e in events if isinstance(e, ev.Snapshot)}
    assert {tuple(path.split("/", 1)) for path in cited} <= written
    cited_runs = {run for run, _ in by_reference}
    assert {path.split("/", 1)[0] for path in cited} == cited_runs


def test_keep_files_is_one_of_three_words(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(CITED_SWEEP.format(keep="x").replace('"x"', "false"), encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_sweep(path)
    assert raised.value.key == "keep_files" and "'cited'" in raised.value.message


def test_a_worker_gets_a_whole_trace_when_every_worker_has_two_traces_or_more() -> None:
    """The batch only schedules (results do not depend on it): a given one is kept; by
    default several workers sharing many traces take each trace whole (one worker tokenizes
    it), and few traces, or one process, are cut into tasks of DEFAULT_BATCH cells."""
    assert batch_for(5, traces=100, workers=2) == 5
    assert batch_for(None, traces=4, workers=2) == WHOLE_TRACE_BATCH
    assert batch_for(None, traces=3, workers=2) == DEFAULT_BATCH
    assert batch_for(None, traces=100, workers=1) == DEFAULT_BATCH
