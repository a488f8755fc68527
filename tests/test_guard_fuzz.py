"""Every command's file arguments fed a FIFO, ``/dev/zero``, a link to it, a gzip bomb (16
million blank lines in 16 KB), UTF-16 text, a truncated gzip and a file that is not gzip
(issue 38): no traceback, no hang, no command past 10 s; each answer is one ``error:`` line
naming the file, exit code 2. A results directory whose own files are FIFOs, links or UTF-16
is answered the same way (or read from its other files)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ctxbench.results import layout
from ctxbench.testing import run_sweep, write_baseline
from tests.fuzz_inputs import KINDS, SECONDS, hostile_files, run_bounded
from tests.hardening import run_main, small_sweep

#: command -> (argv with {F} for the hostile file, {T} a trace file, {R} a results directory,
#: {B} a baseline, {E} an events file, {O} an output folder; the suffix the file stands for)
COMMANDS: dict[str, tuple[list[str], str]] = {
    "count": (["count", "{F}", "--counter", "chars4"], ".jsonl"),
    "validate": (["validate", "{F}"], ".jsonl"),
    "run": (["run", "{F}", "-s", "sliding_window", "-w", "8000", "-c", "chars4"], ".jsonl"),
    "run --config": (
        ["run", "{T}", "-s", "sliding_window", "-w", "8000", "-c", "chars4", "--config", "{F}"],
        ".toml",
    ),
    "run --probes": (
        ["run", "{T}", "-s", "sliding_window", "-w", "8000", "-c", "chars4", "--probes", "{F}"],
        ".jsonl",
    ),
    "run --from-row": (["run", "--from-row", "{F}"], ".jsonl"),
    "run --counter profile:": (
        ["run", "{T}", "-s", "sliding_window", "-w", "8000", "-c", "profile:{F}"],
        ".json",
    ),
    "probes mine": (["probes", "mine", "{F}", "-o", "{O}/probes.jsonl"], ".jsonl"),
    "import": (["import", "{F}", "-o", "{O}/imported.jsonl"], ".jsonl"),
    "calibrate": (["calibrate", "{F}", "-c", "chars4"], ".json"),
    "sweep": (["sweep", "{F}", "-o", "{O}/sweep"], ".toml"),
    "gen": (["gen", "{F}", "-o", "{O}/gen.jsonl"], ".toml"),
    "report --prices": (["report", "{R}", "-o", "{O}/report.html", "--prices", "{F}"], ".toml"),
    "drift": (["drift", "{F}", "-o", "{O}/drift.html", "-c", "chars4"], ".jsonl"),
    "check --baseline": (["check", "{R}", "--baseline", "{F}"], ".json"),
    "diff": (["diff", "{F}", "{E}"], ".jsonl"),
    "recorded": (["recorded", "{F}"], ".jsonl"),
    "view": (["view", "{F}", "-o", "{O}/viewer"], ".jsonl"),
    "view --rows": (["view", "{E}", "--rows", "{F}", "-o", "{O}/viewer"], ".jsonl"),
    "init": (["init", "{F}", "-o", "{O}/init.toml"], ".jsonl"),
    "parity": (["parity", "claude_code", "recorded", "{F}"], ".jsonl"),
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("fuzz")
    small_sweep(root)
    results = run_sweep(root / "sweep.toml", root / "results")
    events = root / "events.jsonl"
    run = ["run", str(root / "traces.jsonl"), "-s", "sliding_window", "-w", "8000", "-c", "chars4"]
    code, err = run_main([*run, "--events", str(events), "--out", str(root / "rows.jsonl"), "-q"])
    assert code == 0, err
    baseline = write_baseline(results, root / "baseline.json")
    return {
        "T": str(root / "traces.jsonl"),
        "R": str(results),
        "B": str(baseline),
        "E": str(events),
    }


def assert_one_error_line(code: int, err: str, path: Path, seconds: float) -> None:
    assert "Traceback" not in err, err
    assert code == 2, (code, err)
    first = err.splitlines()[0]
    assert first.startswith("error: "), err
    assert str(path) in first or os.path.realpath(path) in first, err
    assert seconds < SECONDS


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_file_argument_refuses_hostile_files(
    command: str, inputs: dict[str, str], tmp_path: Path
) -> None:
    argv, suffix = COMMANDS[command]
    files = hostile_files(tmp_path / "in", suffix)
    assert sorted(files) == sorted(KINDS)
    for kind, path in files.items():
        out = tmp_path / f"out-{kind}"
        out.mkdir()
        values = {**inputs, "F": str(path), "O": str(out)}
        args = [_fill(a, values) for a in argv]
        code, err, seconds = run_bounded(args)
        if kind == "damaged-gzip" and code == 2 and "Traceback" not in err:
            # its first records unpack: the error may be about them (a line of the file)
            assert err.startswith("error: ") and str(path) in err.splitlines()[0], err
            continue
        assert_one_error_line(code, err, path, seconds)
        if kind == "gzip-bomb" and suffix == ".jsonl":  # JSON Lines are unpacked, bounded
            assert "--max-unpacked-lines" in err, err


def _fill(arg: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


@pytest.mark.parametrize("own", [layout.JOURNAL, layout.SPEC_FILE, layout.RESULTS, layout.EVENTS])
def test_a_results_directory_with_hostile_own_files(
    own: str, inputs: dict[str, str], tmp_path: Path
) -> None:
    for kind in ("fifo", "link-to-device", "utf-16"):
        results = tmp_path / f"results-{kind}"
        shutil.copytree(inputs["R"], results)
        for name in layout.FINAL_FILES if own == layout.JOURNAL else ():
            (results / name).unlink(missing_ok=True)  # the journal is what readers read
        (results / own).unlink()
        if kind == "fifo":
            os.mkfifo(results / own)
        elif kind == "link-to-device":
            (results / own).symlink_to("/dev/zero")
        else:
            (results / own).write_bytes('{"a": 1}\n'.encode("utf-16"))
        for argv in (
            ["report", str(results), "-o", str(tmp_path / "report.html")],
            ["recommend", str(results)],
            ["baseline", str(results), "-o", str(tmp_path / "baseline.json")],
            ["check", str(results), "--baseline", inputs["B"]],
            ["view", str(results), "-o", str(tmp_path / f"viewer-{kind}")],
            ["run", "--from-row", str(results), "--run-id", "0" * 16],
            ["diff", str(results), str(results), "--run-a", "0" * 16],
        ):
            code, err, seconds = run_bounded(argv)
            assert "Traceback" not in err, (argv, err)
            assert seconds < SECONDS
            if kind != "utf-16":  # a FIFO or a link is refused, whichever file is read
                assert code == 2 and str(results / own) in err.splitlines()[0], (argv, err)
