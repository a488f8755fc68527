"""Lost facts: probes some runs lost, where they entered the trace, who lost them."""

from __future__ import annotations

from ctxbench.probes.model import Probe
from ctxbench.report.lost import lost_facts
from ctxbench.report.results import ProbeOutcome
from tests.factories import tool_trace

PROBE = Probe("p1", "artifact", "Which output came first?", ("ok 0.0",), evidence=(3,))


def outcome(outcome: str, probe: str = "p1") -> ProbeOutcome:
    return ProbeOutcome(probe, "artifact", outcome)


def test_a_lost_probe_lists_its_question_round_and_the_configurations_that_lost_it() -> None:
    trace = tool_trace(4, probes=(PROBE,))
    outcomes = [
        ("t", "sliding_window @8,192", outcome("lost")),
        ("t", "sliding_window @8,192", outcome("lost")),
        ("t", "dbgpt @8,192", outcome("in_context")),
        ("t", "dbgpt @8,192", outcome("lost")),
        ("t", "dbgpt @8,192", outcome("in_context", probe="p2")),
    ]
    (fact,) = lost_facts(outcomes, {"t": trace})
    assert (fact.probe_id, fact.runs, fact.lost, fact.stale) == ("p1", 4, 3, 0)
    assert fact.lost_by == (("sliding_window @8,192", 2, 2), ("dbgpt @8,192", 1, 2))
    assert fact.question == "Which output came first?"
    assert fact.evidence == (3,)
    # messages: system, user, then round 0 = (assistant 2, tool 3)
    assert fact.evidence_rounds == (0,)


def test_without_the_trace_the_fact_keeps_its_counts_and_says_nothing_else() -> None:
    (fact,) = lost_facts([("gone", "none @1", outcome("stale"))], {})
    assert (fact.stale, fact.lost, fact.lost_by) == (1, 0, ())
    assert fact.question is None


def test_probes_always_kept_are_not_listed_and_the_most_lost_come_first() -> None:
    outcomes = [
        ("t", "a", outcome("in_context", "kept")),
        ("t", "a", outcome("lost", "once")),
        ("t", "a", outcome("lost", "twice")),
        ("t", "b", outcome("lost", "twice")),
    ]
    assert [f.probe_id for f in lost_facts(outcomes, {})] == ["twice", "once"]
