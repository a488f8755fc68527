"""``shipped:dbgpt@0.8.2`` on the released wheel: the RELEASES.md behaviours (the Layer-3
``model_name`` defect trips the breaker and all compaction stops; Layer 4 is unreachable so an
overflow fails the call; compaction is recomputed per call on the fresh history) and a run on
every embedded scenario and a recorded trace of every shared source."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.shipped.releases import DBGPT
from ctxbench.trace import Message, Trace
from tests.factories import tool_round
from tests.shipped_cases import (
    needs,
    replay_events,
    scenario_trace,
)

pytestmark = needs(DBGPT)
NAME = "shipped:dbgpt@0.8.2"


@pytest.fixture(scope="module")
def breaker_run() -> list[dict[str, Any]]:
    return replay_events(scenario_trace("coding_agent", 60, seed=1), NAME, 16_384, reserved=4096)


def calls_info(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "shipped.call"]


def test_the_model_name_defect_trips_the_breaker_and_all_compaction_stops(
    breaker_run: list[dict[str, Any]],
) -> None:
    failures = [
        (e["call"], e["info"]["compact_failures"])
        for e in calls_info(breaker_run)
        if e["info"]["layer3_failures"] and "retry" not in e
    ]
    tripped_at = min(e["call"] for e in calls_info(breaker_run) if e["info"]["breaker_tripped"])
    failure_calls = sorted({c for c, _ in failures})
    assert len(failure_calls) == 3 and failure_calls[-1] == tripped_at
    texts = {t for e in calls_info(breaker_run) for t in e["info"]["layer3_failures"]}
    assert texts == {"AttributeError: 'ContextManager' object has no attribute 'model_name'"}
    # no summary was ever asked for, and the history is not compacted once the breaker is
    # tripped (a large tool result is still persisted when it arrives: that is not gated)
    assert not [e for e in breaker_run if e["type"] == "summary"]
    compactions = [
        e["call"] for e in breaker_run if e["type"] == "compaction" and e["layer"] != "persist"
    ]
    assert compactions and max(compactions) <= tripped_at
    over = [e for e in breaker_run if e["type"] == "provider.call" and e["call"] > tripped_at]
    assert over and all(not e["ok"] for e in over[-10:])


def test_layer4_is_unreachable_so_an_overflow_fails_the_call(
    breaker_run: list[dict[str, Any]],
) -> None:
    rejected = {e["call"] for e in breaker_run if e["type"] == "provider.call" and not e["ok"]}
    failed = {e["call"] for e in breaker_run if e["type"] == "call.failed"}
    assert rejected and rejected == failed
    assert not [e for e in breaker_run if e["type"] == "compaction" and e["layer"] == "layer4"]
    overflow_replies = [e for e in calls_info(breaker_run) if e["exception"]]
    assert {e["call"] for e in overflow_replies} == failed
    assert all(e["exception"].startswith("ValueError: ") for e in overflow_replies)
    assert all(e["info"]["thinking_attempts"] == 3 for e in overflow_replies)


def test_compaction_is_recomputed_on_the_fresh_history_every_call(
    breaker_run: list[dict[str, Any]],
) -> None:
    layer1 = sorted({e["call"] for e in breaker_run if e["type"] == "compaction"
                     and e["layer"] == "layer1"})  # fmt: skip
    # Layer 1 runs again at consecutive calls: last call's truncation did not persist
    assert any(b == a + 1 for a, b in itertools.pairwise(layer1))
    per_call = [e for e in breaker_run if e["type"] == "compaction" and e["layer"] == "layer1"]
    assert all(e["changed"] >= 1 for e in per_call)


def test_native_tool_calls_are_given_as_react_text(breaker_run: list[dict[str, Any]]) -> None:
    start = next(e for e in breaker_run if e["type"] == "shipped")
    assert start["release"] == "dbgpt==0.8.2" and start["framework_version"] == "0.8.2"
    assert len(start["env_hash"]) == 16
    assert any("ReAct" in note for note in start["notes"])
    flags = [e["info"]["react_text"] for e in calls_info(breaker_run) if "react_text" in e["info"]]
    assert flags[0] is False and flags[-1] is True  # from the first tool result on
    # and the row says so, next to the release and its environment
    trace = scenario_trace("coding_agent", 8, seed=1)
    row = run_spec(resolve_spec(RunSpec(trace.id, trace.content_hash, NAME, {}, 16_384)), trace)
    assert (row.result.release, row.result.env_hash) == ("dbgpt==0.8.2", start["env_hash"])
    assert "ReAct text" in row.result.driver_notes


def test_a_text_react_trace_is_not_converted() -> None:
    events = replay_events(scenario_trace("sql_agent", 12), NAME, 32_768)
    assert not any(e["info"].get("react_text") for e in calls_info(events))


def _memory_trace() -> Trace:
    """Three native rounds; the second result is over the 100,000-char persistence threshold."""
    big = "\n".join(f"row {i}: {'v' * 40}" for i in range(3_000))
    msgs = [Message("system", "You are a careful agent."), Message("user", "Fix the bug.")]
    msgs += tool_round(0, output="small")
    msgs += [*tool_round(1)[:1], Message("tool", big, tool_call_id="c1_0", name="bash")]
    msgs += [*tool_round(2), Message("assistant", "Done.")]
    return Trace("mem", tuple(msgs))


@pytest.mark.parametrize("strategy", [NAME, "dbgpt"])
def test_the_prompt_is_the_agent_memory_snapshots_progress_and_persisted_results(
    strategy: str,
) -> None:
    """``write_memories`` / ``read_memories`` and the tool action's persistence (role.py,
    react_agent.py, tool_action.py of the wheel), the same in the release and the reproduction."""
    trace = _memory_trace()
    out = run_spec(
        resolve_spec(RunSpec(trace.id, trace.content_hash, strategy, {}, 200_000, reserved=1024)),
        trace,
    )
    system = out.final_view[0].content
    assert system.startswith("You are a careful agent.\n## Task Progress (do NOT repeat")
    assert [line for line in system.splitlines() if line.startswith("\u2705")] == [
        f"\u2705 Step {n}: Action=bash | ref: step_{n:03d}_bash.json" for n in (1, 2, 3)
    ]  # the prompt of the last call: three steps done
    tools = [m for m in out.final_view if m.role == "tool"]
    assert tools[0].content == "small 0.0\n[Full detail available at: mem/step_001_bash.json]"
    assert tools[1].content.startswith("<persisted-output>\nThis tool result was too large")
    assert "persisted_results/mem/c1_0.txt" in tools[1].content
    persisted = [e for e in out.events if e.type == "compaction" and e["layer"] == "persist"]
    assert [e.call for e in persisted] == [2]
