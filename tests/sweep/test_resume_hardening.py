"""Hardening: no finished work is dropped, and a sweep writes only its own directory (issue 22).

Each case starts from a sweep killed with a real SIGKILL (``ctxbench sweep`` in a subprocess),
then damages or changes what a user or a crash could, and resumes. Before: one flipped byte at
line 10 of the journal discarded every later cell; a changed spec was resumed silently into a
mix of both; failed cells exited 0 and were never retried; ``-o .`` deleted the user's
``results.csv``; symlinks planted in the directory made ``--resume`` write outside it; temp
files of a killed run stayed; only the journal was fsync'ed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxbench.formats.canonical import write_traces
from ctxbench.results.layout import JOURNAL, RESULTS, RESULTS_CSV
from ctxbench.sweep import ResultsDir, load_sweep, plan
from tests import REPO
from tests.factories import tool_trace

SWEEP = """
windows = [{windows}]
reserved = [200]
counters = ["chars4", "hermes"]

[[traces]]
path = "traces.jsonl"

[[strategies]]
name = "none"

[[strategies]]
name = "sliding_window"
params = {{ keep_rounds = [2, 3, 4] }}
"""
WINDOWS = "3000, 4000, 5000"
CELLS = 6 * 4 * 3 * 2
#: A strategy that fails while CTXBENCH_TEST_EXPLODE is set (a bug that gets fixed).
EXPLODING = """
import os
from ctxbench.strategies.none import NoCompaction


class Explodes(NoCompaction):
    name = "explodes"

    def on_start(self, ctx):
        if os.environ.get("CTXBENCH_TEST_EXPLODE"):
            raise RuntimeError("boom")
        super().on_start(ctx)
"""


def write_sweep(
    folder: Path, windows: str = WINDOWS, extra: str = "", output: str = "log " * 150
) -> Path:
    traces = [tool_trace(30 + 2 * i, output=output, trace_id=f"t{i}") for i in range(6)]
    write_traces(folder / "traces.jsonl", traces)
    path = folder / "sweep.toml"
    path.write_text(SWEEP.format(windows=windows) + extra, "utf-8")
    return path


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{extra.pop('path', '')}", **extra}


def sweep(
    *args: str, cwd: Path, environ: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxbench", *args],
        cwd=cwd,
        env=environ or env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def killed_sweep(folder: Path, at_least: int = 20) -> Path:
    """Run ``ctxbench sweep`` and SIGKILL it once the journal holds ``at_least`` cells."""
    out = folder / "out"
    command = [sys.executable, "-m", "ctxbench", "sweep", "sweep.toml", "-o", str(out), "-q"]
    proc = subprocess.Popen(
        [*command, "-j", "1", "--batch", "1"],
        cwd=folder,
        env=env(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while lines(out / JOURNAL) < at_least:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the sweep made no progress"
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    total = plan(load_sweep(folder / "sweep.toml")).cells
    assert at_least <= lines(out / JOURNAL) < total, "the sweep finished before the kill"
    assert not (out / RESULTS).exists()
    return out


def counts(stdout: str) -> tuple[int, int]:
    """(ran, already done) from the sweep's summary line."""
    found = re.search(r"(\d+) ran, (\d+) already done", stdout)
    assert found, stdout
    return int(found.group(1)), int(found.group(2))


@pytest.fixture()
def folder(tmp_path: Path) -> Iterator[Path]:
    write_sweep(tmp_path)
    yield tmp_path


