"""``ctxbench diff``: the first call where two replays of the same trace diverge."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.counting import get_counter
from ctxbench.divergence import Divergence, first_divergence, read_events, render
from ctxbench.engine import events as ev
from ctxbench.engine.events import Event, event_line
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import replay
from ctxbench.errors import ConfigError
from ctxbench.probes.model import Probe
from ctxbench.strategies import build_strategy
from ctxbench.trace import Message, Trace
from tests.factories import tool_trace

CHARS4 = get_counter("chars4")


def react(n: int) -> Trace:
    msgs = [Message("system", "You are a data agent."), Message("user", "Sum sales.")]
    for i in range(n):
        msgs.append(
            Message("assistant", f"Thought: step {i}\nAction: sql_query\nAction Input: SELECT {i}")
        )
        msgs.append(Message("user", f"Observation: fact-{i:03d} " + "x" * 380))
    msgs.append(Message("assistant", "done"))
    probes = tuple(
        Probe(f"p{i}", "recall", f"fact {i}?", (f"fact-{i:03d}",), evidence=(3 + 2 * i,))
        for i in range(n)
    )
    return Trace("r", tuple(msgs), probes=probes)


def events_for(warning: float, trace: Trace) -> list[Event]:
    strategy = build_strategy(
        "dbgpt",
        {
            "release": "design",
            "warning_threshold": warning,
            "error_threshold": 0.95,
            "critical_threshold": 0.97,
            "max_observation_age_rounds": 1,
            "truncated_observation_max_chars": 20,
            "snapshots": False,
        },
    )
    out = replay(trace, strategy, SimulatedProvider(6000), true_counter=CHARS4, estimator=CHARS4)
    return list(out.events)


def events_file(warning: float, trace: Trace) -> str:
    """The events of :func:`events_for` as an events file's lines (run id ``w<warning>``)."""
    return "".join(event_line(e, run_id=f"w{warning}") + "\n" for e in events_for(warning, trace))


def test_runs_that_differ_in_one_threshold_diverge_at_the_first_call_where_it_matters() -> None:
    trace = react(40)
    a, b = events_for(0.5, trace), events_for(0.7, trace)
    div = first_divergence(a, b)
    assert div.call is not None
    # before the divergence both runs saw the same prompts; at it, only the lower threshold compacts
    ratio_a = next(e["ratio"] for e in div.a if e.type == ev.CONTEXT_STATUS)
    assert 0.5 <= ratio_a < 0.7
    assert [e["layer"] for e in div.a if e.type == ev.COMPACTION] == ["layer1"]
    assert [e for e in div.b if e.type == ev.COMPACTION] == []
    first_a = next(e for e in a if e.type == ev.COMPACTION)
    assert first_a.call == div.call
    assert div.probes, "truncating old observations changes what probes find"
    assert {o for pair in div.probes.values() for o in pair} == {"in_context", "lost"}


def test_identical_runs_report_no_divergence() -> None:
    trace = react(10)
    div = first_divergence(events_for(0.6, trace), events_for(0.6, trace))
    assert div.identical


def test_a_models_answers_about_a_run_are_not_part_of_what_it_did() -> None:
    trace = react(10)
    plain = events_for(0.6, trace)
    step = plain[-1].step + 1
    answered = [
        *plain,
        ev.NextAction(step=step, call=3, trigger="sample", agree=True),
        ev.event_of(ev.PROBE_ANSWER, {"probe_id": "p", "verdict": "missed"}, step=step + 1, call=9),
    ]
    assert first_divergence(plain, answered).identical


