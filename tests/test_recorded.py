"""Recorded compactions as ground truth: pairing, rendering, the replay's note, the run and
recorded commands, and the Claude Code reproduction against the recorded sessions."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.calibration import samples
from ctxbench.cli import cli
from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.engine.events import DECISION, UNCOMPACTED_NOTE, Event
from ctxbench.errors import ConfigError
from ctxbench.formats.canonical import write_traces
from ctxbench.formats.importing import import_file
from ctxbench.recorded import compare_recorded, render, replay_recorded
from ctxbench.report.results import digest_events
from ctxbench.trace import Message, RecordedCompaction, Trace, recorded_prompt
from tests.factories import tool_trace

EXCERPT = Path(__file__).parent / "golden" / "sessions" / "claude_code_session.jsonl"
TRANSCRIPTS = "marot+spotter/test/fixtures/transcripts"


def event(type_: str, call: int, step: int, **data: object) -> ev.Event:
    return ev.event_of(type_, data, step=step, call=call)


def with_records(*calls: int, pre: int = 1000, trigger: str = "auto") -> Trace:
    trace = tool_trace(12)
    recs = tuple(
        RecordedCompaction(c, trace.call_indices[c], trigger, pre, "S", f"f:{c}") for c in calls
    )
    return replace(trace, recorded_compactions=recs)


def compaction(call: int, step: int, layer: str = "autocompact") -> ev.Event:
    return event(ev.COMPACTION, call, step, layer=layer, dropped=5, added=1)


def test_each_record_is_paired_with_the_nearest_compaction_once() -> None:
    trace = with_records(4, 9)
    events = [
        event(DECISION, 3, 0, tokens=900),
        compaction(3, 1),
        event(DECISION, 4, 2, tokens=300),
        event(DECISION, 9, 3, tokens=1010),
        compaction(9, 4),
        event(ev.CONTEXT_STATUS, 11, 5, used=77),
        compaction(11, 6),
    ]
    parity = compare_recorded(trace, events, strategy="s")
    first, second = parity.rows
    assert (first.call, first.tokens, first.tokens_at_recorded, first.call_delta) == (
        3,
        900,
        300,
        -1,
    )
    assert (second.call, second.tokens, second.same_call, second.token_delta) == (9, 1010, True, 10)
    assert parity.extra == ((11, 77),)  # the status estimate where no decision event was made
    assert not parity.auto_matched


def test_microcompaction_and_results_shrunk_in_place_are_not_compactions() -> None:
    trace = with_records(5)
    events = [
        event(ev.COMPACTION, 2, 0, layer="microcompact", dropped=0, added=0, changed=3),
        event(ev.COMPACTION, 4, 1, layer="truncate", dropped=0, added=0, changed=1),
        compaction(5, 2),
        event(DECISION, 5, 3, tokens=1000),
    ]
    parity = compare_recorded(trace, events)
    assert parity.rows[0].same_call and parity.extra == () and parity.auto_matched


def test_text_and_json_say_the_call_the_count_and_the_note() -> None:
    trace = with_records(4, trigger="manual")
    parity = compare_recorded(trace, [event(DECISION, 4, 0, tokens=1234)], strategy="claude_code")
    text = parity.to_text()
    assert "recorded manual at call 4, preTokens 1,000" in text and "no compaction" in text
    assert "replay count there 1,234" in text and UNCOMPACTED_NOTE in text
    data = json.loads(render([parity], as_json=True))[0]
    assert (
        data["rows"][0]["replay_call"] is None
        and data["rows"][0]["tokens_at_recorded_call"] == 1234
    )
    assert data["auto_matched"] is True  # a manual compaction is not an auto-compact decision


def test_the_reproduction_compacts_at_the_recorded_call_of_the_excerpt() -> None:
    (trace,), _ = import_file(EXCERPT)
    parity = replay_recorded(trace)
    (row,) = parity.rows
    assert row.same_call and row.tokens == row.recorded.pre_tokens == 167_094


def test_the_claude_code_reproduction_against_the_shared_sessions(shared_traces: Path) -> None:
    """Both auto-compactions at the recorded call, within 0.1% of preTokens; at the manual one
    the count is within 1% and there is no auto-compaction."""
    paths = sorted((shared_traces / TRANSCRIPTS).glob("*.jsonl"))
    rows = [row for p in paths for row in replay_recorded(import_file(p)[0][0]).rows]
    assert len(rows) == 3
    for row in rows:
        pre = row.recorded.pre_tokens
        assert pre is not None and row.tokens_at_recorded is not None
        if row.recorded.trigger == "auto":
            assert row.same_call and row.tokens is not None
            assert abs(row.tokens - pre) <= pre / 1000
        else:
            assert row.call is None and abs(row.tokens_at_recorded - pre) <= pre / 100


def test_run_prints_recorded_compactions_beside_the_strategys(tmp_path: Path) -> None:
    (trace,), _ = import_file(EXCERPT)
    traces = tmp_path / "t.jsonl"
    write_traces(traces, [trace])
    events = tmp_path / "ev.jsonl"
    args = ["run", str(traces), "-s", "claude_code", "-w", "200000", "--reserved", "32000"]
    out = CliRunner().invoke(cli, [*args, "--events", str(events)])  # the session's version
    assert out.exit_code == 0, out.output
    assert "recorded auto at call 7, preTokens 167,094" in out.output
    assert "compacts at call 7 with 167,094 (same call, +0 tokens)" in out.output
    (line,) = [json.loads(x) for x in events.read_text().splitlines() if '"recorded.' in x]
    rec = trace.recorded_compactions[0]
    assert (line["call"], line["pre_tokens"], line["note"]) == (7, 167_094, UNCOMPACTED_NOTE)
    assert line["source"] == rec.source
    lines = [json.loads(x) for x in events.read_text().splitlines()]
    digest = digest_events((str(e.pop("run_id", "")), Event.from_dict(e)) for e in lines)
    (run_events,) = digest.values()
    assert (7, "recorded auto") in run_events.compactions and (
        7,
        "autocompact",
    ) in run_events.compactions


def test_the_recorded_command_prints_text_or_json() -> None:
    out = CliRunner().invoke(cli, ["recorded", str(EXCERPT), "--json"])
    assert out.exit_code == 0, out.output
    (parity,) = json.loads(out.output)
    assert parity["strategy"] == "claude_code" and parity["auto_matched"] is True
    assert parity["rows"][0]["replay_tokens"] == parity["rows"][0]["pre_tokens"] == 167_094
    text = CliRunner().invoke(cli, ["recorded", str(EXCERPT), "--set", "usage_anchored=false"])
    assert text.exit_code == 0 and "claude_code vs recorded" in text.output
    bad = CliRunner().invoke(cli, ["recorded", str(EXCERPT), "--set", "cli_version=x"])
    assert isinstance(bad.exception, ConfigError) and "cli_version" in str(bad.exception)


def test_parity_takes_recorded_as_the_other_side(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["parity", "claude_code", "recorded", str(EXCERPT), "--json"])
    assert out.exit_code == 0, out.output
    (parity,) = json.loads(out.output)
    assert parity["strategy"] == "claude_code" and parity["auto_matched"] is True
    (row,) = parity["rows"]
    assert row["replay_call"] == row["recorded_call"] == 7 and row["same_call"]
    assert row["replay_tokens"] == row["pre_tokens"] == 167_094
    # the same answer as the recorded command gives
    same = CliRunner().invoke(cli, ["recorded", str(EXCERPT), "--json"])
    assert json.loads(same.output) == [parity]
    plain = tmp_path / "plain.jsonl"
    write_traces(plain, [tool_trace(6)])
    refused = CliRunner().invoke(cli, ["parity", "claude_code", "recorded", str(plain)])
    assert isinstance(refused.exception, ConfigError)
    assert "no recorded compaction" in str(refused.exception)
    no_window = CliRunner().invoke(cli, ["parity", "dbgpt", "none", str(plain)])
    assert no_window.exit_code == 2 and "--window" in no_window.output


def test_after_a_recorded_compaction_the_sent_prompt_is_the_summary_and_what_followed() -> None:
    (trace,), _ = import_file(EXCERPT)
    rec = trace.recorded_compactions[0]
    after = trace.call_indices[rec.call]
    sent = recorded_prompt(trace, after)
    assert sent[0] == Message("user", rec.summary)
    assert sent[1:] == trace.messages[rec.message : after]
    before = trace.call_indices[rec.call - 1]
    assert recorded_prompt(trace, before) == trace.messages[:before]
    # calibration counts what was sent: the call after the boundary is far smaller
    counted = {s.call: s.counted for s in samples(trace, get_counter("chars4"))}
    assert counted[rec.call] < counted[rec.call - 1] / 3


@pytest.mark.parametrize("trigger", ["auto", "manual"])
def test_records_round_trip_through_canonical_files(tmp_path: Path, trigger: str) -> None:
    trace = with_records(3, trigger=trigger)
    path = tmp_path / "t.jsonl"
    write_traces(path, [trace])
    (back,), _ = import_file(path)
    assert back.recorded_compactions == trace.recorded_compactions


def test_a_profile_fitted_on_claude_usage_over_a_proxy_is_reported_as_fitted(
    tmp_path: Path,
) -> None:
    from ctxbench.report.document import accuracy_results

    profile = tmp_path / "claude.json"
    args = ["calibrate", str(EXCERPT), "-c", "tiktoken:o200k_base", "--save-profile", str(profile)]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    saved = json.loads(profile.read_text())
    assert saved["family"] == "claude-opus-4-6" and saved["fitted_on"]["calls"] == 9
    counter = get_counter(f"profile:{profile}")
    assert counter.kind == "fitted"
    (trace,), _ = import_file(EXCERPT)
    (result,), _, calls = accuracy_results([trace], [counter], [])
    assert result[2] == "true counter (fitted to usage, not exact)" and calls == 9


def test_run_reads_a_session_directly_and_a_given_version_wins() -> None:
    args = ["run", str(EXCERPT), "-s", "claude_code", "-w", "200000", "--reserved", "32000"]
    out = CliRunner().invoke(cli, [*args, "--set", "cli_version=2.1.0", "--json"])
    assert out.exit_code == 0, out.output
    row = json.loads(out.stdout.splitlines()[0])  # stderr says what came from the trace
    assert json.loads(row["params"])["cli_version"] == "2.1.0"
    # 2.1.0 reserves the whole 32,000 output tokens: the threshold is 155,000, crossed earlier
    assert "compacts at call 5 with 165,766 (-2 calls" in out.stderr
