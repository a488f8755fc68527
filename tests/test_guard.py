"""The reader guard (issue 38, items 7 and 10): regular files only, spec files and baselines of
bounded size, compressed inputs of bounded unpacked size and line count (the flag named in the
error), and outputs that never replace a results directory's own files."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from ctxbench import guard
from ctxbench.config import load_toml
from ctxbench.errors import ConfigError, OutputError, TraceFormatError
from ctxbench.formats.canonical import read_traces
from ctxbench.gate.baseline import load_baseline
from ctxbench.results.layout import JOURNAL, SPEC_FILE
from ctxbench.results.own_files import refuse_own_files
from ctxbench.testing import run_sweep
from tests.fuzz_inputs import alarm
from tests.hardening import run_main, small_sweep


def test_a_fifo_a_device_and_a_link_to_a_device_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "traces.jsonl"
    os.mkfifo(fifo)
    link = tmp_path / "zero.toml"
    link.symlink_to("/dev/zero")
    regular = tmp_path / "ok.toml"
    regular.write_text("a = 1\n", "utf-8")
    (tmp_path / "ok-link.toml").symlink_to(regular)
    assert guard.special_kind(fifo) == "a FIFO (named pipe)"
    assert guard.special_kind("/dev/zero") == "a character device"
    assert guard.special_kind(link) == "a character device"
    assert guard.special_kind(regular) is None
    with alarm(5):  # before the change, opening the FIFO blocked forever
        with pytest.raises(TraceFormatError, match="is a FIFO"):
            list(read_traces(fifo))
        with pytest.raises(ConfigError, match="is a character device"):
            load_toml(link)
        with pytest.raises(ConfigError, match="is a character device"):
            load_baseline("/dev/zero")
    assert load_toml(tmp_path / "ok-link.toml") == {"a": 1}  # a link to a regular file is read


def test_spec_files_and_baselines_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(guard, "MAX_SPEC_BYTES", 1_000)
    big = tmp_path / "sweep.toml"
    big.write_text("# padding\n" * 200, "utf-8")
    with pytest.raises(ConfigError, match="larger than 1,000 bytes"):
        guard.small_file(big, what="a TOML file", limit=guard.MAX_SPEC_BYTES)
    with pytest.raises(ConfigError, match="larger than 1,000 bytes"):
        guard.read_limited(big, what="a TOML file", limit=guard.MAX_SPEC_BYTES)
    assert guard.read_limited(big, what="a TOML file").startswith(b"# padding")


def _gz(path: Path, data: bytes) -> Path:
    path.write_bytes(gzip.compress(data))
    return path


def test_compressed_inputs_are_bounded_by_lines_and_bytes(tmp_path: Path) -> None:
    line = b'{"id": "t", "messages": [{"role": "user", "content": "hi"}]}\n'
    traces = _gz(tmp_path / "t.jsonl.gz", line * 50)
    assert len(list(read_traces(traces))) == 50
    limited = guard.unpacked_limits_set(None, 10)
    with limited, pytest.raises(TraceFormatError, match="more than 10 lines") as lines:
        list(read_traces(traces))
    assert "--max-unpacked-lines" in str(lines.value)
    limited = guard.unpacked_limits_set(1_000, None)
    with limited, pytest.raises(TraceFormatError, match="more than 1,000 bytes") as size:
        list(read_traces(traces))
    assert "--max-unpacked BYTES" in str(size.value)
    assert guard.unpacked_limits() == (
        guard.DEFAULT_MAX_UNPACKED_BYTES,
        guard.DEFAULT_MAX_UNPACKED_LINES,
    )  # restored after the block


def test_the_flags_set_the_limits_and_the_error_names_them(tmp_path: Path) -> None:
    blank = _gz(tmp_path / "blank.jsonl.gz", b"\n" * 5_000)
    code, err = run_main(["--max-unpacked-lines", "1000", "validate", str(blank)])
    assert code == 2 and "more than 1,000 lines" in err and "--max-unpacked-lines" in err, err
    code, err = run_main(["--max-unpacked", "100", "validate", str(blank)])
    assert code == 2 and "more than 100 bytes" in err and "--max-unpacked BYTES" in err, err
    code, err = run_main(["validate", str(blank)])  # under the defaults: just empty
    assert "more than" not in err, err


def test_a_gzip_of_two_gigabytes_of_blank_lines_is_refused_fast(tmp_path: Path) -> None:
    # the default limit plus one blank line (a bomb cut to size): refused, not read to its end
    blank = tmp_path / "bomb.jsonl.gz"
    with gzip.open(blank, "wb") as out:
        out.write(b"\n" * (guard.DEFAULT_MAX_UNPACKED_LINES + 1))
    limit = f"more than {guard.DEFAULT_MAX_UNPACKED_LINES:,} lines"
    with alarm(10), pytest.raises(TraceFormatError, match=limit):
        list(read_traces(blank))


@pytest.fixture()
def results(tmp_path: Path) -> Path:
    small_sweep(tmp_path)
    return run_sweep(tmp_path / "sweep.toml", tmp_path / "results")


def test_outputs_never_replace_a_results_directory_own_files(results: Path) -> None:
    own = {name: (results / name).read_bytes() for name in (JOURNAL, SPEC_FILE)}
    for argv in (
        ["report", str(results), "-o", str(results / JOURNAL)],
        ["baseline", str(results), "-o", str(results / SPEC_FILE)],
        [
            "check",
            str(results),
            "--baseline",
            str(results / "b.json"),
            "--junit",
            str(results / JOURNAL),
        ],
        ["view", str(results), "-o", str(results / "files")],
    ):
        if argv[0] == "check":
            assert run_main(["baseline", str(results), "-o", str(results / "b.json")])[0] == 0
        code, err = run_main(argv)
        assert code == 2 and "results directory" in err.splitlines()[0], (argv, err)
        assert "Traceback" not in err
    assert {name: (results / name).read_bytes() for name in own} == own
    # next to them is fine
    code, err = run_main(["baseline", str(results), "-o", str(results / "baseline.json")])
    assert code == 0, err


def test_refuse_own_files_and_links_on_a_path(results: Path, tmp_path: Path) -> None:
    with pytest.raises(OutputError):
        refuse_own_files(results / "files" / "x" / "report.html")
    with pytest.raises(OutputError):
        refuse_own_files(results, directory=True)
    refuse_own_files(results / "report.html")
    refuse_own_files(tmp_path / "elsewhere" / "cells.jsonl")  # not a results directory
    (tmp_path / "up").symlink_to("..")
    with pytest.raises(OutputError, match="symbolic link"):
        guard.refuse_links_on_path(tmp_path / "up" / "viewer")
    guard.refuse_links_on_path(tmp_path / "new" / "viewer")
