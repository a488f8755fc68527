"""The documented conversion between ctxbench messages and OpenAI chat dicts."""

from __future__ import annotations

import pytest

from ctxbench import from_openai, to_openai
from ctxbench.errors import TraceFormatError
from ctxbench.trace import Message, Part, ToolCall


def test_tool_calls_are_nested_under_function_as_openai_sends_them() -> None:
    call = Message("assistant", "", tool_calls=(ToolCall("c1", "bash", '{"cmd": "ls"}'),))
    result = Message("tool", "a.py", tool_call_id="c1", name="bash")
    assert to_openai([call, result]) == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd": "ls"}'},
                }
            ],
        },
        {"role": "tool", "content": "a.py", "tool_call_id": "c1", "name": "bash"},
    ]


def test_a_round_trip_gives_the_same_messages() -> None:
    messages = [
        Message("system", "be brief"),
        Message.from_parts("user", [Part("text", "look"), Part("image_url", "", {"url": "x"})]),
        Message(
            "assistant",
            "thinking",
            tool_calls=(ToolCall("a", "f", "{}"), ToolCall("b", "g", '{"x": 1}')),
            replay={"reasoning_content": "why"},
        ),
        Message("tool", "ra", tool_call_id="a"),
        Message("tool", "rb", tool_call_id="b"),
    ]
    assert from_openai(to_openai(messages)) == messages


def test_flat_tool_calls_and_null_content_are_read_too() -> None:
    (message,) = from_openai(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "1", "name": "f", "arguments": {"a": 1}}],
            }
        ]
    )
    assert message.content == "" and message.tool_calls == (ToolCall("1", "f", '{"a": 1}'),)


def test_a_dict_that_is_not_a_message_is_named_by_its_path() -> None:
    with pytest.raises(TraceFormatError) as info:
        from_openai([{"role": "user", "content": "ok"}, {"content": "no role"}], source="mine")
    assert info.value.key == "$[1]" and "missing required key 'role'" in str(info.value)
    with pytest.raises(TraceFormatError, match="expected a list of message dicts, got NoneType"):
        from_openai(None)
