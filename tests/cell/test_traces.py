"""The trace loader's cache (issue 38, item 8): the last trace loaded is kept by address AND
trace id, so rows of ``ctxbench run --out`` over a file of several traces (their address is the
bare file) each load their own trace."""

from __future__ import annotations

from pathlib import Path

from ctxbench.cell.traces import TraceLoader
from ctxbench.formats.canonical import write_traces
from tests.factories import tool_trace
from tests.hardening import run_main


def test_one_address_two_trace_ids(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    write_traces(path, [tool_trace(2, trace_id="a"), tool_trace(3, trace_id="b")])
    loader = TraceLoader()
    # before: the second load returned trace "a" again and failed ("expected trace 'b'")
    assert loader.load(str(path), "a").id == "a"
    assert loader.load(str(path), "b").id == "b"
    assert loader.load(str(path), "a").id == "a"


def test_view_of_a_multi_trace_run(tmp_path: Path) -> None:
    """The README's example: `ctxbench run t.jsonl ... --out rows.jsonl && ctxbench view rows.jsonl`."""
    path = tmp_path / "t.jsonl"
    write_traces(path, [tool_trace(3, trace_id="a"), tool_trace(4, trace_id="b")])
    rows = tmp_path / "rows.jsonl"
    run = ["run", str(path), "-s", "sliding_window", "-w", "8000", "-c", "chars4", "-q"]
    code, err = run_main([*run, "--out", str(rows)])
    assert code == 0, err
    code, err = run_main(["view", str(rows), "-q"])
    assert code == 0, err
    index = (tmp_path / "rows.viewer" / "data" / "index.js").read_text("utf-8")
    assert '"trace_id":"a"' in index and '"trace_id":"b"' in index
