"""A failed call ends the agent's task: probes asked at or after it are lost (``after_failure``),
the row says where the run crashed, and a recorded action that uses a value the prompt no longer
shows is an ``open_loop.break``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.formats.importing import open_source
from ctxbench.probes.mining import mine_probes
from ctxbench.probes.model import Probe
from ctxbench.trace import Message, ToolCall, Trace
from tests.replaying import run

MINI_SWE_AGENT = "astropy__astropy-12907.traj.json"


def call(i: int, **arguments: object) -> Message:
    return Message(
        "assistant", f"step {i}", tool_calls=(ToolCall(f"c{i}", "bash", json.dumps(arguments)),)
    )


def result(i: int, text: str) -> Message:
    return Message("tool", text, tool_call_id=f"c{i}", name="bash")


def growing_trace(*, user_again_at: int | None = None) -> Trace:
    """Ten rounds of 2,000-character results: a small window fails from some call on. The id
    ORD-48213 is learned at the first result and used by the last call."""
    messages: list[Message] = [Message("system", "agent"), Message("user", "Refund the order.")]
    for i in range(10):
        if i == user_again_at:
            messages.append(Message("user", "Now a second task, please."))
        messages.append(call(i, command=f"step {i}"))
        messages.append(result(i, ("order ORD-48213 found. " if i == 0 else "") + "x" * 2000))
    messages.append(call(10, command="refund ORD-48213"))
    messages.append(result(10, "refunded"))
    probes = (
        Probe("early", "recall", "Which order?", ("ORD-48213",), (3,), ask_at=1),
        Probe("late", "recall", "Which order?", ("ORD-48213",), (3,), ask_at=None),
    )
    return Trace("grow", tuple(messages), probes=probes)


def probe_events(out: object) -> dict[str, dict[str, object]]:
    return {e.data["probe_id"]: dict(e.data) for e in out.events if e.type == ev.PROBE}  # type: ignore[attr-defined]


def test_probes_asked_after_the_first_failed_call_are_lost_after_failure() -> None:
    out = run(growing_trace(), "none", 2500)
    row = out.result
    assert row.failed_calls > 0 and row.first_failed_call is not None
    assert row.first_failed_call > 1, "the early probe is asked before the crash"
    probes = probe_events(out)
    assert probes["early"]["outcome"] == "in_context" and "reason" not in probes["early"]
    assert probes["late"] == {
        "probe_id": "late",
        "kind": "recall",
        "outcome": "lost",
        "reason": ev.AFTER_FAILURE,
    }
    assert (row.after_failure, row.retention) == (1, 0.5)


def test_a_run_that_never_fails_scores_as_before() -> None:
    row = run(growing_trace(), "none", 10**6).result
    assert (row.failed_calls, row.first_failed_call, row.after_failure) == (0, None, 0)
    assert row.retention == 1.0


def crash_then_recover_trace(*, continues: bool) -> Trace:
    """A 12,000-character result at round 3 overflows a small window until a sliding window
    lets it go; a new user task comes at round 6; the answer of the last probe comes last."""
    messages: list[Message] = [Message("system", "agent"), Message("user", "Refund the order.")]
    for i in range(9):
        if i == 6:
            messages.append(Message("user", "Now a second task, please."))
        messages.append(call(i, command=f"step {i}"))
        messages.append(result(i, "y" * 12_000 if i == 3 else "x" * 100))
    messages.append(call(9, command="refund"))
    messages.append(result(9, "refunded REF-77120"))
    late = Probe("late", "recall", "Which refund?", ("REF-77120",), (len(messages) - 1,))
    meta = {"continues_after_failure": True} if continues else {}
    return Trace("recover", tuple(messages), probes=(late,), meta=meta)


def test_a_new_user_task_restarts_scoring_only_where_the_trace_says_the_agent_went_on() -> None:
    ended = run(crash_then_recover_trace(continues=False), "sliding_window", 2000, keep_rounds=2)
    assert ended.result.failed_calls > 0 and ended.result.first_failed_call == 4
    assert probe_events(ended)["late"]["reason"] == ev.AFTER_FAILURE
    went_on = run(crash_then_recover_trace(continues=True), "sliding_window", 2000, keep_rounds=2)
    assert went_on.result.failed_calls == ended.result.failed_calls
    assert probe_events(went_on)["late"] == {
        "probe_id": "late",
        "kind": "recall",
        "outcome": "in_context",
    }
    assert went_on.result.after_failure == 0


def test_an_action_using_a_value_the_prompt_dropped_is_an_open_loop_break() -> None:
    trace = growing_trace()
    kept = run(trace, "none", 10**6)
    assert not [e for e in kept.events if e.type == ev.OPEN_LOOP_BREAK]
    assert kept.result.open_loop_breaks == 0
    dropped = run(trace, "sliding_window", 10**6, keep_rounds=2)
    breaks = [e for e in dropped.events if e.type == ev.OPEN_LOOP_BREAK]
    assert [(e.call, e.data["value"], e.data["source_message"]) for e in breaks] == [
        (10, "ORD-48213", 3)
    ]
    row = dropped.result
    assert (row.open_loop_breaks, row.first_open_loop_break) == (1, 10)


def test_none_that_fails_calls_on_a_recorded_trace_no_longer_keeps_every_probe(
    shared_traces: Path,
) -> None:
    [trace] = list(open_source(shared_traces / "mini-swe-agent" / MINI_SWE_AGENT).traces())
    trace = replace(trace, probes=mine_probes(trace))
    o200k = get_counter("tiktoken:o200k_base")
    row = run(trace, "none", 16384, counter=o200k, estimator=o200k).result
    assert row.failed_calls > 0 and row.probes > 0
    assert row.first_failed_call is not None and row.after_failure > 0
    assert row.retention is not None and row.retention < 1.0
    assert row.in_context + row.lost + row.via_reference + row.stale == row.probes


def test_a_probe_the_crash_left_unasked_counts_as_unanswered_for_the_answerer() -> None:
    from ctxbench.engine.result import Identity, result_from_events

    events = [
        ev.ProbeScored(step=0, call=1, probe_id="a", kind="recall", outcome="in_context"),
        ev.ProbeScored(
            step=1, call=5, probe_id="b", kind="recall", outcome="lost", reason=ev.AFTER_FAILURE
        ),
        ev.ProbeAnswer(
            step=2,
            call=1,
            probe_id="a",
            kind="recall",
            verdict="answered",
            outcome="in_context",
            prompt_tokens=10,
            completion_tokens=2,
        ),
    ]
    row = result_from_events(events, Identity())
    assert (row.retention, row.answered, row.answered_retention) == (0.5, 1, 0.5)
