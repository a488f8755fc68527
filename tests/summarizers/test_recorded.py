"""``--summarizer recorded``: the recorded agent's own summary at the call it compacted, byte
for byte; elsewhere the fallback, said in the events; the row counts the real ones."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.cli import cli
from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.errors import ConfigError
from ctxbench.formats.importing import import_file
from ctxbench.recorded import CLAUDE_CODE_MAX_OUTPUT, CLAUDE_CODE_WINDOW, strategy_params
from ctxbench.summarizers import build_summarizer
from ctxbench.summarizers.base import SummaryRequest, SummaryText, summary_source
from ctxbench.summarizers.recorded import RecordedSummarizer, request_call
from ctxbench.trace import Trace

EXCERPT = Path(__file__).parents[1] / "golden" / "sessions" / "claude_code_session.jsonl"
SESSION = "marot+spotter/test/fixtures/transcripts/258c7280-ae70-4798-800f-63464d01a85d.jsonl"


def replay_with_recorded(trace: Trace, fallback: str = "extractive") -> tuple[object, ...]:
    spec = resolve_spec(
        RunSpec(
            trace_id=trace.id,
            trace_hash=trace.content_hash,
            strategy="claude_code",
            params=strategy_params(trace, "claude_code", {}),
            window=CLAUDE_CODE_WINDOW,
            reserved=CLAUDE_CODE_MAX_OUTPUT,
            summarizer="recorded",
            summarizer_params={"fallback": fallback},
            error_style="anthropic",
        )
    )
    output = run_spec(spec, trace)
    return output.events, output.final_view, output.result


def summary_message(trace: Trace) -> str:
    _, view, _ = replay_with_recorded(trace)
    first = view[0]  # type: ignore[index]
    assert first.role == "user"
    return str(first.content)


def test_the_excerpt_compacts_with_the_recorded_summary_byte_for_byte() -> None:
    (trace,), _ = import_file(EXCERPT)
    (recorded,) = trace.recorded_compactions
    assert recorded.summary  # the importer keeps the isCompactSummary text
    assert summary_message(trace) == recorded.summary


def test_a_shared_session_compacts_with_the_recorded_summary_byte_for_byte(
    shared_traces: Path,
) -> None:
    (trace,), _ = import_file(shared_traces / SESSION)
    (recorded,) = trace.recorded_compactions
    assert recorded.trigger == "auto" and len(recorded.summary) > 10_000
    events, view, result = replay_with_recorded(trace)
    assert view[0].content == recorded.summary  # type: ignore[index]
    (summary,) = [e for e in events if e.type == ev.SUMMARY]  # type: ignore[attr-defined]
    assert summary.call == recorded.call and summary.data["source"] == "recorded"
    assert result.recorded_summaries == 1 and result.summary_calls == 1  # type: ignore[attr-defined]


def test_elsewhere_the_fallback_summarizes_and_the_event_says_why() -> None:
    (trace,), _ = import_file(EXCERPT)
    moved = replace(
        trace,
        recorded_compactions=tuple(replace(c, call=c.call + 1) for c in trace.recorded_compactions),
    )
    events, view, result = replay_with_recorded(moved, fallback="model_like")
    (summary,) = [e for e in events if e.type == ev.SUMMARY]  # type: ignore[attr-defined]
    assert summary.data["source"] == "fallback:model_like"
    assert summary.data["why"] == f"no recorded compaction at call {summary.call}"
    assert result.recorded_summaries == 0  # type: ignore[attr-defined]
    assert view[0].content.startswith("This session is being continued")  # type: ignore[index]
    assert view[0].content != trace.recorded_compactions[0].summary  # type: ignore[index]


def test_other_summarizers_leave_the_summary_event_as_it_was() -> None:
    (trace,), _ = import_file(EXCERPT)
    spec = resolve_spec(
        RunSpec(trace.id, trace.content_hash, "claude_code", window=200_000, reserved=32_000)
    )
    events = run_spec(spec, trace).events
    (summary,) = [e for e in events if e.type == ev.SUMMARY]
    assert "source" not in summary.data and "why" not in summary.data


def test_the_request_key_names_the_call() -> None:
    assert request_call("a:b/c:102:autocompact:0") == 102
    assert request_call("no call here") is None


def test_unbound_it_falls_back_and_says_the_trace_records_none() -> None:
    summarizer = build_summarizer("recorded")
    request = SummaryRequest("s", "l", "p", (), ("S",), 100, key="t:3:l:0")
    text = summarizer.summarize(request, get_counter("chars4"))
    assert summary_source(text) == {
        "source": "fallback:model_like",
        "why": "the trace records no summary",
    }


def test_it_cannot_fall_back_to_itself() -> None:
    with pytest.raises(ConfigError, match="fall back to itself"):
        RecordedSummarizer(fallback="recorded")


def test_a_plain_string_says_nothing() -> None:
    assert summary_source("text") == {}
    assert summary_source(SummaryText("x", "recorded")) == {"source": "recorded"}


def test_run_with_summarizer_recorded_writes_the_row_field(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    args = ["run", str(EXCERPT), "-s", "claude_code", "-w", "200000", "--reserved", "32000"]
    out = CliRunner().invoke(cli, [*args, "--summarizer", "recorded", "--out", str(rows)])
    assert out.exit_code == 0, out.output
    (row,) = [json.loads(line) for line in rows.read_text().splitlines()]
    assert (row["summarizer"], row["recorded_summaries"]) == ("recorded", 1)