def test_a_damaged_journal_line_is_skipped_and_reported_and_later_lines_count(
    folder: Path,
) -> None:
    out = killed_sweep(folder)
    journal = out / JOURNAL
    data = journal.read_bytes().split(b"\n")
    before = len([line for line in data if line])  # complete lines (and maybe a torn one)
    complete = journal.read_bytes().count(b"\n")
    middle = len(data[9]) // 2
    data[9] = data[9][:middle] + b"\xff" + data[9][middle + 1 :]  # one corrupt byte at line 10
    journal.write_bytes(b"\n".join(data))
    done = sweep("sweep", "sweep.toml", "-o", str(out), "-q", "--resume", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert f"{JOURNAL}:10: damaged journal line skipped" in done.stderr
    ran, kept = counts(done.stdout)
    assert kept == complete - 1 and ran == CELLS - kept  # before: only 9 kept
    assert before >= complete
    rows = ResultsDir(out).results()
    assert len(rows) == len({r.run_id for r in rows}) == CELLS


def test_resume_with_a_changed_spec_refuses_naming_the_change_unless_reset(
    folder: Path,
) -> None:
    out = killed_sweep(folder)
    journal_before = (out / JOURNAL).read_bytes()
    spec_before = (out / "sweep.json").read_bytes()
    write_sweep(folder, windows="3000, 6000")
    done = sweep("sweep", "sweep.toml", "-o", str(out), "-q", "--resume", cwd=folder)
    assert done.returncode == 2, done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("error: ") and "sweep spec changed" in first
    assert "windows: [3000, 4000, 5000] -> [3000, 6000]" in first and "--reset" in done.stderr
    assert (out / JOURNAL).read_bytes() == journal_before  # nothing touched
    assert (out / "sweep.json").read_bytes() == spec_before

    done = sweep("sweep", "sweep.toml", "-o", str(out), "-q", "--resume", "--reset", cwd=folder)
    assert done.returncode == 0, done.stderr
    new_cells = 6 * 4 * 2 * 2
    ran, kept = counts(done.stdout)
    assert ran + kept == new_cells and kept > 0
    assert "--reset dropped" in done.stderr
    wanted = sorted(plan(load_sweep(folder / "sweep.toml")).run_ids())
    assert sorted(r.run_id for r in ResultsDir(out).results()) == wanted
    assert lines(out / JOURNAL) == new_cells  # no stale cells left to show


def test_failed_cells_exit_non_zero_and_resume_retries_them(tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "explode.py").write_text(EXPLODING, "utf-8")
    write_sweep(tmp_path, windows="3000", extra='\n[[strategies]]\nname = "explode:Explodes"\n')
    broken = env(path=str(tmp_path / "plugins"), CTXBENCH_TEST_EXPLODE="1")
    args = ["--allow-plugins", "sweep", "sweep.toml", "-o", "out", "-q", "-j", "1"]
    done = sweep(*args, cwd=tmp_path, environ=broken)
    assert done.returncode == 1, done.stderr  # before: 0
    failing = 6 * 2
    assert f"{failing} cells failed" in done.stderr
    assert sum(r.error is not None for r in ResultsDir(tmp_path / "out").results()) == failing

    again = sweep(*args, "--resume", "--no-retry-failed", cwd=tmp_path, environ=broken)
    total = 6 * (1 + 3 + 1) * 2
    assert again.returncode == 1 and counts(again.stdout) == (0, total)

    fixed = env(path=str(tmp_path / "plugins"))
    done = sweep(*args, "--resume", cwd=tmp_path, environ=fixed)
    assert done.returncode == 0, done.stderr
    assert counts(done.stdout) == (failing, total - failing)
    assert all(r.error is None for r in ResultsDir(tmp_path / "out").results())


@pytest.mark.parametrize("user_file", [RESULTS_CSV, "notes.txt", "data"])
def test_a_sweep_refuses_a_directory_holding_files_it_did_not_write(
    folder: Path, user_file: str
) -> None:
    mine = folder / user_file
    if user_file == "data":
        mine.mkdir()
    else:
        mine.write_text("=SUM(A1:A9)\n", "utf-8")
    done = sweep("sweep", "sweep.toml", "-o", ".", "-q", "-j", "1", cwd=folder)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and "did not write" in done.stderr
    assert user_file in done.stderr.splitlines()[0]
    assert mine.exists() and (mine.is_dir() or mine.read_text("utf-8") == "=SUM(A1:A9)\n")
    assert not (folder / JOURNAL).exists()


@pytest.mark.parametrize("planted", ["files", "files/RUN", "cells.jsonl", ".lock"])
def test_resume_never_writes_through_a_symlink_planted_in_the_results_dir(
    tmp_path: Path, planted: str
) -> None:
    """DB-GPT persists large tool results under files/RUN_ID/: links planted there, at
    files/ itself, at the journal or at the lock must not lead a resumed sweep outside."""
    write_sweep(tmp_path, extra='\n[[strategies]]\nname = "dbgpt"\n', output="z " * 4500)
    out = killed_sweep(tmp_path, at_least=4)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("keep me", "utf-8")
    finished = {r.run_id for r in ResultsDir(out).results()}
    todo = [rid for rid in plan(load_sweep(tmp_path / "sweep.toml")).run_ids()]
    names = [f"files/{rid}" for rid in todo if rid not in finished]
    names = names if planted == "files/RUN" else [planted]
    (out / "files").mkdir(exist_ok=True)
    for name in names:
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        target.unlink(missing_ok=True)
        target.symlink_to(outside / "victim" if name in ("cells.jsonl", ".lock") else outside)
    done = sweep("sweep", "sweep.toml", "-o", str(out), "-q", "--resume", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "symbolic link" in done.stderr.splitlines()[0] and "Traceback" not in done.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]  # before: 72 files here
    assert (outside / "victim").read_text("utf-8") == "keep me"


def kill_mid_write(path: Path) -> None:
    """A process that opens ``path`` for an atomic write, writes half, and is SIGKILLed."""
    code = (
        "import sys, time\n"
        "from ctxbench.atomic_file import AtomicFile\n"
        "with AtomicFile(sys.argv[1]) as fh:\n"
        "    fh.write('half'); fh.flush(); print('ready', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], env=env(), stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*.tmp"))


