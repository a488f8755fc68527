"""The loss table's one computation: which probes a run did not keep, the call (and compaction)
where each left the prompt, the answer missing, a superseded value present, and each kind's
cliff; read from the events and the trace's probes."""

from __future__ import annotations

import json
from typing import Any

from ctxbench.engine import events as ev
from ctxbench.probes.losses import (
    AFTER_FAILURE,
    DROPPED,
    NEVER_SEEN,
    REWRITTEN,
    SEEN,
    cliff_table,
    cliffs,
    compaction_calls,
    inferred,
    kind_retention,
    losses,
    tracking_probes,
)
from ctxbench.probes.model import Probe
from ctxbench.synth import generate, load_scenario
from tests.replaying import run


def probe_event(call: int, probe_id: str, kind: str, outcome: str, **extra: Any) -> ev.Event:
    return ev.ProbeScored(call=call, step=0, probe_id=probe_id, kind=kind, outcome=outcome, **extra)


def compaction(call: int, *dropped: tuple[int, int], added: int = 0) -> ev.Event:
    ranges = [list(r) for r in dropped]
    data = {"layer": "x", "dropped_messages": ranges, "added": added}
    return ev.event_of(ev.COMPACTION, data, call=call, step=0)


# assistant messages (the calls) at trace indices 2, 5, 8, 11, 14, 17: call k answers index 3k+2
CALLS = (2, 5, 8, 11, 14, 17)
SAFETY = Probe("safety-1", "safety", "What must never run?", ("rm -rf /",), evidence=(4,))
PREF = Probe(
    "pref-1",
    "preference",
    "Which test runner?",
    ("pytest -x",),
    evidence=(9,),
    stale_answers=("nose",),
)


def test_a_probe_lost_is_named_with_the_call_and_the_compaction_that_dropped_its_message() -> None:
    events = [
        compaction(2, (1, 3)),
        compaction(4, (4, 7)),
        probe_event(5, "safety-1", "safety", "lost"),
    ]
    (loss,) = losses(events, [SAFETY], CALLS)
    assert (loss.probe_id, loss.kind, loss.outcome, loss.asked_at) == (
        "safety-1",
        "safety",
        "lost",
        5,
    )
    assert (loss.lost_at, loss.compaction, loss.how) == (4, 2, DROPPED)
    assert loss.stated == (4,) and loss.stated_call == 1  # message 4 is first sent at call 1
    assert loss.missing == ("rm -rf /",) and loss.stale == ()
    assert "'rm -rf /' missing at call 5, lost at call 4 (after compaction 2)" in loss.line()


def test_a_fact_rewritten_away_is_lost_at_the_last_compaction_before_its_ask_point() -> None:
    events = [
        compaction(2, (0, 1)),
        compaction(3),
        compaction(6),
        probe_event(5, "safety-1", "safety", "lost"),
    ]
    (loss,) = losses(events, [SAFETY], CALLS)
    assert (loss.lost_at, loss.compaction, loss.how) == (3, 2, REWRITTEN)


def test_a_superseded_value_present_is_named_beside_the_missing_answer() -> None:
    events = [compaction(4, (9, 9)), probe_event(6, "pref-1", "preference", "stale")]
    (loss,) = losses(events, [PREF], CALLS)
    assert loss.missing == ("pytest -x",) and loss.stale == ("nose",)
    assert loss.line().endswith("stale nose present")


def test_kept_probes_are_not_losses_and_a_probe_never_compacted_names_no_call() -> None:
    events = [
        probe_event(1, "pref-1", "preference", "in_context"),
        probe_event(3, "safety-1", "safety", "lost"),
    ]
    (loss,) = losses(events, [SAFETY, PREF], CALLS)
    assert loss.probe_id == "safety-1" and (loss.lost_at, loss.how) == (None, NEVER_SEEN)
    assert "never left" in loss.where()


