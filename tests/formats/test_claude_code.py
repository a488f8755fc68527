"""Claude Code sessions: one call per message.id, thinking kept, results after the whole call,
the compact boundary as a recorded compaction, non-message entries counted."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxbench.errors import TraceFormatError
from ctxbench.formats.importing import import_file
from ctxbench.trace import Trace
from ctxbench.validation import validate
from tests import GOLDEN

SESSIONS = GOLDEN / "sessions"
EXCERPT = SESSIONS / "claude_code_session.jsonl"
TRANSCRIPTS = "marot+spotter/test/fixtures/transcripts"
#: SOURCES.md: calls, thinking blocks with text, (call, trigger, preTokens) per session
SHARED = {
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46": (157, 11, (126, "auto", 167_117)),
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04": (217, 6, (138, "manual", 142_431)),
    "258c7280-ae70-4798-800f-63464d01a85d": (152, 19, (102, "auto", 167_094)),
}


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def one(path: Path) -> Trace:
    traces, report = import_file(path)
    assert report.format == "claude_code" and report.detected and len(traces) == 1
    return traces[0]


def calls_of(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """message.id -> its entries, in file order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for e in items:
        if e.get("type") == "assistant":
            out.setdefault(e["message"]["id"], []).append(e)
    return out


def test_one_assistant_message_per_message_id_with_its_blocks() -> None:
    items, trace = entries(EXCERPT), one(EXCERPT)
    calls = calls_of(items)
    assistants = [trace.messages[i] for i in trace.call_indices]
    assert [m.meta["message_id"] for m in assistants] == list(calls)
    for msg, group in zip(assistants, calls.values()):
        blocks = [b for e in group for b in e["message"]["content"]]
        assert [c.id for c in msg.tool_calls] == [
            b["id"] for b in blocks if b["type"] == "tool_use"
        ]
        assert msg.replay.get("thinking_blocks", []) == [
            b for b in blocks if b["type"] == "thinking"
        ]
        texts = [b["text"] for b in blocks if b["type"] == "text" and b["text"]]
        assert msg.content == "\n".join(texts)
    assert any(len(g) > 2 for g in calls.values())  # the excerpt has calls of several entries


def test_usage_is_the_last_entry_of_the_call_with_the_cache_split_kept() -> None:
    items, trace = entries(EXCERPT), one(EXCERPT)
    for msg, group in zip(
        (trace.messages[i] for i in trace.call_indices), calls_of(items).values()
    ):
        raw = group[-1]["message"]["usage"]
        assert msg.usage is not None
        prompt = raw["input_tokens"] + raw["cache_read_input_tokens"]
        assert msg.usage.prompt_tokens == prompt + raw["cache_creation_input_tokens"]
        assert msg.usage.cached_tokens == raw["cache_read_input_tokens"]
        assert msg.usage.completion_tokens == raw["output_tokens"]
        assert msg.usage.meta["cache_creation_input_tokens"] == raw["cache_creation_input_tokens"]


def test_results_written_between_the_blocks_of_a_call_follow_the_whole_call() -> None:
    items, trace = entries(EXCERPT), one(EXCERPT)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, e in enumerate(items):
        if e.get("type") == "assistant":
            first.setdefault(e["message"]["id"], i)
            last[e["message"]["id"]] = i
    interleaved = [
        e for mid in first for e in items[first[mid] : last[mid]] if e.get("type") == "user"
    ]
    assert interleaved  # the file does interleave results with the blocks of their call
    assert validate(trace) == []  # and every result still directly follows its call


def test_the_boundary_and_its_summary_are_a_recorded_compaction_not_messages() -> None:
    items, trace = entries(EXCERPT), one(EXCERPT)
    line = next(i for i, e in enumerate(items) if e.get("subtype") == "compact_boundary")
    summary = next(e for e in items if e.get("isCompactSummary"))["message"]["content"]
    (rec,) = trace.recorded_compactions
    assert rec.call == len(calls_of(items[:line]))
    assert (rec.trigger, rec.pre_tokens) == (
        items[line]["compactMetadata"]["trigger"],
        items[line]["compactMetadata"]["preTokens"],
    )
    assert rec.summary == summary and rec.source == f"{EXCERPT.name}:{line + 1}"
    assert all(summary not in m.content for m in trace.messages)
    # the uncompacted history is kept: messages before the boundary, then the ones after
    assert len([i for i in trace.call_indices if i < rec.message]) == rec.call
    assert trace.messages[rec.message].role != "tool"


