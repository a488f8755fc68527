"""The 0.19.0 loop's measures, checked against the released ``agent/model_metadata.py`` and
``_estimate_msg_budget_tokens`` run in the hermes-agent 0.19.0 environment on the dicts
:func:`stored_message` builds; and the API copy's shape as ``conversation_loop.py`` builds it."""

from __future__ import annotations

import json
import subprocess

import pytest

from ctxbench.shipped import environment
from ctxbench.shipped.releases import HERMES
from ctxbench.strategies.hermes.measure import (
    BudgetCounter,
    api_message,
    rough_messages_tokens,
    rough_request_tokens,
    rough_tools_tokens,
    stored_message,
)
from ctxbench.strategies.hermes.summary import SUMMARY_MARK
from ctxbench.trace import Message, ToolCall, ToolSpec
from tests.shipped_cases import needs

SYSTEM = Message("system", "You are a careful agent.\n")
CALL = ToolCall("call_abc123", "read_file", '{"path": "src/app.py", "offset": 10}')
MESSAGES = (
    SYSTEM,
    Message("user", "  Fix the failing test in src/app.py  "),
    Message("assistant", "", tool_calls=(CALL,), replay={"reasoning_content": "think first"}),
    Message("tool", "def main():\n    return 1\n" * 40, tool_call_id=CALL.id, name="read_file"),
    Message(
        "user", "[CONTEXT COMPACTION — REFERENCE ONLY] earlier work", meta={SUMMARY_MARK: True}
    ),
    Message("assistant", "Done: the test passes now."),
)
TOOLS = (ToolSpec("read_file", "Read a file", {"type": "object", "properties": {}}),)

RELEASED = """
import json, sys
from agent.context_compressor import _estimate_msg_budget_tokens
from agent.model_metadata import (
    _estimate_tools_tokens_rough, estimate_messages_tokens_rough, estimate_request_tokens_rough)
data = json.load(sys.stdin)
msgs, tools = data["messages"], data["tools"]
print(json.dumps({
    "messages": estimate_messages_tokens_rough(msgs),
    "request": estimate_request_tokens_rough(msgs, system_prompt=data["system"], tools=tools),
    "tools": _estimate_tools_tokens_rough(tools),
    "budget": [_estimate_msg_budget_tokens(m) for m in msgs],
}))
"""


@needs(HERMES)
def test_the_estimates_equal_the_releases_on_the_stored_messages() -> None:
    env = environment.installed(HERMES)
    assert env is not None
    conversation = [m for m in MESSAGES if m.role != "system"]
    payload = {
        "messages": [stored_message(m) for m in conversation],
        "system": SYSTEM.content.strip(),
        "tools": [
            {"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": dict(t.parameters)}}
            for t in TOOLS
        ],
    }  # fmt: skip
    out = subprocess.run(
        [str(env.python), "-c", RELEASED],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env.process_env(),
        timeout=120,
        check=True,
    )
    released = json.loads(out.stdout.strip().splitlines()[-1])
    assert rough_messages_tokens(MESSAGES) == released["messages"]
    assert rough_request_tokens(MESSAGES, TOOLS) == released["request"]
    assert rough_tools_tokens(TOOLS) == released["tools"]
    assert [BudgetCounter().message_tokens(m) for m in conversation] == released["budget"]


def test_the_stored_shape_is_the_agents() -> None:
    assistant = stored_message(MESSAGES[2])
    assert list(assistant) == [
        "role", "content", "reasoning", "finish_reason", "reasoning_content", "tool_calls",
    ]  # fmt: skip
    assert assistant["finish_reason"] == "tool_calls" and assistant["reasoning"] is None
    assert assistant["tool_calls"][0]["response_item_id"] == "fc_abc123"
    assert list(stored_message(MESSAGES[3])) == [
        "role", "name", "tool_name", "content", "tool_call_id",
    ]  # fmt: skip
    assert stored_message(MESSAGES[4])[SUMMARY_MARK] is True
    assert stored_message(MESSAGES[5])["finish_reason"] == "stop"


def test_the_api_copy_drops_what_the_loop_drops() -> None:
    copy = api_message(MESSAGES[2])
    assert "reasoning" not in copy and "finish_reason" not in copy
    assert set(copy["tool_calls"][0]) == {"id", "type", "function"}
    assert copy["tool_calls"][0]["function"]["arguments"] == '{"offset":10,"path":"src/app.py"}'
    assert api_message(MESSAGES[1])["content"] == "Fix the failing test in src/app.py"
    assert len(str(api_message(MESSAGES[2]))) < len(str(stored_message(MESSAGES[2])))


@pytest.mark.parametrize("bad", [["{}", "{}"], [1], "{}"])
def test_prompt_items_rewrite_tool_call_arguments_one_per_call(bad: object) -> None:
    from ctxbench.shipped.protocol import ProtocolError, decode_prompt

    history = [MESSAGES[2]]
    (rewritten,) = decode_prompt([{"ref": 0, "arguments": ['{"path": "..."}']}], history)
    assert rewritten.tool_calls[0].arguments == '{"path": "..."}'
    assert rewritten.tool_calls[0].id == CALL.id and rewritten.replay == MESSAGES[2].replay
    assert decode_prompt([{"ref": 0, "arguments": [CALL.arguments]}], history)[0] is history[0]
    with pytest.raises(ProtocolError):
        decode_prompt([{"ref": 0, "arguments": bad}], history)
