"""OpenHands SDK completion logs: a file is its conversation up to its call; earlier files of
the run give earlier calls their usage; each call's exact request is kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ctxbench.formats.importing import import_file
from ctxbench.trace import Trace
from tests import GOLDEN

LOGS = GOLDEN / "sessions" / "openhands_logs"
SHARED = "OpenHands+software-agent-sdk/tests/fixtures/llm_data"


def one(path: Path) -> Trace:
    traces, report = import_file(path)
    assert report.format == "openhands_completions" and report.detected and len(traces) == 1
    return traces[0]


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def test_a_log_is_its_request_plus_the_response_with_usage() -> None:
    first = sorted(LOGS.glob("*.json"))[0]
    data, trace = load(first), one(first)
    assert len(trace.messages) == len(data["messages"]) + 1
    response = trace.messages[-1]
    assert response.role == "assistant" and response.usage is not None
    assert response.usage.prompt_tokens == data["response"]["usage"]["prompt_tokens"]
    assert [c.id for c in response.tool_calls] == [
        c["id"] for c in data["response"]["choices"][0]["message"]["tool_calls"]
    ]
    assert [t.name for t in trace.tools] == [t["function"]["name"] for t in data["tools"]]
    assert trace.meta["context_window"] == data["context_window"]


def test_earlier_files_of_the_run_give_earlier_calls_their_usage() -> None:
    files = sorted(LOGS.glob("*.json"))
    trace = one(files[-1])
    calls = [trace.messages[i] for i in trace.call_indices]
    assert len(calls) == len(files)
    for msg, path in zip(calls, files):
        assert msg.usage is not None and msg.meta["request"]["file"] == path.name
        assert msg.usage.prompt_tokens == load(path)["response"]["usage"]["prompt_tokens"]
        # native tool calling: the exact request is the conversation before the call
        assert msg.meta["request"]["messages"] == trace.messages.index(msg)
        assert "exact_messages" not in msg.meta["request"]


def test_a_log_without_its_earlier_files_still_imports(tmp_path: Path) -> None:
    last = sorted(LOGS.glob("*.json"))[-1]
    shutil.copy(last, tmp_path / last.name)
    trace = one(tmp_path / last.name)
    assert [m.usage is not None for m in trace.messages if m.role == "assistant"] == [False, True]


def test_prompt_based_tool_calling_keeps_the_exact_request(shared_traces: Path) -> None:
    files = sorted((shared_traces / SHARED / "nonfncall-llm-logs").glob("*.json"))
    trace = one(files[-1])
    calls = [trace.messages[i] for i in trace.call_indices]
    assert len(calls) == len(files) == 4
    for msg, path in zip(calls, files):
        data = load(path)
        assert msg.usage is not None
        assert msg.usage.prompt_tokens == data["response"]["usage"]["prompt_tokens"]
        assert msg.usage.cached_tokens == data["response"]["usage"]["prompt_cache_hit_tokens"]
        assert msg.meta["request"]["exact_messages"] == data["messages"]  # text-form calls
    assert calls[-1].tool_calls  # while the conversation itself has native tool calls


def test_the_shared_native_run_links_all_six_calls(shared_traces: Path) -> None:
    files = sorted((shared_traces / SHARED / "llm-logs").glob("*.json"))
    trace = one(files[-1])
    prompts = [trace.messages[i].usage.prompt_tokens for i in trace.call_indices]  # type: ignore[union-attr]
    assert prompts == [load(p)["response"]["usage"]["prompt_tokens"] for p in files]
    assert prompts[0] == 4_812 and prompts[-1] == 6_729
