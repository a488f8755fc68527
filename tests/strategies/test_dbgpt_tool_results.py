"""DB-GPT's tool results: a snapshot file and a pointer for each, persistence of oversized results
with a preview, the turn budget."""

from __future__ import annotations

import json

from ctxbench.strategies.dbgpt import generate_preview
from ctxbench.trace import Message, Trace
from tests.factories import tool_trace
from tests.strategies.dbgpt_cases import (
    compactions,
    final_view,
    react,
    run,
)

# -- snapshots and persistence ------------------------------------------------------------------------


def test_every_tool_result_gets_a_snapshot_file_and_a_pointer() -> None:
    out = run(react(3), 100_000)
    assert sorted(out.files) == [f"op_snapshots/r/step_{i:03d}_sql_query.json" for i in (1, 2, 3)]
    snap = json.loads(out.files["op_snapshots/r/step_002_sql_query.json"])
    assert list(snap) == [
        "step",
        "action",
        "phase",
        "action_intention",
        "action_reason",
        "thought",
        "action_input",
        "observation",
        "timestamp",
        "conv_id",
    ]
    assert (
        snap["step"] == 2 and snap["action"] == "sql_query" and snap["action_input"] == "SELECT 1"
    )
    assert snap["observation"].startswith("row1|") and snap["thought"] == "step 1"
    view = final_view(out)
    assert view[3].content.endswith(
        "\n[Full detail available at: op_snapshots/r/step_001_sql_query.json]"
    )


def test_native_tool_results_get_snapshots_named_after_the_tool() -> None:
    out = run(tool_trace(2), 100_000)
    snap = json.loads(out.files["op_snapshots/t/step_001_bash.json"])
    assert snap["action"] == "bash" and snap["action_input"] == '{"cmd": "step 0.0"}'


def test_oversized_results_are_persisted_with_a_preview() -> None:
    trace = Trace(
        "p",
        (
            Message("user", "go"),
            Message("assistant", "Thought: q\nAction: kb_grep\nAction Input: x"),
            Message("user", "Observation: " + "line\n" * 5000),
            Message("assistant", "done"),
        ),
    )
    out = run(trace, 100_000, tool_result_threshold=10_000, scale_to_window=False, snapshots=False)
    kept = final_view(out)[2].content
    assert kept.startswith(
        "Observation: <persisted-output>\nThis tool result was too large (25,013 characters, 24.4 KB)."
    )
    path = next(p for p in out.files if p.startswith("persisted_results/p/"))
    assert f"Full output saved to: {path}" in kept and kept.endswith("\n...\n</persisted-output>")
    assert out.files[path].decode().startswith("Observation: line")
    assert [c["layer"] for c in compactions(out)] == ["persist"]


def test_read_file_results_are_never_persisted() -> None:
    trace = tool_trace(1, output="r" * 50_000)
    trace = Trace(
        "rf",
        tuple(
            m
            if not m.tool_calls
            else m.__class__(
                "assistant",
                "",
                tool_calls=tuple(c.__class__(c.id, "read_file", c.arguments) for c in m.tool_calls),
            )
            for m in trace.messages
        ),
    )
    out = run(trace, 100_000, tool_result_threshold=1000, scale_to_window=False, snapshots=False)
    assert not out.files


def test_turn_budget_spills_the_largest_results_first() -> None:
    trace = tool_trace(1, calls=3, output="s" * 9000)
    big = trace.messages[3].with_text("B" * 15_000)
    msgs = list(trace.messages)
    msgs[3] = big
    out = run(
        Trace("tb", tuple(msgs)),
        100_000,
        scale_to_window=False,
        tool_result_threshold=50_000,
        turn_result_budget=30_000,
        snapshots=False,
    )
    view = final_view(out)
    persisted = [i for i, m in enumerate(view) if "<persisted-output>" in m.content]
    assert persisted == [3]


def test_preview_cuts_at_the_last_newline_past_half() -> None:
    assert generate_preview("a" * 10 + "\n" + "b" * 10, 15) == ("a" * 10 + "\n", True)
    assert generate_preview("ab\n" + "c" * 20, 15) == ("ab\n" + "c" * 12, True)
