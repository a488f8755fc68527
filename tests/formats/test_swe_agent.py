"""SWE-agent .traj: text-action and function-calling histories."""

from __future__ import annotations

import json
from pathlib import Path

from ctxbench.formats.importing import import_file


def test_text_action_history_keeps_observations_as_user_messages(shared_traces: Path) -> None:
    path = next(shared_traces.rglob("pydicom__pydicom-1458.traj"))
    raw = json.loads(path.read_text())
    (trace,), _ = import_file(path)
    assert [(m.role, m.content) for m in trace.messages] == [
        (h["role"], h["content"]) for h in raw["history"]
    ]
    actions = [m for m in trace.messages if m.role == "assistant"]
    assert all(not m.tool_calls and "action" in m.meta and "thought" in m.meta for m in actions)
    assert trace.meta["info"]["model_stats"] == raw["info"]["model_stats"]


def test_function_calling_history_pairs_tool_call_ids(shared_traces: Path) -> None:
    path = next(shared_traces.rglob("*function_calling__install-1/*.traj"))
    raw = json.loads(path.read_text())
    (trace,), _ = import_file(path)
    results = [m for m in trace.messages if m.role == "tool"]
    recorded = [h for h in raw["history"] if h["role"] == "tool"]
    assert [m.tool_call_id.split("~")[0] for m in results if m.tool_call_id] == [
        h["tool_call_ids"][0] for h in recorded
    ]
    assert trace.id == path.name.removesuffix(".traj")


def test_a_result_answering_several_ids_keeps_them_all(tmp_path: Path) -> None:
    data = {
        "environment": "e",
        "trajectory": [],
        "info": {},
        "history": [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "content": "r", "tool_call_ids": ["a", "b"]},
        ],
    }
    path = tmp_path / "x.traj"
    path.write_text(json.dumps(data))
    (trace,), _ = import_file(path)
    assert trace.messages[1].tool_call_id == "a" and trace.messages[1].meta["tool_call_ids"] == [
        "a",
        "b",
    ]
