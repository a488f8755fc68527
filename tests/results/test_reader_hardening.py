"""Junk, partial and corrupted results directories.

A results directory is read by the report, ``baseline``, ``check``, ``diff`` and ``run
--from-row``. Whatever happened to it (a sweep killed mid-line, a truncated or flipped
parquet file, a hand-edited journal, a missing ``sweep.json``), reading it either works or
fails with a ctxbench error naming the damaged file, where in it, and how to rebuild it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbench.errors import CtxbenchError
from ctxbench.formats.canonical import write_traces
from ctxbench.gate.baseline import make_baseline
from ctxbench.report.results import load_results
from ctxbench.results import ResultsDir
from ctxbench.results.layout import EVENTS, JOURNAL, RESULTS, SPEC_FILE
from ctxbench.testing import run_sweep, write_baseline
from tests.factories import tool_trace
from tests.hardening import FILE_LEVEL, damaged, run_main

SWEEP = """
windows = [3000]
reserved = [200]
counters = ["chars4"]

[[traces]]
path = "traces.jsonl"

[[strategies]]
name = "sliding_window"
params = { keep_rounds = [2, 3] }
"""


@pytest.fixture(scope="module")
def finished() -> Iterator[Path]:
    """A finished sweep's results directory (and its baseline) to damage copies of."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_traces(root / "traces.jsonl", [tool_trace(6, output="x" * 800, trace_id="a")])
        (root / "sweep.toml").write_text(SWEEP, "utf-8")
        run_sweep(root / "sweep.toml", root / "results")
        write_baseline(root / "results", root / "baseline.json")
        yield root


def assert_reads_or_names_the_damage(results: Path) -> None:
    """Every reader of the directory works, or raises a ctxbench error naming a file in it
    (where in the file, unless it is unreadable as a whole) and the fix."""
    readers = (
        lambda r: r.results(),
        lambda r: r.spec(),
        lambda r: list(r.typed_events()),
        lambda r: make_baseline(r.results()),
    )
    for read in readers:
        try:
            read(ResultsDir(results))
        except CtxbenchError as exc:
            assert exc.path is not None and exc.path.startswith(str(results)), exc
            assert exc.hint, exc
            if Path(exc.path).name != RESULTS and not any(w in exc.message for w in FILE_LEVEL):
                assert exc.line is not None or exc.key is not None, exc
    try:
        load_results(results)  # the report's reader
    except CtxbenchError as exc:
        assert exc.path is not None and exc.hint, exc


@st.composite
def damaged_copies(draw: st.DrawFn, source: Path, into: Path) -> Path:
    """A copy of the results directory ``source`` with one file damaged or removed; some
    copies are of an interrupted sweep (no final files, only the journal)."""
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(source, into)
    if draw(st.booleans()):
        for name in (RESULTS, EVENTS, "results.csv"):
            (into / name).unlink(missing_ok=True)
    present = sorted(p.name for p in into.iterdir() if p.is_file() and p.name != ".lock")
    target = into / draw(st.sampled_from(present))
    if draw(st.integers(0, 5)) == 0:
        target.unlink()
    elif target.name == RESULTS:
        data = target.read_bytes()
        cut = draw(st.integers(0, len(data) - 1))
        flip = draw(st.integers(0, len(data) - 1))
        target.write_bytes(
            draw(
                st.sampled_from(
                    [data[:cut], data[:flip] + bytes([data[flip] ^ 0x5A]) + data[flip + 1 :]]
                )
            )
        )
    else:
        target.write_bytes(draw(damaged(target.read_text("utf-8"))))
    return into


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_damaged_results_directories_read_or_name_the_damaged_file(
    finished: Path, data: st.DataObject
) -> None:
    results = data.draw(damaged_copies(finished / "results", finished / "damaged"))
    assert_reads_or_names_the_damage(results)


@pytest.mark.parametrize(
    "damage",
    ["torn journal", "garbage journal line", "no sweep.json", "garbage parquet", "foreign parquet"],
)
def test_baseline_and_check_exit_2_on_a_damaged_directory_without_traceback(
    finished: Path, tmp_path: Path, damage: str
) -> None:
    results = tmp_path / "results"
    shutil.copytree(finished / "results", results)
    journal = results / JOURNAL
    if damage in ("torn journal", "garbage journal line"):
        for name in (RESULTS, EVENTS):
            (results / name).unlink()
        text = journal.read_text("utf-8")
        if damage == "torn journal":  # a sweep killed mid-write: the torn line is not a cell
            journal.write_text(text[:-40], "utf-8")
        else:
            journal.write_text('{"run_id":"zz", "row": \n' + text, "utf-8")
    elif damage == "no sweep.json":
        (results / SPEC_FILE).unlink()
    elif damage == "garbage parquet":
        (results / RESULTS).write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"x": [1]}), results / RESULTS)
    baseline = finished / "baseline.json"
    code, err = run_main(["check", str(results), "--baseline", str(baseline)])
    if damage == "torn journal":
        assert code == 1, err  # the torn cell is missing from the results: a failed check
        return
    if damage == "no sweep.json":
        assert code == 0, err  # check reads rows only: a lost sweep.json does not matter
        return
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err, err
    assert str(results) in err.splitlines()[0] and "hint: " in err
    code, err = run_main(["baseline", str(results), "-o", str(tmp_path / "b.json")])
    assert code == 2 and "Traceback" not in err and not (tmp_path / "b.json").exists()


def test_a_directory_that_is_not_a_results_directory_is_named(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello", "utf-8")
    with pytest.raises(CtxbenchError) as err:
        ResultsDir(tmp_path)
    assert err.value.path == str(tmp_path) and err.value.hint


@pytest.mark.parametrize(("field", "value"), [("run_id", None), ("step", "7")])
def test_an_event_line_without_its_run_id_or_step_is_named_at_its_line(
    finished: Path, tmp_path: Path, field: str, value: object
) -> None:
    """A finished directory reads its events file; a line that lost its run id (or whose step
    is not an integer) is a ResultsError at that line and key, not a KeyError."""
    import json

    results = tmp_path / "results"
    shutil.copytree(finished / "results", results)
    lines = (results / EVENTS).read_text("utf-8").splitlines()
    event = json.loads(lines[1])
    if value is None:
        del event[field]
    else:
        event[field] = value
    lines[1] = json.dumps(event)
    (results / EVENTS).write_text("\n".join(lines) + "\n", "utf-8")
    with pytest.raises(CtxbenchError) as caught:
        list(ResultsDir(results).typed_events())
    assert (caught.value.line, caught.value.key) == (2, f"$.{field}")
    assert caught.value.path == str(results / EVENTS)
