"""mini-swe-agent: per-call usage with cache hits, the provider response kept, the exit kept."""

from __future__ import annotations

import json
from pathlib import Path

from ctxbench.formats.importing import import_file


def test_usage_and_cache_hits_come_from_the_recorded_response(shared_traces: Path) -> None:
    path = next(shared_traces.glob("mini-swe-agent/*"))
    raw = json.loads(path.read_text())
    (trace,), report = import_file(path)
    recorded = [
        m["extra"]["response"]["usage"] for m in raw["messages"] if m["role"] == "assistant"
    ]
    imported = [m.usage for m in trace.messages if m.role == "assistant"]
    assert report.calls_with_usage == len(recorded) == len(imported)
    for r, u in zip(recorded, imported):
        assert u is not None
        assert (u.prompt_tokens, u.completion_tokens, u.cached_tokens) == (
            r["prompt_tokens"],
            r["completion_tokens"],
            r["prompt_cache_hit_tokens"],
        )
        assert u.meta["prompt_cache_miss_tokens"] == r["prompt_cache_miss_tokens"]
        assert (
            u.prompt_tokens
            == u.meta["prompt_cache_hit_tokens"] + u.meta["prompt_cache_miss_tokens"]
        )


def test_response_and_extra_stay_in_meta_and_the_exit_message_on_the_trace(
    shared_traces: Path,
) -> None:
    path = next(shared_traces.glob("mini-swe-agent/*"))
    raw = json.loads(path.read_text())
    (trace,), _ = import_file(path)
    first_call = next(m for m in trace.messages if m.role == "assistant")
    assert first_call.meta["response"]["choices"][0]["finish_reason"] == "tool_calls"
    assert "usage" not in first_call.meta["response"]  # mapped to Message.usage
    assert first_call.meta["extra"]["actions"]
    assert trace.meta["exit_message"] == [m for m in raw["messages"] if m["role"] == "exit"]
    assert all(m.role != "exit" for m in trace.messages)
    assert (
        trace.id == raw["instance_id"]
        and trace.meta["model"] == first_call.meta["response"]["model"]
    )