def test_entries_that_are_not_model_input_are_counted_by_type() -> None:
    items = entries(EXCERPT)
    traces, report = import_file(EXCERPT)
    expected: Counter[str] = Counter()
    for e in items:
        if e["type"] == "system" and e.get("subtype") != "compact_boundary":
            expected[f"system.{e['subtype']}"] += 1
        elif e["type"] not in ("user", "assistant", "system"):
            expected[e["type"]] += 1
    assert dict(report.unmapped_entries) == dict(expected) and expected
    assert report.thinking_blocks == sum(
        1
        for e in items
        if e["type"] == "assistant"
        for b in e["message"]["content"]
        if b["type"] == "thinking"
    )
    assert report.recorded_compactions == 1
    assert report.tool_calls == sum(len(m.tool_calls) for m in traces[0].messages)


def test_a_message_id_written_again_after_another_call_names_its_line(tmp_path: Path) -> None:
    lines = EXCERPT.read_text("utf-8").splitlines()
    items = [json.loads(line) for line in lines]
    first = next(i for i, e in enumerate(items) if e["type"] == "assistant")
    later = max(i for i, e in enumerate(items) if e["type"] == "assistant")
    spliced = tmp_path / "spliced.jsonl"
    spliced.write_text("\n".join([*lines[: later + 1], lines[first], *lines[later + 1 :]]) + "\n")
    with pytest.raises(TraceFormatError) as err:
        import_file(spliced)
    assert err.value.line == later + 2 and err.value.key == "$.message.id"
    assert "appears again" in err.value.message and err.value.hint


def test_a_summary_without_its_boundary_is_a_clear_error(tmp_path: Path) -> None:
    items = entries(EXCERPT)
    kept = [e for e in items if e.get("subtype") != "compact_boundary"]
    path = tmp_path / "no-boundary.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in kept))
    with pytest.raises(TraceFormatError) as err:
        import_file(path)
    summary_line = next(i for i, e in enumerate(kept) if e.get("isCompactSummary")) + 1
    assert err.value.line == summary_line and "compact_boundary" in err.value.message


def test_the_shared_sessions_import_with_their_calls_thinking_and_compactions(
    shared_traces: Path,
) -> None:
    for session, (calls, thinking, compaction) in SHARED.items():
        path = shared_traces / TRANSCRIPTS / f"{session}.jsonl"
        trace = one(path)
        assert trace.id == session and trace.meta["version"] == "2.1.39"
        assert len(trace.call_indices) == calls
        assert (
            sum(
                1
                for m in trace.messages
                for b in m.replay.get("thinking_blocks", [])
                if b.get("thinking")
            )
            == thinking
        )
        (rec,) = trace.recorded_compactions
        assert (rec.call, rec.trigger, rec.pre_tokens) == compaction
        assert validate(trace) == []
        subagents = trace.meta["subagents"]
        call_names = {c.id: c.name for m in trace.messages for c in m.tool_calls}
        for agent in subagents:
            sub = one(path.parent / agent["file"])
            assert sub.meta["parent_session"] == session
            assert sub.id == f"{session}/{sub.meta['agent_id']}"
            assert sub.meta["agent_id"] == agent["agent_id"]
            if agent["kind"] == "task":  # started by a Task call of the session
                assert call_names[agent["tool_call_id"]] == "Task"
            else:  # the single call that wrote the recorded summary
                assert rec.meta["summary_call"] == agent["file"]
                assert len(sub.call_indices) == 1
        assert [e["kind"] for e in subagents].count("compaction") == 1


def test_imported_sessions_match_the_shipped_schema(shared_traces: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from ctxbench.formats.canonical import schema

    folders = (
        "marot+spotter",
        "codemie-ai+codemie-code",
        "OpenHands+software-agent-sdk",
        "sierra-research+tau2-bench",
    )
    files = [p for f in folders for p in sorted((shared_traces / f).rglob("*.json*"))]
    files += sorted(SESSIONS.rglob("*.json*"))
    assert len(files) > 20
    doc = schema()
    for path in files:
        for trace in import_file(path)[0]:
            jsonschema.validate(json.loads(json.dumps(trace.to_dict())), doc)
    bad = {"id": "t", "messages": [], "recorded_compactions": [{"call": -1, "message": 0}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, doc)
