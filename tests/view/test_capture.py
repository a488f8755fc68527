"""The viewer's capture: the prompt it records at a call is the one the engine sent, probe
states agree with the engine's scores at the ask points, prompts are stored as id runs, and
per-call digests part ways where ``ctxbench diff`` says the runs do."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxbench.cell.runner import resolve_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.divergence import first_divergence
from ctxbench.engine import events as ev
from ctxbench.engine import replay as replay_module
from ctxbench.engine.context import ReplayContext
from ctxbench.errors import ConfigError
from ctxbench.formats.canonical import write_traces
from ctxbench.probes.model import Probe
from ctxbench.results import spec_of_row
from ctxbench.trace import Message
from ctxbench.view import build
from ctxbench.view.capture import GONE, IN_CONTEXT, VIA_REFERENCE, Capture, capture_run
from ctxbench.view.sources import read_source
from ctxbench.view.write import MAX_TEXT
from tests.factories import tool_trace
from tests.viewing import accepted_prompts, two_runs


def _capture(i: int) -> Capture:
    runs = two_runs()
    return capture_run(spec_of_row(runs.results[i]), runs.trace, runs.results[i])


@pytest.mark.parametrize("i", [0, 1])
def test_the_prompt_at_every_accepted_call_is_the_engines(i: int) -> None:
    runs = two_runs()
    capture = _capture(i)
    assert len(capture.calls) == len(runs.trace.call_indices) + 1  # every call, and the end
    assert runs.prompts[i], "the run accepted no call"
    for call, prompt in runs.prompts[i].items():
        assert capture.prompt(call) == list(prompt), call
    compacted = {e.call for e in capture.events if isinstance(e, ev.Compaction)}
    assert compacted & set(runs.prompts[i]), "no accepted call after a compaction was checked"


def _scored_views(
    monkeypatch: pytest.MonkeyPatch, run: Callable[[], object]
) -> dict[int, tuple[Message, ...]]:
    """Per call, the prompt the engine scores its probes on (``_ask`` runs at every call, and
    at the end when probes are asked there), recorded while ``run`` runs."""
    seen: dict[int, tuple[Message, ...]] = {}
    original = replay_module._ask

    def ask(ctx: ReplayContext, *args: Any) -> None:
        seen[ctx.call] = ctx.view.messages
        original(ctx, *args)

    monkeypatch.setattr(replay_module, "_ask", ask)
    run()
    return seen


def test_the_prompt_at_every_call_is_the_one_the_replay_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trim that cuts parallel tool pairs: the provider refuses some calls for their pairing
    before counting them, and a view watched at the provider skipped those calls, so every
    later call showed a later call's prompt (a summary the engine had not made yet)."""
    end = Probe("p-end", "recall", "Which step ran first?", ("step 0.0",))
    trace = tool_trace(12, calls=3, output="x" * 200, probes=(end,))
    write_traces(tmp_path / "t.jsonl", [trace])
    spec = resolve_spec(
        RunSpec(
            trace_id=trace.id,
            trace_hash=trace.content_hash,
            strategy="langchain_trim",
            window=2_000,
            reserved=0,
            trace_source=str(tmp_path / "t.jsonl"),
        )
    )
    captured: list[Capture] = []
    scored = _scored_views(monkeypatch, lambda: captured.append(capture_run(spec, trace, None)))
    (capture,) = captured
    kinds = {e["kind"] for e in capture.events if e["type"] == ev.CALL_FAILED}
    assert "pairing" in kinds, "no call was refused for its pairing: the test checks nothing"
    assert any(e["type"] == ev.COMPACTION for e in capture.events)
    n_calls = len(trace.call_indices)
    assert sorted(scored) == list(range(n_calls + 1))  # every call, and the end
    assert len(capture.calls) == n_calls + 1
    for call, prompt in scored.items():
        assert capture.prompt(call) == list(prompt), call


def test_a_replay_shows_the_same_events_as_the_recorded_run() -> None:
    runs = two_runs()
    assert first_divergence(runs.typed[0], _capture(0).events).identical