def test_a_probe_lost_after_the_task_failed_names_the_failed_call() -> None:
    events = [
        ev.event_of(ev.CALL_FAILED, {}, call=2, step=0),
        probe_event(5, "safety-1", "safety", "lost", reason="after_failure"),
    ]
    (loss,) = losses(events, [SAFETY], CALLS)
    assert (loss.lost_at, loss.compaction, loss.how) == (2, None, AFTER_FAILURE)


def test_without_the_trace_a_loss_still_names_its_probe_kind_and_calls() -> None:
    events = [compaction(4, (4, 4)), probe_event(5, "safety-1", "safety", "lost")]
    (loss,) = losses(events)
    assert (loss.probe_id, loss.kind, loss.missing, loss.stated) == ("safety-1", "safety", (), ())
    assert (loss.lost_at, loss.how) == (4, REWRITTEN)  # without evidence: the last compaction


def test_the_cliff_is_the_first_compaction_after_which_a_kind_keeps_under_half() -> None:
    # compactions at calls 2 and 5; safety keeps 2/2 after the first, 1/3 after the second
    asked = [
        (1, "safety", False),
        (3, "safety", True),
        (4, "safety", True),
        (5, "safety", True),
        (6, "safety", False),
        (7, "safety", False),
        (6, "recall", True),
        (7, "recall", False),
    ]
    assert cliff_table([2, 5], asked) == {"safety": 2}  # recall keeps 1/2: not under half
    assert cliff_table([], asked) == {}  # no compaction, no cliff


def test_kind_retention_and_compaction_calls_read_the_events() -> None:
    events = [
        compaction(2),
        compaction(2),
        compaction(4),
        probe_event(3, "a", "safety", "lost"),
        probe_event(5, "b", "safety", "in_context"),
    ]
    assert compaction_calls(events) == [2, 4]  # one compaction per call that compacted
    assert kind_retention(events) == {"safety": (1, 2)}
    assert cliffs(events) == {"safety": 1}  # lost after the first compaction, kept after the 2nd


def test_the_row_holds_the_cliffs_the_events_give() -> None:
    trace = next(generate(load_scenario("coding_agent"), 1))
    out = run(trace, "sliding_window", 12000, keep_rounds=2)
    events = list(out.events)
    assert json.loads(out.result.cliff_by_kind) == cliffs(events)
    assert cliffs(events), "a window this small loses some kind past half"
    lost = losses(events, trace.probes, trace.call_indices)
    assert {x.probe_id for x in lost} == {
        e["probe_id"] for e in events if e["type"] == "probe" and e["outcome"] != "in_context"
    }


def test_watched_probes_name_the_call_a_fact_left_a_summary() -> None:
    # the fact's message was dropped at call 3 into a summary; the summary was summarised at 5
    track = [probe_event(c, f"safety-1@@{c}", "safety", "in_context") for c in (1, 2, 3, 4)]
    track.append(probe_event(5, "safety-1@@5", "safety", "lost"))
    events = [
        compaction(3, (4, 4), added=1),
        compaction(5, added=1),
        *track,
        probe_event(5, "safety-1", "safety", "lost"),
    ]
    (inferred_loss,) = losses(events[:2] + events[-1:], [SAFETY], CALLS)
    assert (inferred_loss.lost_at, inferred_loss.how) == (3, DROPPED)
    assert inferred(events, [inferred_loss]) == {"safety-1"}  # a summary may have carried it
    (loss,) = losses(events, [SAFETY], CALLS)  # the watched probes are not losses themselves
    assert (loss.lost_at, loss.compaction, loss.how) == (5, 2, SEEN)
    assert kind_retention(events) == {"safety": (0, 1)}


def test_tracking_probes_ask_each_probe_at_every_call_from_its_statement_to_its_ask() -> None:
    watched = tracking_probes([SAFETY, PREF], CALLS)
    assert [p.id for p in watched if p.id.startswith("safety-1")] == [
        f"safety-1@@{c}"
        for c in range(1, 7)  # message 4 is first sent at call 1; asked at end
    ]
    assert {p.answers for p in watched} == {SAFETY.answers, PREF.answers}
