"""Journal lines are bounded by the line limit both ways (issue 22): an over-long record is
journalled as a failed cell that says so, and an over-long line is never read whole: the
sweep's recovery skips it by line number (the lines after it still count), readers refuse it
by line number."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ctxbench import limits
from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.errors import ResultsError
from ctxbench.formats.canonical import write_traces
from ctxbench.results.journal import (
    journal_index,
    journal_lines,
    parse_line,
    read_record,
    record_line,
)
from ctxbench.sweep import InlineExecutor, load_sweep, run_sweep
from ctxbench.sweep.store import ResultsWriter
from ctxbench.trace import Message, ToolCall, Trace


def _trace(trace_id: str = "t", rounds: int = 12) -> Trace:
    msgs = [Message("system", "You are an agent."), Message("user", "Fix the bug.")]
    for i in range(rounds):
        call = ToolCall(f"c{i}", "bash", json.dumps({"cmd": f"step {i}"}))
        msgs += [
            Message("assistant", f"step {i}", tool_calls=(call,)),
            Message("tool", f"out {i} " + "x" * 200, tool_call_id=call.id, name="bash"),
        ]
    return Trace(trace_id, (*msgs, Message("assistant", "Done.")))


def test_a_line_over_the_limit_is_read_past_not_into_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "MAX_LINE_CHARS", 100)
    second = b'{"run_id":"b","x":"' + b"y" * 5000 + b'"}\n'
    text = b'{"run_id":"a"}\n' + second + b"tail"
    lines = list(journal_lines(io.BytesIO(text)))
    assert [(x.number, x.complete, x.too_long) for x in lines] == [
        (1, True, False),
        (2, True, True),
        (3, False, False),
    ]
    assert len(lines[1].data) == 101 and lines[1].run_id == "b"
    assert lines[1].length == len(second) and lines[2].offset == 15 + len(second)


def test_a_record_over_the_limit_is_journalled_as_a_failed_cell_saying_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trace = _trace()
    spec = resolve_spec(
        RunSpec(trace.id, trace.content_hash, "none", window=100_000, counter="chars4")
    )
    output = run_spec(spec, trace)
    events = [e.to_dict() for e in output.events]
    whole = record_line(output.result, events)
    monkeypatch.setattr(limits, "MAX_LINE_CHARS", len(whole) // 2)
    bounded = record_line(output.result, events)
    record, problem = parse_line(bounded.encode())
    assert problem == "" and len(bounded) <= limits.MAX_LINE_CHARS
    assert record["events"] == []
    assert record["row"]["error"].startswith("JournalLimit: the cell's journal record is")
    assert f"{len(events):,} events were not kept" in record["row"]["error"]
    assert record["row"]["input_tokens_total"] == output.result.to_row()["input_tokens_total"]


def _sweep_dir(tmp_path: Path) -> tuple[Path, Path]:
    write_traces(tmp_path / "t.jsonl", [_trace("a"), _trace("b"), _trace("c")])
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text(
        'windows = [100000]\ncounters = ["chars4"]\n[[traces]]\npath = "t.jsonl"\n'
        '[[strategies]]\nname = "none"\n',
        encoding="utf-8",
    )
    out = tmp_path / "out"
    run_sweep(load_sweep(sweep_file), out, executor=InlineExecutor())
    return sweep_file, out


def test_recovery_skips_an_over_long_line_by_number_and_keeps_the_lines_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep_file, out = _sweep_dir(tmp_path)
    journal = out / "cells.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    assert len(lines) == 3
    monkeypatch.setattr(limits, "MAX_LINE_CHARS", max(len(x) for x in lines) + 10)
    # the second cell's line grows past the limit (its run_id still readable at the start)
    long = lines[1][:-2] + b',"pad":"' + b"z" * (limits.MAX_LINE_CHARS * 3) + b'"}\n'
    journal.write_bytes(lines[0] + long + lines[2])
    index = journal_index(journal)
    second = parse_line(lines[1])[0]["run_id"]
    with pytest.raises(ResultsError, match="longer than") as info:
        read_record(journal, index[second])
    assert info.value.line == 2
    with ResultsWriter(out, resume=True) as writer:
        assert [(n, p.split(" bytes")[0]) for n, p in writer.skipped_lines] == [
            (2, f"longer than {limits.MAX_LINE_CHARS:,}")
        ]
        assert second not in writer.finished and len(writer.finished) == 2
    summary = run_sweep(load_sweep(sweep_file), out, executor=InlineExecutor(), resume=True)
    assert summary.ran == 1 and summary.skipped == 2
    assert [n for n, _ in summary.skipped_lines] == [2]
