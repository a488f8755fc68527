"""``shipped:deepagents@0.7.32`` on the released wheel: deep agents' own summarization middleware
as ``create_deep_agent`` installs it. The checks port deepagents' tests of it
(``libs/deepagents/tests/unit_tests/middleware/test_summarization_middleware.py``): the summary
message names the offloaded history file, the state's messages are never rewritten (each call
rebuilds the effective messages from the event's cutoff), the profile's fraction defaults, and
the overflow fallback that summarizes and retries once."""

from __future__ import annotations

import json

from ctxbench.shipped.deepagents import ShippedDeepAgents
from ctxbench.shipped.releases import DEEPAGENTS
from ctxbench.trace import Message, ToolCall, Trace
from tests.factories import tool_trace
from tests.shipped_cases import needs, prompts, replay_events

pytestmark = needs(DEEPAGENTS)
NAME = "shipped:deepagents@0.7.32"
HEADER = "You are in the middle of a conversation that has been summarized."
HISTORY = "/conversation_history/session_ctxbench.md"


def test_the_summary_names_the_offloaded_history_file() -> None:
    trace = tool_trace(45, output="x" * 1_600)
    events = replay_events(trace, NAME, 16_384)
    assert [e["layer"] for e in events if e["type"] == "compaction"][:1] == ["summarization"]
    sent = prompts(ShippedDeepAgents, trace, 16_384)
    after = next(p for p in sent if any(m.content.startswith(HEADER) for m in p))
    summary = next(m for m in after if m.content.startswith(HEADER))
    assert summary.role == "user" and HISTORY in summary.content and "<summary>" in summary.content
    # the kept part never starts on a tool result (LangChain's safe cutoff)
    assert after[0].role == "system" and after[1] is summary and after[2].role != "tool"


def test_with_a_profile_it_summarizes_at_85_percent_and_keeps_10() -> None:
    trace = tool_trace(45, output="x" * 1_600)
    events = replay_events(trace, NAME, 16_384)
    calls = {e["call"]: e["info"] for e in events if e["type"] == "shipped.call" and e["info"]}
    first = next(e for e in events if e["type"] == "compaction")
    assert calls[first["call"] - 1]["deepagents_tokens"] < 0.85 * 16_384
    after = next(
        p for p in prompts(ShippedDeepAgents, trace, 16_384) if p[1].content.startswith(HEADER)
    )
    kept = sum(len(m.content) + len(str(m.tool_calls)) for m in after[2:]) // 4
    # the newest 10% of the window by LangChain's count, moved to a safe cutoff: far under 0.85
    assert kept < 0.25 * 16_384 and len(after) < first["messages_before"] // 2


def test_without_a_profile_170k_tokens_never_trigger_in_16k_so_the_overflow_summarizes() -> None:
    events = replay_events(tool_trace(30, output="w " * 1_200), NAME, 16_384, model_profile=False)
    compactions = [e for e in events if e["type"] == "compaction"]
    assert compactions
    overflowed = {e["call"] for e in events if e["type"] == "provider.call" and not e["ok"]}
    assert {c["call"] for c in compactions} <= overflowed  # each after a rejection
    retried = [e for e in events if e["type"] == "provider.call" and e["attempt"] == 1]
    assert retried and all(e["ok"] for e in retried)


def test_older_write_file_arguments_are_truncated_before_any_summary() -> None:
    # test_summarization_middleware.py (argument truncation): without a profile the arguments
    # of write_file/edit_file calls older than the last 20 messages are cut to 20 characters and
    # "...(argument truncated)" once there are 20 messages; other tools' arguments stay
    msgs = [Message("system", "You write files."), Message("user", "Write the modules.")]
    for i in range(14):
        name = "write_file" if i % 2 == 0 else "bash"
        args = json.dumps(
            {"file_path": f"/src/m{i}.py", "content": f"# module {i}\n" + "x" * 3_000}
        )
        call = ToolCall(f"c{i}", name, args)
        msgs += [Message("assistant", "", tool_calls=(call,)),
                 Message("tool", f"ok {i}", tool_call_id=f"c{i}", name=name)]  # fmt: skip
    trace = Trace("writes", tuple(msgs))
    events = replay_events(trace, NAME, 131_072, model_profile=False)
    assert {e["layer"] for e in events if e["type"] == "compaction"} == {"truncate_args"}
    assert not [e for e in events if e["type"] == "summary"]
    last = prompts(ShippedDeepAgents, trace, 131_072, model_profile=False)[-1]
    calls = [c for m in last for c in m.tool_calls]
    old = [json.loads(c.arguments) for c in calls[:4]]
    assert old[0]["content"] == "# module 0\n" + "x" * 9 + "...(argument truncated)"
    assert len(old[1]["content"]) == 3_011  # bash: not a file tool
    assert json.loads(calls[-1].arguments)["content"].endswith("x" * 3_000)  # recent: kept
