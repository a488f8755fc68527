"""OpenHands event streams: parallel calls merge, observations render, the task is kept."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxbench.formats.importing import import_file
from ctxbench.formats.location import At
from ctxbench.formats.openhands import BASH_ERROR, observation_text
from ctxbench.trace import Trace


@pytest.fixture(scope="module")
def openhands(shared_traces: Path) -> tuple[list[dict[str, Any]], list[Trace]]:
    path = next(shared_traces.glob("openhands-benchmarks/*.jsonl"))
    traces, _ = import_file(path)
    return [json.loads(line) for line in path.read_text().splitlines()], traces


def test_calls_sharing_an_llm_response_become_one_assistant_message(
    openhands: tuple[list[dict[str, Any]], list[Trace]],
) -> None:
    records, traces = openhands
    merged = 0
    for record, trace in zip(records, traces):
        actions = [e for e in record["history"] if e["kind"] == "ActionEvent"]
        per_response = Counter(e["llm_response_id"] for e in actions)
        calls = [m for m in trace.messages if m.tool_calls]
        assert len(calls) == len(per_response)
        assert [len(m.tool_calls) for m in calls] == list(per_response.values())
        assert [c.id for m in calls for c in m.tool_calls] == [e["tool_call_id"] for e in actions]
        merged += sum(1 for n in per_response.values() if n > 1)
    assert merged > 0  # the file does have parallel calls


def test_results_follow_their_merged_call(
    openhands: tuple[list[dict[str, Any]], list[Trace]],
) -> None:
    _, traces = openhands
    for trace in traces:
        for i, msg in enumerate(trace.messages):
            if msg.role == "tool":
                owner = next(m for m in reversed(trace.messages[:i]) if m.role != "tool")
                assert msg.tool_call_id in {c.id for c in owner.tool_calls}


def test_the_task_is_the_first_user_message(
    openhands: tuple[list[dict[str, Any]], list[Trace]],
) -> None:
    records, traces = openhands
    for record, trace in zip(records, traces):
        first_user = next(m for m in trace.messages if m.role == "user")
        assert first_user is trace.messages[0]
        if first_user.meta.get("from_record") == "instruction":
            assert first_user.content == record["instruction"]
        else:
            assert record["history"][0]["kind"] == "MessageEvent"


def test_terminal_observation_renders_like_the_sdk() -> None:
    obs = {
        "kind": "ExecuteBashObservation",
        "output": "hi",
        "error": True,
        "metadata": {
            "prefix": "",
            "suffix": "\n[done]",
            "working_dir": "/w",
            "py_interpreter_path": "",
            "exit_code": 1,
        },
    }
    assert observation_text(obs, At.start("f")) == (
        f"{BASH_ERROR}\nhi\n[done]\n[Current working directory: /w]\n[Command finished with exit code 1]"
    )


def test_other_observations_use_their_text_or_json() -> None:
    at = At.start("f")
    assert observation_text({"kind": "FinishObservation", "message": "bye"}, at) == "bye"
    assert observation_text({"kind": "X", "content": [{"type": "text", "text": "t"}]}, at) == "t"
    assert json.loads(observation_text({"kind": "X", "n": 1}, at)) == {"n": 1}


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "source": "agent", **fields}


def _action(n: int) -> dict[str, Any]:
    call = {"id": f"c{n}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    return _event("ActionEvent", tool_call=call, tool_name="bash", llm_response_id=f"r{n}")


def _observation(n: int) -> dict[str, Any]:
    return _event(
        "ObservationEvent",
        tool_call_id=f"c{n}",
        tool_name="bash",
        observation={"kind": "TextObservation", "content": [{"type": "text", "text": "ok"}]},
    )


def test_a_condensation_with_its_summary_is_a_recorded_compaction(tmp_path: Path) -> None:
    record = {
        "instance_id": "i1",
        "instruction": "fix the bug",
        "history": [
            _action(1),
            _observation(1),
            _event(
                "Condensation",
                forgotten_event_ids=["e1", "e2"],
                summary="USER_CONTEXT: fix the bug in parser.py",
                summary_offset=1,
            ),
            _event("Condensation", forgotten_event_ids=["e3"]),  # no summary: not one
            _action(2),
            _observation(2),
        ],
    }
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (trace,), _ = import_file(path, "openhands")
    (compaction,) = trace.recorded_compactions
    assert compaction.summary == "USER_CONTEXT: fix the bug in parser.py"
    assert compaction.call == 1  # before the second model call
    assert trace.messages[compaction.message].tool_calls[0].id == "c2"  # after the instruction
    assert compaction.meta["forgotten_events"] == 2 and compaction.meta["summary_offset"] == 1
    assert len(trace.meta["other_events"]) == 2  # still kept where they were