def test_probe_states_agree_with_the_engine_at_the_ask_point() -> None:
    capture = _capture(0)
    assert capture.probes
    lost = 0
    for track in capture.probes:
        if track.reason == ev.AFTER_FAILURE:  # lost because the task had crashed by then
            assert track.outcome == "lost"
            continue
        state = "not_yet"
        for call, now in track.changes:
            if call <= track.ask_call:
                state = now
        expected = {"in_context": IN_CONTEXT, "via_reference": VIA_REFERENCE}.get(
            str(track.outcome), GONE
        )
        assert (state if state != "not_yet" else GONE) == expected, track.probe.id
        if track.lost_at is not None:
            lost += 1
            before = [s for c, s in track.changes if c < track.lost_at]
            assert before[-1] == IN_CONTEXT
            answers = track.probe.answers
            text = "\n".join(m.content for m in capture.prompt(track.lost_at))
            assert not any(a in text for a in answers), track.probe.id
    assert lost, "no probe was lost: the test would check nothing"


def test_a_prompt_that_only_grows_is_one_id_run(tmp_path: Path) -> None:
    runs = two_runs()
    spec = resolve_spec(
        RunSpec(
            trace_id=runs.trace.id,
            trace_hash=runs.trace.content_hash,
            strategy="none",
            window=1_000_000,
            trace_source=str(runs.root / "traces.jsonl"),
        )
    )
    with accepted_prompts() as seen:
        capture = capture_run(spec, runs.trace, None)
    assert all(len(record.ranges) == 1 for record in capture.calls)
    assert capture.prompt(len(seen) - 1) == list(seen[-1])
    assert len(capture.messages) == len(runs.trace.messages)


def test_digests_part_where_diff_says() -> None:
    runs = two_runs()
    a, b = _capture(0).digests(), _capture(1).digests()
    expected = first_divergence(runs.typed[0], runs.typed[1]).call
    assert expected is not None
    first = next(k for k, (x, y) in enumerate(zip(a, b)) if x != y)
    assert first == expected


def test_written_data_keeps_hostile_text_as_data(tmp_path: Path) -> None:
    from ctxbench.cell.runner import run_spec
    from tests.report_data import SCRIPT, hostile_trace

    trace = hostile_trace()
    source = tmp_path / "t.jsonl"
    write_traces(source, [trace])
    spec = resolve_spec(
        RunSpec(
            trace_id=trace.id,
            trace_hash=trace.content_hash,
            strategy="sliding_window",
            window=4000,
            reserved=500,
            trace_source=str(source),
        )
    )
    row = run_spec(spec, trace).result.to_row()
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n", "utf-8")
    build(tmp_path / "rows.jsonl", tmp_path / "viewer")
    data = "".join(p.read_text("utf-8") for p in (tmp_path / "viewer" / "data").rglob("*.js"))
    assert SCRIPT.split(">")[0] in data  # the text is there ...
    assert "</script" not in data  # ... but cannot close a script element
    assert MAX_TEXT > 1000


def test_an_events_file_needs_its_rows() -> None:
    runs = two_runs()
    with pytest.raises(ConfigError, match="does not say how to replay"):
        read_source(runs.root / "events.jsonl")
    found = read_source(runs.root / "events.jsonl", rows=runs.rows_file)
    assert [r.run_id for r in found.rows] == [r["run_id"] for r in runs.rows]
    assert set(found.recorded) == {r["run_id"] for r in runs.rows}


def test_two_sources_are_named_by_the_path_parts_that_differ(tmp_path: Path) -> None:
    from ctxbench.view.sources import source_names

    a, b = tmp_path / "baseline" / "rows.jsonl", tmp_path / "current" / "rows.jsonl"
    assert source_names(a, b) == ("baseline/rows.jsonl", "current/rows.jsonl")
    assert source_names(tmp_path / "x", tmp_path / "y") == ("x", "y")
    assert source_names(a, a) == ("A", "B")


def test_the_other_source_shows_the_same_runs_else_the_same_traces() -> None:
    from ctxbench.view.sources import counterparts

    rows = two_runs().results
    run_b = rows[1].run_id
    assert counterparts(rows, rows[:1], [run_b]) == [rows[1]]
    assert counterparts(rows, rows[:1], ["0000000000000000"]) == rows  # no such run: its trace
    assert counterparts(rows, rows[:1], []) == rows
    elsewhere = [dataclasses.replace(r, trace_id="other") for r in rows]
    with pytest.raises(ConfigError, match="no run of the traces shown"):
        counterparts(elsewhere, rows[:1], [])
