"""tau2-bench: each simulation is the agent's view, with its system prompt and recorded usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxbench.formats.importing import import_file
from ctxbench.formats.tau2_bench import AGENT_INSTRUCTION
from ctxbench.trace import Trace
from tests import GOLDEN


@pytest.fixture(scope="module")
def tau2(shared_traces: Path) -> tuple[dict[str, Any], list[Trace]]:
    path = next(shared_traces.glob("tau2-bench/*.json"))
    traces, _ = import_file(path)
    return json.loads(path.read_text()), traces


def test_one_trace_per_simulation_keyed_by_its_id(tau2: tuple[dict[str, Any], list[Trace]]) -> None:
    raw, traces = tau2
    assert [t.id for t in traces] == [s["id"] for s in raw["simulations"]]
    assert all(t.meta["model"] == raw["info"]["agent_info"]["llm"] for t in traces)


def test_system_message_is_the_agent_prompt_built_from_the_policy(
    tau2: tuple[dict[str, Any], list[Trace]],
) -> None:
    raw, traces = tau2
    policy = raw["info"]["environment_info"]["policy"]
    for trace in traces:
        system = trace.messages[0]
        assert system.role == "system"
        assert system.content.startswith(
            f"<instructions>\n{AGENT_INSTRUCTION}\n</instructions>\n<policy>\n"
        )
        assert system.content.endswith(f"{policy}\n</policy>")
        assert "policy" not in trace.meta["info"]["environment_info"]  # mapped, not duplicated


def test_user_side_tool_activity_is_folded_into_meta_not_dropped(
    tau2: tuple[dict[str, Any], list[Trace]],
) -> None:
    raw, traces = tau2
    for sim, trace in zip(raw["simulations"], traces):
        hidden = [
            m
            for m in sim["messages"]
            if (m["role"] == "user" and m.get("tool_calls"))
            or (m["role"] == "tool" and m.get("requestor") == "user")
        ]
        kept = [a for m in trace.messages for a in m.meta.get("user_tool_activity", [])]
        kept += trace.meta.get("trailing_user_tool_activity", [])
        assert kept == hidden
        agent_call_ids = {c.id for m in trace.messages for c in m.tool_calls}
        assert all(m.tool_call_id in agent_call_ids for m in trace.messages if m.role == "tool")
        assert all(not m.tool_calls for m in trace.messages if m.role == "user")


def test_agent_messages_keep_usage_and_arguments_as_tau2_sends_them(
    tau2: tuple[dict[str, Any], list[Trace]],
) -> None:
    raw, traces = tau2
    for sim, trace in zip(raw["simulations"], traces):
        recorded = [m for m in sim["messages"] if m["role"] == "assistant"]
        imported = [m for m in trace.messages if m.role == "assistant"]
        assert len(recorded) == len(imported)
        for r, m in zip(recorded, imported):
            if r["usage"] is None:
                assert m.usage is None
            else:
                assert m.usage is not None
                assert (m.usage.prompt_tokens, m.usage.completion_tokens) == (
                    r["usage"]["prompt_tokens"],
                    r["usage"]["completion_tokens"],
                )
            assert [c.arguments for c in m.tool_calls] == [
                json.dumps(c["arguments"]) for c in r["tool_calls"] or []
            ]
        # the user simulator's usage is not the agent's: kept in meta, not as Message.usage
        assert all(m.usage is None for m in trace.messages if m.role == "user")


def test_an_unknown_agent_keeps_the_policy_and_says_the_prompt_is_approximate(
    tmp_path: Path, tau2: tuple[dict[str, Any], list[Trace]]
) -> None:
    raw, _ = tau2
    data = dict(raw, simulations=raw["simulations"][:1])
    data["info"] = dict(raw["info"], agent_info={"implementation": "my_agent", "llm": "x"})
    path = tmp_path / "sim.json"
    path.write_text(json.dumps(data))
    traces, _ = import_file(path)
    assert traces[0].messages[0].content == raw["info"]["environment_info"]["policy"]
    assert "my_agent" in traces[0].meta["system_prompt_note"]


CLAUDE_THINKING = GOLDEN / "sessions" / "tau2_claude_thinking.json"


def test_anthropic_thinking_blocks_in_raw_data_are_replayed() -> None:
    data = json.loads(CLAUDE_THINKING.read_text("utf-8"))
    (trace,), report = import_file(CLAUDE_THINKING)
    agent = [m for m in data["simulations"][0]["messages"] if m["role"] == "assistant"]
    calls = [trace.messages[i] for i in trace.call_indices]
    assert len(calls) == len(agent)
    for msg, raw in zip(calls, agent):
        blocks = (raw.get("raw_data") or {}).get("thinking_blocks") or []
        assert msg.replay.get("thinking_blocks", []) == blocks
        assert "thinking_blocks" not in (msg.meta.get("raw_data") or {})  # kept once
    assert (
        report.thinking_blocks == sum(len(m.replay.get("thinking_blocks", [])) for m in calls) > 0
    )


def test_the_shared_claude_run_keeps_a_thinking_block_on_every_call(shared_traces: Path) -> None:
    path = next((shared_traces / "sierra-research+tau2-bench").rglob("*.json"))
    _, report = import_file(path)
    assert (report.traces, report.calls_with_usage, report.thinking_blocks) == (50, 467, 467)
