"""The canonical trace model: immutability, rounds, validation, pairing."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings

from ctxbench.probes.model import Probe
from ctxbench.trace import (
    PROBLEM_CODES,
    Message,
    Part,
    RecordedCompaction,
    ToolCall,
    Trace,
    pairing_violations,
    rounds,
    validate,
)
from tests.factories import react_trace, tool_trace, valid_messages


def codes(trace: Trace) -> list[str]:
    return [p.code for p in validate(trace)]


def test_messages_are_immutable() -> None:
    msg = Message("user", "hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        msg.content = "changed"  # type: ignore[misc]


def test_fingerprint_changes_with_content_and_calls_but_not_with_meta() -> None:
    a = Message("assistant", "x", tool_calls=(ToolCall("1", "bash", "{}"),))
    assert (
        a.fingerprint
        == Message("assistant", "x", tool_calls=(ToolCall("1", "bash", "{}"),)).fingerprint
    )
    assert (
        a.fingerprint
        != Message("assistant", "x", tool_calls=(ToolCall("1", "bash", '{"a":1}'),)).fingerprint
    )
    assert a.fingerprint != Message("assistant", "y", tool_calls=a.tool_calls).fingerprint
    assert a.fingerprint == dataclasses.replace(a, meta={"note": 1}).fingerprint


def test_list_content_keeps_parts_and_joins_text() -> None:
    msg = Message.from_dict(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:x"}},
                {"type": "text", "text": "here"},
            ],
        }
    )
    assert msg.content == "look\nhere"
    assert [p.type for p in msg.media_parts] == ["image_url"]
    assert Message.from_dict(msg.to_dict()) == msg


def test_with_text_keeps_media_parts() -> None:
    msg = Message.from_parts(
        "user", [Part("text", "a"), Part("image_url", data={"image_url": {"url": "u"}})]
    )
    shorter = msg.with_text("b")
    assert shorter.content == "b" and len(shorter.media_parts) == 1


def test_unknown_keys_go_to_meta_and_survive_a_round_trip() -> None:
    data = {
        "schema": "ctxbench.trace/1",
        "id": "x",
        "source_run": 7,
        "messages": [
            {"role": "user", "content": "hi", "timestamp": "t0"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "name": "f", "arguments": {"a": 1}, "type": "function"}],
                "reasoning_content": "because",
                "usage": {
                    "prompt_tokens": 5,
                    "completion_tokens": 2,
                    "cached_tokens": None,
                    "cost": 0.1,
                },
            },
            {"role": "tool", "tool_call_id": "c", "content": "r"},
        ],
    }
    trace = Trace.from_dict(data)
    assert trace.meta["source_run"] == 7
    assert trace.messages[0].meta == {"timestamp": "t0"}
    assert trace.messages[1].tool_calls[0].arguments == '{"a": 1}'
    assert trace.messages[1].tool_calls[0].meta == {"type": "function"}
    assert trace.messages[1].replay == {"reasoning_content": "because"}
    assert trace.messages[1].usage is not None and trace.messages[1].usage.meta == {"cost": 0.1}
    assert Trace.from_dict(trace.to_dict()) == trace


# -- rounds -------------------------------------------------------------------------------------


def test_a_tool_round_is_the_assistant_and_the_results_of_all_its_parallel_calls() -> None:
    trace = tool_trace(2, calls=3)
    segs = rounds(trace)
    # user + assistant + 3 results; then assistant + 3 results; then the final answer
    assert [len(r.indices) for r in segs] == [5, 4, 1]
    assert all(trace.messages[i].role != "system" for r in segs for i in r.indices)


def test_a_react_round_closes_at_an_observation_message() -> None:
    trace = react_trace(3)
    segs = rounds(trace)
    assert [len(r.indices) for r in segs] == [3, 2, 2, 1]
    assert [trace.messages[r.last].is_observation for r in segs[:3]] == [True, True, True]


def test_trailing_messages_form_an_incomplete_round() -> None:
    msgs = (Message("user", "a"), Message("assistant", "b", tool_calls=(ToolCall("1", "t"),)))
    segs = rounds(msgs)
    assert len(segs) == 1 and segs[0].complete


def test_system_messages_belong_to_no_round() -> None:
    msgs = (
        Message("system", "s"),
        Message("user", "u"),
        Message("system", "mid"),
        Message("assistant", "a"),
    )
    segs = rounds(msgs)
    assert [r.indices for r in segs] == [(1, 3)]


@settings(max_examples=300, deadline=None)
@given(valid_messages())
def test_rounds_cover_every_non_system_message_once_and_never_split_a_tool_pair(
    msgs: list[Message],
) -> None:
    segs = rounds(msgs)
    seen = [i for r in segs for i in r.indices]
    assert sorted(seen) == [i for i, m in enumerate(msgs) if m.role != "system"]
    assert len(seen) == len(set(seen))
    round_of = {i: r.index for r in segs for i in r.indices}
    call_round = {c.id: round_of[i] for i, m in enumerate(msgs) for c in m.tool_calls}
    for i, m in enumerate(msgs):
        if m.role == "tool":
            assert m.tool_call_id is not None
            assert round_of[i] == call_round[m.tool_call_id]
    assert [r.index for r in segs] == list(range(len(segs)))


@settings(max_examples=200, deadline=None)
@given(valid_messages())
def test_random_valid_conversations_validate_clean_and_have_no_pairing_violations(
    msgs: list[Message],
) -> None:
    trace = Trace("x", tuple(msgs) or (Message("user", "hi"),))
    assert validate(trace) == []
    assert pairing_violations(trace.messages) == 0


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


def test_pairing_violations_count_orphans_missing_results_and_separated_results() -> None:
    call = Message("assistant", "", tool_calls=(ToolCall("a", "f"), ToolCall("b", "f")))
    assert (
        pairing_violations(
            [call, Message("tool", "r", tool_call_id="a"), Message("tool", "r", tool_call_id="b")]
        )
        == 0
    )
    assert pairing_violations([call, Message("tool", "r", tool_call_id="a")]) == 1
    assert pairing_violations([Message("tool", "r", tool_call_id="a")]) == 1
    assert (
        pairing_violations(
            [
                call,
                Message("user", "x"),
                Message("tool", "r", tool_call_id="a"),
                Message("tool", "r", tool_call_id="b"),
            ]
        )
        == 2
    )
