"""The canonical trace model: immutability, fingerprints, parts, meta round trips."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from ctxbench.trace import Message, Part, ToolCall, Trace


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


def test_call_indices_are_worked_out_once_and_a_replaced_trace_has_its_own() -> None:
    trace = Trace("t", (Message("user", "a"), Message("assistant", "b"), Message("user", "c")))
    assert trace.call_indices == (1,) and trace.call_indices is trace.call_indices
    longer = dataclasses.replace(trace, messages=(*trace.messages, Message("assistant", "d")))
    assert longer.call_indices == (1, 3) and trace.call_indices == (1,)
    assert longer == pickle.loads(pickle.dumps(longer)) and longer != trace
