"""Codex rollouts: one assistant message per response, token_count usage, reasoning kept
opaque, tool outputs paired, compacted records as recorded compactions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxbench.formats.importing import import_file
from ctxbench.trace import Trace
from ctxbench.validation import validate
from tests import GOLDEN

EXCERPT = GOLDEN / "sessions" / "codex_rollout.jsonl"
OUTPUTS = ("reasoning", "function_call", "custom_tool_call", "web_search_call")


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def one(path: Path) -> Trace:
    traces, report = import_file(path)
    assert report.format == "codex" and report.detected and len(traces) == 1
    return traces[0]


def responses(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last_token_usage of every token_count that closes a response."""
    out, pending = [], False
    for r in items:
        p = r["payload"]
        if r["type"] == "response_item":
            assistant = p["type"] == "message" and p.get("role") == "assistant"
            pending = pending or p["type"] in OUTPUTS or assistant
        elif r["type"] == "event_msg" and p["type"] == "token_count" and p.get("info"):
            if pending:
                out.append(p["info"]["last_token_usage"])
            pending = False
    return out


def test_each_response_is_one_call_with_its_token_count_usage() -> None:
    items, trace = records(EXCERPT), one(EXCERPT)
    usages = responses(items)
    calls = [trace.messages[i] for i in trace.call_indices]
    assert len(calls) == len(usages) > 3
    for msg, usage in zip(calls, usages):
        assert msg.usage is not None
        assert msg.usage.prompt_tokens == usage["input_tokens"]
        assert msg.usage.cached_tokens == usage["cached_input_tokens"]
        assert msg.usage.completion_tokens == usage["output_tokens"]
        assert msg.usage.meta["reasoning_output_tokens"] == usage["reasoning_output_tokens"]
    assert validate(trace) == []


def test_reasoning_items_are_kept_whole_as_an_opaque_replay_field() -> None:
    items, trace = records(EXCERPT), one(EXCERPT)
    recorded = [r["payload"] for r in items if r["payload"].get("type") == "reasoning"]
    kept = [item for m in trace.messages for item in m.replay.get("codex_reasoning_items", [])]
    assert kept == recorded and all(item["encrypted_content"] for item in kept)


def test_instructions_and_developer_messages_are_system_messages() -> None:
    items, trace = records(EXCERPT), one(EXCERPT)
    meta = items[0]["payload"]
    assert trace.messages[0].role == "system"
    assert trace.messages[0].content == meta["base_instructions"]["text"]
    developer = [m for m in trace.messages if m.meta.get("role") == "developer"]
    assert developer and all(m.role == "system" for m in developer)
    assert trace.id == meta["id"] and trace.meta["cli_version"] == meta["cli_version"]
    assert trace.meta["model_context_window"] == 258_400


def test_a_compacted_record_is_a_recorded_compaction(tmp_path: Path) -> None:
    items = records(EXCERPT)
    last_total = responses(items)[-1]["total_tokens"]
    compacted = {"type": "compacted", "payload": {"message": "SUMMARY", "replacement_history": []}}
    after = {
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "go on"}],
        },
    }
    path = tmp_path / "rollout-compacted.jsonl"
    rows = [*items, compacted, after]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    trace = one(path)
    (rec,) = trace.recorded_compactions
    assert (rec.call, rec.pre_tokens, rec.summary) == (len(responses(items)), last_total, "SUMMARY")
    assert rec.source == f"{path.name}:{len(items) + 1}"
    assert trace.messages[rec.message].content == "go on"  # the history before it is kept


def test_the_shared_rollout_imports_every_response_and_tool_call(shared_traces: Path) -> None:
    path = next((shared_traces / "codemie-ai+codemie-code").rglob("rollout-*.jsonl"))
    items, trace = records(path), one(path)
    assert len(trace.call_indices) == len(responses(items)) == 66
    calls = [c for m in trace.messages for c in m.tool_calls]
    custom = [c for c in calls if c.meta.get("kind") == "custom_tool_call"]
    assert (len(calls), len(custom)) == (102, 3)
    patches = [
        r["payload"]["input"] for r in items if r["payload"].get("type") == "custom_tool_call"
    ]
    assert [c.arguments for c in custom] == patches  # apply_patch text, as sent
    assert max(m.usage.prompt_tokens or 0 for m in trace.messages if m.usage) == 131_573
    assert validate(trace) == []
