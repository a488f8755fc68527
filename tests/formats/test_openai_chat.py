"""OpenAI chat messages: list, {messages}, JSON Lines of either; calls, parts, usage, tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxbench.errors import TraceFormatError
from ctxbench.formats.importing import import_file
from ctxbench.formats.location import At
from ctxbench.formats.openai_chat import message, tool_spec, usage
from ctxbench.trace import ToolCall

AT = At.start("f.json")
CHAT: list[dict[str, Any]] = [
    {"role": "user", "content": "list files"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": '{"p": 1}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "a", "content": "x y"},
    {"role": "assistant", "content": "done"},
]


def write(path: Path, value: Any, lines: bool = False) -> Path:
    text = "\n".join(json.dumps(v) for v in value) + "\n" if lines else json.dumps(value)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "value", "lines"),
    [
        ("list.json", CHAT, False),
        ("object.json", {"messages": CHAT}, False),
        ("messages.jsonl", CHAT, True),
    ],
)
def test_one_conversation_in_any_container_gives_the_same_messages(
    tmp_path: Path, name: str, value: Any, lines: bool
) -> None:
    traces, report = import_file(write(tmp_path / name, value, lines))
    assert report.format == "openai_chat" and len(traces) == 1
    assert [m.role for m in traces[0].messages] == [m["role"] for m in CHAT]
    assert traces[0].messages[1].tool_calls == (ToolCall("a", "ls", '{"p": 1}'),)
    assert traces[0].messages[2].tool_call_id == "a"


def test_jsonl_of_conversations_gives_one_trace_per_line(tmp_path: Path) -> None:
    path = write(tmp_path / "convs.jsonl", [{"id": "x", "messages": CHAT}, CHAT], lines=True)
    traces, _ = import_file(path)
    assert [t.id for t in traces] == ["x", "convs-2"]


def test_json_list_of_conversations_gives_one_trace_each(tmp_path: Path) -> None:
    traces, _ = import_file(
        write(tmp_path / "many.json", [{"messages": CHAT}, {"messages": CHAT[:1]}])
    )
    assert [len(t.messages) for t in traces] == [4, 1]


def test_flat_calls_and_object_arguments_are_read() -> None:
    msg = message(
        {"role": "assistant", "tool_calls": [{"id": 7, "name": "f", "arguments": {"k": "v"}}]}, AT
    )
    assert msg.tool_calls == (ToolCall("7", "f", json.dumps({"k": "v"})),)


def test_list_content_keeps_every_part_in_order() -> None:
    parts = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "u"}}, "b"]
    msg = message({"role": "user", "content": parts}, AT)
    assert msg.content == "a\nb"
    assert msg.parts is not None and [p.type for p in msg.parts] == ["text", "image_url", "text"]
    assert msg.parts[1].data == {"image_url": {"url": "u"}}


def test_replay_fields_are_kept_and_empty_ones_dropped() -> None:
    msg = message(
        {"role": "assistant", "content": "x", "reasoning_content": "why", "thinking_blocks": []}, AT
    )
    assert dict(msg.replay) == {"reasoning_content": "why"}


def test_unmapped_keys_go_to_meta_at_every_level() -> None:
    msg = message(
        {
            "role": "assistant",
            "turn": 3,
            "tool_calls": [
                {
                    "id": "a",
                    "index": 0,
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}", "strict": True},
                }
            ],
        },
        AT,
    )
    assert msg.meta == {"turn": 3}
    assert msg.tool_calls[0].meta == {"index": 0, "function": {"strict": True}}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {
                "prompt_tokens": 100,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 64},
            },
            (100, 5, 64),
        ),
        (
            {
                "prompt_tokens": 100,
                "completion_tokens": 5,
                "prompt_cache_hit_tokens": 32,
                "prompt_cache_miss_tokens": 68,
            },
            (100, 5, 32),
        ),
        (
            {
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_read_input_tokens": 80,
                "cache_creation_input_tokens": 10,
            },
            (100, 5, 80),
        ),
        (
            {
                "input_tokens": 100,
                "output_tokens": 5,
                "input_tokens_details": {"cached_tokens": 80},
            },
            (100, 5, 80),
        ),
    ],
    ids=["openai", "deepseek", "anthropic", "responses"],
)
def test_usage_shapes_give_total_prompt_and_cached_tokens(
    raw: dict[str, Any], expected: tuple[int, ...]
) -> None:
    got = usage(raw, AT)
    assert (
        got is not None
        and (got.prompt_tokens, got.completion_tokens, got.cached_tokens) == expected
    )


def test_usage_keeps_the_cache_split_in_meta() -> None:
    got = usage(
        {"prompt_tokens": 100, "prompt_cache_hit_tokens": 32, "prompt_cache_miss_tokens": 68}, AT
    )
    assert got is not None and got.meta == {
        "prompt_cache_hit_tokens": 32,
        "prompt_cache_miss_tokens": 68,
    }


def test_tool_schemas_map_from_openai_and_anthropic_shapes() -> None:
    openai = tool_spec(
        {
            "type": "function",
            "function": {"name": "f", "description": "d", "parameters": {"type": "object"}},
        },
        AT,
    )
    anthropic = tool_spec({"name": "f", "description": "d", "input_schema": {"type": "object"}}, AT)
    assert openai == anthropic and openai.parameters == {"type": "object"}


@pytest.mark.parametrize(
    ("raw", "path", "words"),
    [
        ({"content": "x"}, "$", "missing required key 'role'"),
        ({"role": "user", "content": 5}, "$.content", "a string, a list of parts or null"),
        (
            {"role": "assistant", "tool_calls": [{"id": "a", "function": {"arguments": "{}"}}]},
            "$.tool_calls[0].function",
            "'name'",
        ),
        (
            {"role": "assistant", "tool_calls": [{"id": "a", "name": "f", "arguments": 3}]},
            "$.tool_calls[0].arguments",
            "JSON string or object",
        ),
        (
            {"role": "assistant", "usage": {"prompt_tokens": "12"}},
            "$.usage.prompt_tokens",
            "integer",
        ),
    ],
)
def test_bad_shapes_name_the_json_path(raw: dict[str, Any], path: str, words: str) -> None:
    with pytest.raises(TraceFormatError) as err:
        message(raw, AT)
    assert err.value.key == path and words in str(err.value)