def test_diff_command_on_two_events_files(tmp_path: Path) -> None:
    trace = react(40)
    for name, warning in (("a", 0.5), ("b", 0.7)):
        (tmp_path / f"{name}.jsonl").write_text(events_file(warning, trace), "utf-8")
    out = CliRunner().invoke(cli, ["diff", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    assert out.exit_code == 0, out.output
    assert "first divergence at call" in out.output
    assert "compaction layer1" in out.output and "trace messages dropped" not in out.output
    assert "probes whose outcome changed" in out.output and "in_context" in out.output


def test_a_file_with_several_runs_needs_a_run_id(tmp_path: Path) -> None:
    trace = react(5)
    path = tmp_path / "both.jsonl"
    path.write_text(events_file(0.5, trace) + events_file(0.7, trace), "utf-8")
    with pytest.raises(ConfigError, match="holds 2 runs"):
        read_events(path)
    run_id, events = read_events(path, "w0.7")
    assert run_id == "w0.7" and events


def test_a_malformed_events_file_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    probe = '{"type": "probe", "call": 0, "probe_id": "p", "kind": "recall", "outcome": "lost"}'
    path.write_text(probe + "\n{broken\n", "utf-8")
    with pytest.raises(ConfigError) as info:
        read_events(path)
    assert info.value.line == 2


def test_diff_by_run_id_in_a_results_dir_shows_dropped_trace_messages(tmp_path: Path) -> None:
    from ctxbench.sweep import ResultsDir
    from ctxbench.testing import run_sweep

    repo = Path(__file__).resolve().parents[1]
    results = run_sweep(repo / "examples" / "ci" / "ci-sweep.toml", tmp_path / "r")
    rows = ResultsDir(results).results()
    pick = {(r.strategy, r.window): r.run_id for r in rows if r.trace_id.endswith("s0-0")}
    out = CliRunner().invoke(
        cli,
        ["diff", pick[("none", 16384)], pick[("sliding_window", 16384)], "--results", str(results)],
    )
    assert out.exit_code == 0, out.output
    assert "first divergence at call" in out.output and "compaction sliding_window" in out.output
    assert "trace messages dropped: 1-" in out.output


def trim_events(tmp_path: Path, name: str, **params: object) -> tuple[Path, list[Event]]:
    """LangChain's trim of a trace with parallel tool calls: its events, and as a file."""
    trace = tool_trace(12, calls=3, output="x" * 200)
    strategy = build_strategy("langchain_trim", params)
    out = replay(trace, strategy, SimulatedProvider(2000), true_counter=CHARS4, estimator=CHARS4)
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(event_line(e, run_id=name) + "\n" for e in out.events), "utf-8")
    return path, list(out.events)


def test_diff_labels_a_failed_call_by_its_recorded_error_kind(tmp_path: Path) -> None:
    """A trim that cuts a parallel tool batch is refused for its pairing, under the window:
    ``diff`` says so, and never calls it an overflow or a count over the limit."""
    cut, events = trim_events(tmp_path, "cut")
    whole, _ = trim_events(tmp_path, "whole", repair_pairs=True)
    out = CliRunner().invoke(cli, ["diff", str(cut), str(whole)])
    assert out.exit_code == 0, out.output
    failed = [e for e in events if e.type == ev.CALL_FAILED]
    assert failed and {e["kind"] for e in failed} == {ev.PAIRING_REJECTED}
    first = failed[0]
    assert first["true_tokens"] <= first["limit"], "refused under the window"
    assert f"first divergence at call {first.call}" in out.output
    side = out.output.split("\nwhole")[0]
    assert "REJECTED (pairing)" in side
    assert (
        f"refused for its tool pairing ({first['true_tokens']} true / {first['limit']} limit)"
        in side
    )
    assert "overflow" not in side and f"{first['true_tokens']} > " not in side


def test_diff_still_labels_an_overflow_as_one() -> None:
    trace = react(40)
    events = replay(
        trace,
        build_strategy("none"),
        SimulatedProvider(2000),
        true_counter=CHARS4,
        estimator=CHARS4,
    ).events
    failed = next(e for e in events if e.type == ev.CALL_FAILED)
    assert failed["kind"] == ev.OVERFLOW
    at_call = [e for e in events if e.call == failed.call]
    text = render(Divergence(failed.call, at_call, [], {}), "none", "other")
    assert "REJECTED (overflow)" in text and "pairing" not in text
    assert f"call FAILED after 1 attempt(s): {failed['true_tokens']} > {failed['limit']}" in text
