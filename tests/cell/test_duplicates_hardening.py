"""Hardening: duplicate tool call ids are refused, and strategy files never collide (issue 22).

Before: ``validate`` flagged a reused call id, but ``run`` and ``sweep`` went on; DB-GPT's
persisted file for the first call was overwritten by the second, the snapshot hash in the
events no longer matched the file, and a recoverable probe scored lost.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ctxbench.formats.canonical import write_traces
from ctxbench.results.layout import JOURNAL
from ctxbench.trace import Message, ToolCall, Trace
from tests.factories import replay_context, tool_trace
from tests.hardening import run_main


def reused_id_trace() -> Trace:
    """Two rounds whose calls share the id ``c1``; big results DB-GPT persists to files."""
    msgs = [Message("system", "You are an agent."), Message("user", "Fix the bug")]
    for i, answer in enumerate(("ORD-11111", "ORD-22222")):
        call = ToolCall("c1", "bash", json.dumps({"cmd": f"cat part{i}"}))
        msgs.append(Message("assistant", f"step {i}", tool_calls=(call,)))
        msgs.append(Message("tool", f"{answer} " + "z" * 9000, tool_call_id="c1", name="bash"))
    msgs.append(Message("assistant", "done"))
    return Trace("dup", tuple(msgs))


def test_run_refuses_a_trace_that_reuses_a_tool_call_id(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_traces(path, [tool_trace(3, trace_id="fine"), reused_id_trace()])
    code, err = run_main(["run", str(path), "-s", "dbgpt", "-w", "6000", "--reserved", "0"])
    assert code == 2 and "Traceback" not in err, err
    first = err.splitlines()[0]
    assert first.startswith("error: ") and "'dup'" in first and "message 4" in first
    assert "'c1'" in first and "message 2" in first  # the id and where it was first used


def test_sweep_refuses_it_before_any_cell_runs(tmp_path: Path) -> None:
    write_traces(tmp_path / "traces.jsonl", [tool_trace(3, trace_id="fine"), reused_id_trace()])
    (tmp_path / "sweep.toml").write_text(
        'windows = [6000]\nreserved = [0]\ncounters = ["chars4"]\n\n'
        '[[traces]]\npath = "traces.jsonl"\n\n[[strategies]]\nname = "dbgpt"\n',
        "utf-8",
    )
    for args in (["--dry-run"], ["-o", str(tmp_path / "out"), "-q", "-j", "1"]):
        code, err = run_main(["sweep", str(tmp_path / "sweep.toml"), *args])
        assert code == 2 and err.startswith("error: ") and "'c1'" in err, err
    assert (
        not (tmp_path / "out" / JOURNAL).exists() or not (tmp_path / "out" / JOURNAL).stat().st_size
    )


def test_a_second_file_under_a_name_in_use_gets_its_own_name() -> None:
    ctx = replay_context()
    first = ctx.write_file("results/c1.txt", b"first")
    again = ctx.write_file("results/c1.txt", b"first")  # the same bytes: the same file
    second = ctx.write_file("results/c1.txt", b"second")
    third = ctx.write_file("results/c1.txt", b"third")
    bare = [ctx.write_file("notes", b"a"), ctx.write_file("notes", b"b")]
    assert first == again == "results/c1.txt"
    assert (second, third) == ("results/c1~2.txt", "results/c1~3.txt")
    assert bare == ["notes", "notes~2"]
    assert ctx.files == {
        "results/c1.txt": b"first",
        "results/c1~2.txt": b"second",
        "results/c1~3.txt": b"third",
        "notes": b"a",
        "notes~2": b"b",
    }
    snapshots = [e for e in ctx.events if e.type == "snapshot"]
    for event in snapshots:  # every event's hash is its file's
        assert event.data["sha256"] == hashlib.sha256(ctx.files[event.data["path"]]).hexdigest()
