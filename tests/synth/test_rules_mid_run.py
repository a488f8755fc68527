"""Constraints, safety rules and preferences arrive where real ones do: in user messages mid-run,
on a later line, a preference sometimes changed later. So keeping the system prompt keeps only
some of them (in 4 of 5 scenarios every constraint used to sit in the system prompt)."""

from __future__ import annotations

import json

import pytest

from ctxbench.probes.model import Probe
from ctxbench.synth import generate, load_scenario
from ctxbench.trace import Trace
from tests.replaying import run

SCENARIOS = ("coding_agent", "sql_agent", "support_agent", "cjk_agent", "research_agent")
RULES = ("constraint", "safety", "preference")


def mid_run(trace: Trace, probe: Probe) -> bool:
    """Every message holding the probe's answer is a user message after the opening."""
    first_user = next(i for i, m in enumerate(trace.messages) if m.role == "user")
    return all(trace.messages[i].role == "user" and i > first_user for i in probe.evidence)


@pytest.mark.parametrize("name", [*SCENARIOS, "long_horizon"])
def test_every_scenario_plants_rules_in_user_messages_mid_run(name: str) -> None:
    trace = next(generate(load_scenario(name), 1))
    if load_scenario(name).format == "react_text":  # its user speaks in the task message
        first_user = next(i for i, m in enumerate(trace.messages) if m.role == "user")
        in_task = {p.kind for p in trace.probes if p.kind in RULES and first_user in p.evidence}
        assert {"constraint", "safety", "preference"} <= in_task
        return
    kinds = {p.kind for p in trace.probes if p.kind in RULES and mid_run(trace, p)}
    assert {"constraint", "safety", "preference"} <= kinds
    for probe in trace.probes:
        if probe.kind in ("safety", "preference") and mid_run(trace, probe):
            message = trace.messages[probe.evidence[-1]].content
            assert probe.answers[0] not in message.splitlines()[0], "on a later line"


def test_a_changed_preference_keeps_its_old_value_as_stale() -> None:
    changed = [
        (trace, p)
        for seed in range(6)
        for trace in generate(load_scenario("coding_agent"), seed)
        for p in trace.probes
        if p.kind == "preference" and p.stale_answers
    ]
    assert changed
    for trace, probe in changed:
        old = [i for i, m in enumerate(trace.messages) if probe.stale_answers[0] in m.content]
        assert old and max(old) < min(probe.evidence), "the old value comes first"


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_sliding_window_keeping_the_system_prompt_loses_rules_given_mid_run(name: str) -> None:
    trace = next(generate(load_scenario(name), 1))
    row = run(trace, "sliding_window", 10**6).result
    kept = json.loads(row.retention_by_kind)
    assert row.system_kept
    assert kept["constraint"] < 1.0, kept  # it used to be 1.0: every rule in the system prompt
