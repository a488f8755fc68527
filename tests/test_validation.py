"""Structural validation of a trace: one test per problem type."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from ctxbench.probes.model import Probe
from ctxbench.trace import Message, RecordedCompaction, ToolCall, Trace
from ctxbench.validation import PROBLEM_CODES, validate
from tests.factories import tool_trace


def codes(trace: Trace) -> list[str]:
    return [p.code for p in validate(trace)]


# -- validation: one test per problem type -------------------------------------------------------


def test_empty_trace_is_a_problem() -> None:
    assert codes(Trace("e", ())) == ["empty_trace"]


def test_unknown_role_is_a_problem() -> None:
    assert codes(Trace("x", (Message("robot", "beep"),))) == ["unknown_role"]


def test_tool_result_without_a_matching_call_is_an_orphan() -> None:
    trace = Trace("x", (Message("user", "u"), Message("tool", "r", tool_call_id="nope")))
    problems = validate(trace)
    assert [p.code for p in problems] == ["orphan_tool_result"] and problems[0].index == 1
    assert problems[0].hint


def test_call_without_a_result_is_missing() -> None:
    trace = Trace(
        "x",
        (
            Message("user", "u"),
            Message("assistant", "", tool_calls=(ToolCall("c1", "f"),)),
            Message("user", "next"),
        ),
    )
    problems = validate(trace)
    assert [(p.code, p.index) for p in problems] == [("missing_tool_result", 1)]


def test_a_trailing_call_without_a_result_is_the_runs_end() -> None:
    ended = Trace(
        "x",
        (
            Message("user", "u"),
            Message("assistant", "", tool_calls=(ToolCall("c0", "f"),)),
            Message("tool", "r", tool_call_id="c0"),
            Message("assistant", "", tool_calls=(ToolCall("c1", "submit"),)),
        ),
    )
    assert validate(ended) == []
    # the same unanswered call in the middle of the run is still missing its result
    middle = Trace("y", (*ended.messages, Message("user", "and then?")))
    assert [(p.code, p.index) for p in validate(middle)] == [("missing_tool_result", 3)]


def test_duplicate_call_ids_are_a_problem() -> None:
    msgs = (
        Message("user", "u"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "f"),)),
        Message("tool", "r", tool_call_id="c1"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "f"),)),
    )
    assert "duplicate_call_id" in codes(Trace("x", msgs))


def test_tool_result_not_right_after_its_assistant_is_a_problem() -> None:
    msgs = (
        Message("user", "u"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "f"),)),
        Message("user", "interrupt"),
        Message("tool", "r", tool_call_id="c1"),
    )
    problems = validate(Trace("x", msgs))
    assert [(p.code, p.index) for p in problems] == [("tool_not_adjacent", 3)]


def test_probe_evidence_out_of_range_is_a_problem() -> None:
    probe = Probe("p", "recall", "q?", ("ok 0.0",), evidence=(99,))
    assert codes(tool_trace(1, probes=(probe,))) == ["probe_evidence_out_of_range"]


def test_probe_answer_missing_from_its_evidence_is_a_problem() -> None:
    probe = Probe("p", "recall", "q?", ("not there",), evidence=(3,))
    assert codes(tool_trace(1, probes=(probe,))) == ["probe_answer_not_in_evidence"]


def test_probe_answer_in_tool_call_arguments_counts_as_evidence() -> None:
    probe = Probe("p", "artifact", "which command?", ("step 0.0",), evidence=(2,))
    assert codes(tool_trace(1, probes=(probe,))) == []


def test_probe_ask_at_beyond_the_calls_is_a_problem() -> None:
    probe = Probe("p", "recall", "q?", ("ok 0.0",), evidence=(3,), ask_at=9)
    assert codes(tool_trace(1, probes=(probe,))) == ["probe_ask_at_out_of_range"]


def test_duplicate_probe_ids_are_a_problem() -> None:
    p = Probe("p", "recall", "q?", ("ok 0.0",), evidence=(3,))
    assert codes(tool_trace(1, probes=(p, p))) == ["duplicate_probe_id"]


def test_recorded_compactions_round_trip_and_past_the_trace_are_a_problem() -> None:
    trace = tool_trace(2)
    inside = RecordedCompaction(2, len(trace.messages), "auto", 1200, "summary", "f.jsonl:9")
    kept = replace(trace, recorded_compactions=(inside,))
    assert Trace.from_dict(json.loads(json.dumps(kept.to_dict()))) == kept
    assert "recorded_compactions" not in trace.to_dict()  # absent when there are none
    assert codes(kept) == []
    past = replace(
        trace, recorded_compactions=(RecordedCompaction(len(trace.call_indices) + 1, 1),)
    )
    assert codes(past) == ["recorded_compaction_out_of_range"]


def test_every_problem_code_is_covered_by_a_test() -> None:
    here = Path(__file__).read_text(encoding="utf-8")
    assert all(f'"{code}"' in here for code in PROBLEM_CODES)