def test_temp_files_left_by_a_kill_are_removed_by_the_next_run(folder: Path) -> None:
    out = killed_sweep(folder)
    kill_mid_write(out / "events.jsonl")
    kill_mid_write(out / "sweep.json")
    (out / ".results.parquet.tmp").write_bytes(b"PAR1 half")  # what a kill in finalize leaves
    assert len(temporaries(out)) == 3
    done = sweep("sweep", "sweep.toml", "-o", str(out), "-q", "--resume", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert temporaries(out) == []

    kill_mid_write(out / "report.html")
    assert len(temporaries(out)) == 1
    done = sweep("report", str(out), "-o", str(out / "report.html"), "-q", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert temporaries(out) == []
    assert (out / "report.html").read_bytes().startswith(b"<!")


def test_every_published_file_is_fsynced_before_its_rename_and_its_folder_after(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The order of the real syscalls (recorded on their way through) for a whole sweep."""
    from ctxbench.sweep import run_sweep

    calls: list[tuple[str, Any]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        calls.append(("replace", (str(src), str(dst))))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    out = folder / "out"
    run_sweep(load_sweep(folder / "sweep.toml"), out, with_csv=True)
    renames = [(i, c[1]) for i, c in enumerate(calls) if c[0] == "replace"]
    published = {Path(dst).name for _, (_, dst) in renames}
    assert {"sweep.json", "results.parquet", "results.csv", "events.jsonl"} <= published
    for i, (src, dst) in renames:
        assert ("fsync", src) in calls[:i], f"{dst} renamed without an fsync of {src}"
        assert ("fsync", str(Path(dst).parent)) in calls[i + 1 :], f"{dst}: folder not synced"


PLUGIN = """
def compact(messages, budget, *, keep: int = 6):
    if len(messages) <= keep + 2:
        return messages
    tail = messages[-keep:]
    while tail and tail[0]["role"] == "tool":
        tail = tail[1:]
    return messages[:2] + tail
"""


def test_resume_runs_again_the_cells_whose_plug_in_code_changed_and_says_how_many(
    tmp_path: Path,
) -> None:
    """Before: a sweep resumed after its plug-in changed said "all already done" and kept
    the old version's rows, so `check` passed a regression."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "__init__.py").write_text("")
    code = tmp_path / "mine" / "compaction.py"
    code.write_text(PLUGIN)
    write_sweep(
        tmp_path, windows="4000", extra='[[strategies]]\nname = "mine.compaction:compact"\n'
    )
    environ = env(path=str(tmp_path))
    args = ("sweep", "sweep.toml", "-o", "out", "-q", "--allow-plugins")
    first = sweep(*args, cwd=tmp_path, environ=environ)
    assert first.returncode == 0, first.stderr
    assert counts(first.stdout) == (6 * 5 * 2, 0)  # 6 traces x (none, 3 windows, mine) x 2
    before = {r.run_id: r for r in ResultsDir(tmp_path / "out").results()}
    # same run again: nothing changed, nothing runs
    again = sweep(*args, "--resume", cwd=tmp_path, environ=environ)
    assert counts(again.stdout) == (0, 60) and "re-run" not in again.stderr
    # v2 keeps fewer messages: its 12 cells run again, the other 48 are kept
    code.write_text(PLUGIN.replace("keep: int = 6", "keep: int = 2"))
    resumed = sweep(*args, "--resume", cwd=tmp_path, environ=environ)
    assert resumed.returncode == 0, resumed.stderr
    assert counts(resumed.stdout) == (12, 48)
    assert "12 cells re-run: their plug-in's code changed since the last run" in resumed.stderr
    assert "mine.compaction:compact: sha256:" in resumed.stderr
    after = {r.run_id: r for r in ResultsDir(tmp_path / "out").results()}
    assert len(after) == 60
    mine = [r for r in after.values() if r.strategy == "mine.compaction:compact"]
    assert len(mine) == 12 and not any(r.run_id in before for r in mine)
    # re-running one of its rows after yet another change says the code changed since
    code.write_text(PLUGIN.replace("keep: int = 6", "keep: int = 3"))
    rerun = sweep(
        "run", "--from-row", "out", "--run-id", mine[0].run_id, "--allow-plugins", "-q",
        cwd=tmp_path, environ=environ,
    )  # fmt: skip
    assert "note: the plug-in's code changed since this row was recorded" in rerun.stderr
    assert sum(r.input_tokens_total for r in mine) < sum(
        r.input_tokens_total for r in before.values() if r.strategy == "mine.compaction:compact"
    )
