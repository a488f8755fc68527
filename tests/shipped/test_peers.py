"""The pip-installable peers on their released libraries: AutoGen's head-and-tail context
agrees with ctxbench's reproduction call for call; the token-limited context keeps a call whose
results it popped (AutoGen filters orphan results only), which the reproduction repairs; and
LangChain's own ``trim_messages`` trims with its own approximate counter."""

from __future__ import annotations

from typing import Any

from ctxbench import parity
from ctxbench.shipped.releases import AUTOGEN_HEAD_TAIL, LANGCHAIN_CORE
from tests.shipped_cases import check_invariants, needs, replay_events, scenario_trace


@needs(AUTOGEN_HEAD_TAIL)
def test_autogen_head_tail_release_matches_the_reproduction() -> None:
    traces = [scenario_trace("coding_agent", 40), scenario_trace("sql_agent", 30)]
    results = parity.parity(
        traces, "autogen_head_tail", "shipped:autogen_head_tail@0.7.5", window=16_384
    )
    assert all(r.calls > 20 and r.agreeing == r.calls for r in results)
    assert all(r.first_divergence is None for r in results)


@needs(AUTOGEN_HEAD_TAIL)
def test_autogen_token_limited_release_leaves_calls_whose_results_it_popped() -> None:
    trace = scenario_trace("coding_agent", 40, seed=1)
    ours = replay_events(trace, "autogen_token_limited", 16_384, reserved=4096)
    repaired = replay_events(
        trace, "autogen_token_limited", 16_384, reserved=4096, repair_pairs=True
    )
    theirs = replay_events(trace, "shipped:autogen_token_limited@0.7.5", 16_384, reserved=4096)

    def violations(events: list[dict[str, Any]]) -> int:
        return sum(e["pairing_violations"] for e in events if e["type"] == "compaction")

    # the release sends broken pairs; so does the faithful reproduction; only the repair knob
    # (off by default) hides them
    assert violations(theirs) > 0 and violations(ours) > 0
    assert violations(repaired) == 0
    check_invariants(theirs)


@needs(LANGCHAIN_CORE)
def test_langchain_trim_messages_runs_the_library() -> None:
    events = replay_events(
        scenario_trace("coding_agent", 40, seed=1), "shipped:langchain_trim@1.8.3", 16_384
    )
    start = next(e for e in events if e["type"] == "shipped")
    assert start["framework_version"] == "1.8.3"
    trims = [e for e in events if e["type"] == "compaction"]
    assert trims and {e["layer"] for e in trims} == {"trim_messages"}
    # include_system defaults to False in trim_messages: the system prompt goes with the rest
    assert any(not e["system_kept"] for e in trims)
    check_invariants(events)
