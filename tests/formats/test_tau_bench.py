"""tau-bench v1 results: one trace per episode, OpenAI messages, the rest in meta."""

from __future__ import annotations

import json
from pathlib import Path

from ctxbench.formats.importing import import_file


def test_each_episode_is_a_trace_with_its_reward_in_meta(shared_traces: Path) -> None:
    path = next(shared_traces.glob("tau-bench/*.json"))
    raw = json.loads(path.read_text())
    traces, report = import_file(path)
    assert [t.id for t in traces] == [f"task{e['task_id']}-trial{e['trial']}" for e in raw]
    assert [t.meta["reward"] for t in traces] == [e["reward"] for e in raw]
    assert [len(t.messages) for t in traces] == [len(e["traj"]) for e in raw]
    assert report.calls_with_usage == 0  # v1 records no usage


def test_reused_call_ids_in_the_source_are_repaired_and_remembered(shared_traces: Path) -> None:
    traces, _ = import_file(next(shared_traces.glob("tau-bench/*.json")))
    repaired = [
        c for t in traces for m in t.messages for c in m.tool_calls if "recorded_id" in c.meta
    ]
    assert repaired and all(c.id.startswith(c.meta["recorded_id"] + "~") for c in repaired)
