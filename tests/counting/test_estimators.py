"""The estimators follow the rules of the frameworks they reproduce (see estimators.py and
docs/sources.md): each test states one rule and checks it on messages that exercise it."""

from __future__ import annotations

import json

from ctxbench.counting import get_counter
from ctxbench.counting.base import tool_schemas_json
from ctxbench.counting.estimators import (
    AgentScopeCounter,
    Chars4Counter,
    DbgptCounter,
    HermesCounter,
)
from ctxbench.trace import Message, ToolCall, ToolSpec

CALL = ToolCall("call_1", "bash", '{"cmd": "grep -rn TODO src/"}')
TOOL = ToolSpec(
    "bash", "Run a shell command.", {"type": "object", "properties": {"cmd": {"type": "string"}}}
)
IMAGE = Message.from_dict(
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    }
)
REASONING = "The user wants the TODOs; grep is fastest."
ASSISTANT = Message(
    "assistant", "Searching.", tool_calls=(CALL,), replay={"reasoning_content": REASONING}
)
CJK = Message("user", "请总结这个文件的内容。")


def test_chars4_is_len_over_4_of_all_text_a_message_carries() -> None:
    c = Chars4Counter()
    assert c.count("hello world") == len("hello world") // 4
    text = ASSISTANT.content + CALL.name + CALL.arguments + REASONING
    assert c.count_message(ASSISTANT) == len(text) // 4
    assert c.prompt_overhead([TOOL]) == len(tool_schemas_json([TOOL])) // 4
    assert c.count_message(IMAGE) == len(IMAGE.content) // 4  # no image allowance


def test_dbgpt_counts_message_content_only_with_cl100k() -> None:
    c = get_counter("dbgpt")
    cl100k = get_counter("tiktoken:cl100k_base")
    assert c.count_message(ASSISTANT) == cl100k.count(
        ASSISTANT.content
    )  # no role, envelope or reasoning
    assert c.count_message(CJK) == cl100k.count(CJK.content)
    assert c.prompt_overhead([TOOL]) == 0


def test_dbgpt_falls_back_to_len_over_4_without_a_tokenizer() -> None:
    c = DbgptCounter(None)
    assert c.count_message(CJK) == len(CJK.content) // 4


def test_agentscope_is_utf8_bytes_over_4_rounded_plus_2000_per_media_block() -> None:
    c = AgentScopeCounter()
    assert c.count_message(CJK) == int(len(CJK.content.encode("utf-8")) / 4 + 0.5)
    n_bytes = len((ASSISTANT.content + REASONING + CALL.arguments).encode("utf-8"))
    assert c.count_message(ASSISTANT) == int(n_bytes / 4 + 0.5)
    assert c.count_message(IMAGE) == int(len(IMAGE.content.encode("utf-8")) / 4 + 0.5) + 2000


def test_agentscope_adds_the_json_of_the_tools() -> None:
    payload = json.dumps(
        [
            {
                "type": "function",
                "function": {
                    "name": TOOL.name,
                    "description": TOOL.description,
                    "parameters": dict(TOOL.parameters),
                },
            }
        ]
    )
    assert AgentScopeCounter().prompt_overhead([TOOL]) == int(
        len(payload.encode("utf-8")) / 4 + 0.5
    )
    assert AgentScopeCounter().prompt_overhead([]) == 0


def test_hermes_is_len_plus_3_over_4_plus_10_per_message() -> None:
    c = HermesCounter()
    msg = Message("user", "x" * 41)
    assert c.count_message(msg) == (41 + 3) // 4 + 10
    assert c.count_message(Message("user", "")) == 10


def test_hermes_counts_the_whole_tool_call_envelope_and_the_replay_keys() -> None:
    c = HermesCounter()
    envelope = str(
        {
            "id": CALL.id,
            "type": "function",
            "function": {"name": CALL.name, "arguments": CALL.arguments},
        }
    )
    expected = (len(ASSISTANT.content) + 3) // 4 + 10 + len(envelope) // 4 + len(REASONING) // 4
    assert c.count_message(ASSISTANT) == expected


def test_hermes_charges_1600_per_image() -> None:
    c = HermesCounter()
    assert c.count_message(IMAGE) == (len(IMAGE.content) + 3) // 4 + 10 + 1600


def test_estimators_undercount_cjk_relative_to_an_exact_tokenizer() -> None:
    """Why they are worth measuring: chars/4 is far off for Chinese."""
    exact = get_counter("tiktoken:o200k_base").count(CJK.content)
    assert Chars4Counter().count(CJK.content) < exact / 2
