"""Usage that records the model per call (issue 18): a Claude Code session mixes Opus and
Haiku calls; the importer writes ``usage.model`` (optional, so older traces read and hash as
before), and ``calibrate --by-model`` and ``auto`` group calls by it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.calibration import samples
from ctxbench.cli import cli
from ctxbench.counting import get_counter
from ctxbench.counting.auto import call_model, call_models, choose_for
from ctxbench.formats.canonical import write_traces
from ctxbench.formats.importing import import_file
from ctxbench.trace import Message, ToolCall, Trace, Usage

OPUS, HAIKU = "claude-opus-4-6", "claude-haiku-4-5"


def _mixed(trace_id: str = "mixed") -> Trace:
    """Calls alternating between Opus and Haiku, each with recorded prompt tokens."""
    msgs = [Message("system", "You are an agent."), Message("user", "Fix the bug.")]
    for i in range(8):
        call = ToolCall(f"c{i}", "bash", json.dumps({"cmd": f"ls {i}"}))
        model = OPUS if i % 2 == 0 else HAIKU
        usage = Usage(prompt_tokens=100 + 40 * i, completion_tokens=5, model=model)
        msgs += [
            Message("assistant", f"step {i}", tool_calls=(call,), usage=usage),
            Message("tool", f"out {i} " * 10, tool_call_id=call.id, name="bash"),
        ]
    return Trace(trace_id, tuple(msgs), meta={"model": OPUS})


def test_usage_model_is_optional_and_round_trips() -> None:
    old = {"prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": None}
    usage = Usage.from_dict(old)
    assert usage.model is None and usage.to_dict() == old  # older traces hash as before
    new = Usage.from_dict({**old, "model": HAIKU})
    assert new.model == HAIKU and "model" not in new.meta
    assert Usage.from_dict(new.to_dict()) == new
    with pytest.raises(ValueError, match=r"usage\.model must be text"):
        Usage.from_dict({**old, "model": 3})


def test_the_call_model_falls_back_to_the_traces_model() -> None:
    trace = _mixed()
    calls = trace.call_indices
    assert [call_model(trace, i) for i in calls[:2]] == [OPUS, HAIKU]
    assert call_models(trace) == [OPUS, HAIKU]
    plain = Trace("p", (Message("user", "hi"), Message("assistant", "yo")), meta={"model": "x"})
    assert call_models(plain) == ["x"] and call_model(plain, 1) == "x"
    assert list(choose_for([trace])) == [OPUS, HAIKU]


def test_samples_of_one_model_take_only_its_calls() -> None:
    trace, chars4 = _mixed(), get_counter("chars4")
    every = samples(trace, chars4)
    opus, haiku = samples(trace, chars4, OPUS), samples(trace, chars4, HAIKU)
    assert len(opus) == len(haiku) == 4 and len(every) == 8
    assert sorted(s.call for s in opus + haiku) == [s.call for s in every]
    assert {s.call % 2 for s in opus} == {0} and {s.call % 2 for s in haiku} == {1}


def test_calibrate_by_model_groups_the_calls_of_a_mixed_session(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_traces(path, [_mixed()])
    result = CliRunner().invoke(
        cli, ["calibrate", str(path), "-c", "auto", "--by-model", "--json", "-q"]
    )
    assert result.exit_code == 0, result.output
    groups = {g["model"]: g for g in json.loads(result.output)["models"]}
    assert set(groups) == {OPUS, HAIKU}
    assert groups[OPUS]["reasoning"] == "all" and groups[HAIKU]["reasoning"] == "current_turn"
    assert [groups[m]["calls"] for m in (OPUS, HAIKU)] == [4, 4]


def test_run_auto_warns_that_a_trace_mixes_models(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_traces(path, [_mixed()])
    result = CliRunner().invoke(
        cli, ["run", str(path), "-s", "none", "-w", "200k", "-c", "auto", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert f"trace mixed mixes models by call ({OPUS}, {HAIKU})" in result.stderr


def test_the_shared_mixed_session_records_each_calls_model(shared_traces: Path) -> None:
    session = (
        shared_traces
        / "marot+spotter/test/fixtures/transcripts/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
    )
    traces, _ = import_file(session)
    main = next(t for t in traces if len(t.call_indices) > 200)
    models = Counter(
        m.usage.model for m in main.messages if m.role == "assistant" and m.usage is not None
    )
    # SOURCES.md: 217 calls, 84 claude-opus-4-6 and 133 claude-haiku-4-5
    assert models == Counter({OPUS: 84, f"{HAIKU}-20251001": 133})
    assert sorted(call_models(main)) == [f"{HAIKU}-20251001", OPUS]
