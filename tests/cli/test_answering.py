"""``--answerer`` on ``run`` and ``sweep``: rows with answered retention and next-action
agreement, a sweep resumed after a kill or a failing endpoint without re-asking finished
cells, a second identical sweep sending nothing, and the endpoint never taken from a file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ctxbench.answering.cache import AnswerCache
from ctxbench.answering.client import Answerer, AnswererSettings
from ctxbench.cell.runner import run_spec
from ctxbench.cli import cli
from ctxbench.formats.canonical import write_traces
from ctxbench.results import ResultsDir, spec_of_row
from tests import REPO
from tests.answering.server import Scripted, fact_trace, facts_of, running, scripted_server

CELLS = 4


@pytest.fixture
def server() -> Iterator[Scripted]:
    yield from running(scripted_server(facts_of(fact_trace().probes)))


def traces(folder: Path) -> Path:
    path = folder / "facts.jsonl"
    write_traces(path, [fact_trace(8)])
    return path


def sweep_file(folder: Path, extra: str = "") -> Path:
    path = folder / "sweep.toml"
    path.write_text(
        f"""windows = [100000]
reserved = [0]
counters = ["chars4"]
{extra}
[[traces]]
path = "{traces(folder)}"

[[strategies]]
name = "none"

[[strategies]]
name = "sliding_window"
params = {{ keep_rounds = [2, 3, 5] }}
""",
        "utf-8",
    )
    return path


def answering(server: Scripted, cache: Path) -> list[str]:
    return ["--answerer", f"m@{server.url}", "--next-action", "--answerer-cache", str(cache)]


def rows(out: Path) -> dict[str, dict[str, Any]]:
    return {
        r.run_id: {k: v for k, v in r.to_row().items() if k != "replay_seconds"}
        for r in ResultsDir(out).results()
    }


def test_run_writes_answered_retention_and_next_action_agreement(
    server: Scripted, tmp_path: Path
) -> None:
    out = tmp_path / "rows.jsonl"
    args = ["run", str(traces(tmp_path)), "-s", "sliding_window", "--set", "keep_rounds=2"]
    args += ["-w", "100000", "--reserved", "0", "-c", "chars4", "--out", str(out)]
    result = CliRunner().invoke(cli, [*args, *answering(server, tmp_path / "c")])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert (row["retention"], row["answered_retention"]) == (0.0, 0.0)
    assert row["next_action_calls"] > 0 and row["next_action_agreement"] == 0.0
    assert f"{len(server.bodies)} requests sent" in result.output
    again = CliRunner().invoke(cli, [*args, *answering(server, tmp_path / "c"), "--offline"])
    assert again.exit_code == 0, again.output
    assert "0 requests sent" in again.output


def test_a_second_identical_sweep_makes_no_request(server: Scripted, tmp_path: Path) -> None:
    sweep = str(sweep_file(tmp_path))
    first = CliRunner().invoke(
        cli,
        [
            "sweep",
            sweep,
            "-o",
            str(tmp_path / "a"),
            "-j",
            "1",
            "-q",
            *answering(server, tmp_path / "c"),
        ],
    )
    assert first.exit_code == 0, first.output
    sent = len(server.bodies)
    assert sent > CELLS
    second = CliRunner().invoke(
        cli,
        [
            "sweep",
            sweep,
            "-o",
            str(tmp_path / "b"),
            "-j",
            "1",
            "-q",
            *answering(server, tmp_path / "c"),
        ],
    )
    assert second.exit_code == 0, second.output
    assert len(server.bodies) == sent
    assert "0 requests sent" in second.output
    assert rows(tmp_path / "a") == rows(tmp_path / "b")
    # the script answers what the prompt holds: its answers follow string presence
    pairs = sorted((r["retention"], r["answered_retention"]) for r in rows(tmp_path / "a").values())
    assert pairs == [(0.0, 0.0)] * 3 + [(1.0, 1.0)]


def needed_keys(out: Path, server: Scripted, tmp_path: Path) -> dict[str, set[str]]:
    """Per cell, the cache keys of every request it needs (each cell asked alone)."""
    from ctxbench.cell.traces import load_trace

    needed: dict[str, set[str]] = {}
    for run_id, row in rows(out).items():
        spec = spec_of_row(row)
        trace = load_trace(spec.trace_source, spec.trace_id, spec.trace_hash)
        settings = AnswererSettings("m", server.url, cache_dir=str(tmp_path / f"alone-{run_id}"))
        start = len(server.bodies)
        run_spec(spec, trace, answerer=Answerer(settings))
        needed[run_id] = {AnswerCache.key(b) for b in server.bodies[start:]}
    return needed


def journal_ids(out: Path) -> list[str]:
    path = out / "cells.jsonl"
    if not path.exists():
        return []
    return [
        json.loads(line)["run_id"]
        for line in path.read_text("utf-8").splitlines()
        if line.endswith("}")
    ]


def test_a_killed_sweep_resumes_without_re_asking_finished_cells(
    server: Scripted, tmp_path: Path
) -> None:
    out, cache = tmp_path / "out", tmp_path / "c"
    server.mode, server.delay = "slow", 0.1
    command = [sys.executable, "-m", "ctxbench", "sweep", str(sweep_file(tmp_path)), "-o", str(out)]
    command += [
        "-j",
        "1",
        "-q",
        "--batch",
        "1",
        "--answerer-concurrency",
        "1",
        *answering(server, cache),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(journal_ids(out)) < 1 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished = set(journal_ids(out))
    assert 1 <= len(finished) < CELLS
    server.mode = "ok"
    before = len(server.bodies)
    resumed = subprocess.run([*command, "--resume"], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    resent = {AnswerCache.key(b) for b in server.bodies[before:]}
    assert len(rows(out)) == CELLS and all(r["error"] is None for r in rows(out).values())
    assert sorted(journal_ids(out)) == sorted(rows(out))  # each cell journaled once
    needed = needed_keys(out, server, tmp_path)
    unfinished = set().union(*(needed[r] for r in rows(out) if r not in finished))
    assert resent and resent <= unfinished  # nothing only a finished cell needed


def test_a_failing_endpoint_fails_cells_clearly_and_keeps_finished_ones(
    server: Scripted, tmp_path: Path
) -> None:
    out, cache = tmp_path / "out", tmp_path / "c"
    server.fail_after = 12
    args = ["sweep", str(sweep_file(tmp_path)), "-o", str(out), "-j", "1", "-q", "--batch", "1"]
    args += ["--answerer-retries", "0", "--answerer-concurrency", "1", *answering(server, cache)]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 1
    done = {r: row for r, row in rows(out).items() if row["error"] is None}
    failed = [row["error"] for row in rows(out).values() if row["error"] is not None]
    assert done and failed
    assert all("HTTP 500 from " in e and "/v1/chat/completions" in e for e in failed)
    server.fail_after = None
    before = len(server.bodies)
    again = CliRunner().invoke(cli, [*args, "--resume"])
    assert again.exit_code == 0, again.output
    assert all(rows(out)[r] == row for r, row in done.items())
    assert len(server.bodies) > before
    assert all(row["error"] is None for row in rows(out).values())


def test_a_sweep_file_cannot_name_the_endpoint(server: Scripted, tmp_path: Path) -> None:
    sweep = sweep_file(tmp_path, extra=f'answerer = "m@{server.url}"')
    result = CliRunner().invoke(cli, ["sweep", str(sweep), "-o", str(tmp_path / "o"), "-q"])
    assert result.exit_code != 0
    assert "answerer: unknown key" in str(result.exception)
    assert server.bodies == []


def test_a_re_run_row_answers_from_the_cache_and_never_calls_unasked(
    server: Scripted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXBENCH_CACHE", str(tmp_path / "home"))
    out = tmp_path / "rows.jsonl"
    args = ["run", str(traces(tmp_path)), "-s", "none", "-w", "100000", "--reserved", "0"]
    args += ["-c", "chars4", "--out", str(out), "--answerer", f"m@{server.url}", "-q"]
    assert CliRunner().invoke(cli, args).exit_code == 0
    sent = len(server.bodies)
    rerun = CliRunner().invoke(cli, ["run", "--from-row", str(out)])
    assert rerun.exit_code == 0, rerun.output
    assert "reproduces the recorded row" in rerun.output
    assert len(server.bodies) == sent
    monkeypatch.setenv("CTXBENCH_CACHE", str(tmp_path / "empty"))
    cold = CliRunner().invoke(cli, ["run", "--from-row", str(out)])
    assert cold.exit_code != 0
    assert "no cached answer" in str(cold.exception)
    assert len(server.bodies) == sent


def test_next_action_without_an_answerer_and_a_bad_answerer_are_usage_errors(
    tmp_path: Path,
) -> None:
    args = ["run", str(traces(tmp_path)), "-s", "none", "-w", "100000", "-c", "chars4"]
    alone = CliRunner().invoke(cli, [*args, "--next-action"])
    assert alone.exit_code == 2
    assert "--next-action asks a model: give --answerer MODEL@URL" in alone.output
    bad = CliRunner().invoke(cli, [*args, "--answerer", "m@127.0.0.1:8000/v1"])
    assert bad.exit_code != 0
    assert "--answerer takes MODEL@URL" in str(bad.exception)


def test_a_sweep_stops_at_max_cost_over_its_cells_and_resumes_past_it(
    server: Scripted, tmp_path: Path
) -> None:
    out, cache = tmp_path / "out", tmp_path / "c"
    args = ["sweep", str(sweep_file(tmp_path)), "-o", str(out), "-j", "1", "-q", "--batch", "1"]
    args += [*answering(server, cache), "--answerer-price", "1000/0"]
    stopped = CliRunner().invoke(cli, [*args, "--max-cost", "0.001"])
    assert stopped.exit_code != 0
    assert "--max-cost 0.001 USD reached" in str(stopped.exception)
    finished = set(journal_ids(out))
    assert 1 <= len(finished) < CELLS
    again = CliRunner().invoke(cli, [*args, "--resume", "--max-cost", "1000"])
    assert again.exit_code == 0, again.output
    assert len(rows(out)) == CELLS
    assert sorted(journal_ids(out)) == sorted(rows(out))
