"""Probe outcomes through real replays of generated traces: the ceiling (``none``), a small
sliding window (early facts lost, late ones kept), and DB-GPT's Layer 1 snapshot pointers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ctxbench.counting import get_counter
from ctxbench.counting.base import TokenCounter
from ctxbench.engine import events as ev
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.pairing import rounds
from ctxbench.strategies import build_strategy
from ctxbench.synth import generate, load_scenario
from ctxbench.trace import Message, Trace

CHARS4 = get_counter("chars4")
HUGE = 50_000_000


def run(
    trace: Trace, strategy: str, window: int, counter: TokenCounter = CHARS4, **params: object
) -> ReplayOutput:
    return replay(
        trace,
        build_strategy(strategy, params),
        SimulatedProvider(window, 4096),
        true_counter=counter,
        estimator=counter,
    )


def outcomes(output: ReplayOutput) -> dict[str, str]:
    return {e.data["probe_id"]: e.data["outcome"] for e in output.events if e.type == ev.PROBE}


@pytest.mark.parametrize(
    "name",
    ["coding_agent", "sql_agent", "support_agent", "research_agent", "cjk_agent", "long_horizon"],
)
def test_none_with_a_window_larger_than_the_trace_keeps_every_probe(name: str) -> None:
    trace = next(generate(load_scenario(name), 1))
    output = run(trace, "none", HUGE)
    assert outcomes(output) == {p.id: "in_context" for p in trace.probes}
    assert output.result.retention == 1.0 and output.result.failed_calls == 0


@pytest.mark.parametrize("name", ["sql_agent", "cjk_agent"])
def test_none_keeps_every_probe_with_the_real_tokenizer_too(name: str) -> None:
    trace = next(generate(load_scenario(name), 2))
    output = run(trace, "none", HUGE, counter=get_counter("tiktoken:o200k_base"))
    assert set(outcomes(output).values()) == {"in_context"}


def _expected_under_window(trace: Trace, keep_rounds: int) -> dict[str, str]:
    """What a sliding window of ``keep_rounds`` must show at each probe's ask point."""
    calls = trace.call_indices
    expected = {}
    for probe in trace.probes:
        end = (
            len(trace.messages)
            if probe.ask_at is None or probe.ask_at >= len(calls)
            else calls[probe.ask_at]
        )
        prefix: Sequence[Message] = trace.messages[:end]
        kept = {i for i, m in enumerate(prefix) if m.role == "system"}
        for r in rounds(prefix)[-keep_rounds:]:
            kept.update(r.indices)
        stale = set(probe.meta.get("stale_evidence", ()))
        if kept & set(probe.evidence):
            expected[probe.id] = "in_context"
        elif kept & stale:
            expected[probe.id] = "stale"
        else:
            expected[probe.id] = "lost"
    return expected


@pytest.mark.parametrize("name", ["coding_agent", "sql_agent", "support_agent"])
def test_a_small_sliding_window_loses_early_facts_and_keeps_late_ones(name: str) -> None:
    kept_late = 0
    for trace in generate(load_scenario(name), 4, count=3):
        got = outcomes(run(trace, "sliding_window", HUGE, keep_rounds=4))
        assert got == _expected_under_window(trace, 4)
        third = len(trace.messages) // 3
        for probe in trace.probes:
            if probe.ask_at is not None or probe.evidence in ((0,), (1,)):
                continue
            if max(probe.evidence) < third:
                assert got[probe.id] == "lost", (
                    f"{probe.id} planted early survived a 4-round window"
                )
            if min(probe.evidence) >= trace.call_indices[-4]:  # the last 4 rounds
                assert got[probe.id] == "in_context", (
                    f"{probe.id} planted in the last rounds was dropped"
                )
                kept_late += 1
        system_rules = [p.id for p in trace.probes if p.evidence == (0,)]
        assert all(got[i] == "in_context" for i in system_rules), "the system prompt is always kept"
    assert kept_late


def test_dbgpt_layer1_turns_truncated_facts_into_via_reference() -> None:
    """Layer 1 cuts old observations to 200 chars plus a pointer to the step's snapshot; a fact
    past the cut is then recoverable from the snapshot file but no longer in the prompt."""
    spec = load_scenario("sql_agent")
    via = 0
    for trace in generate(spec, 0, count=3):
        plain = outcomes(run(trace, "none", HUGE))
        params: dict[str, Any] = {"persist_tool_results": False}
        with_snapshots = run(trace, "dbgpt", 65536, **params, snapshots=True)
        without = outcomes(run(trace, "dbgpt", 65536, **params, snapshots=False))
        layers = {e.data["layer"] for e in with_snapshots.events if e.type == ev.COMPACTION}
        assert "layer1" in layers, "the window puts the run in warning state"
        for probe_id, outcome in outcomes(with_snapshots).items():
            if outcome == "via_reference":
                via += 1
                assert plain[probe_id] == "in_context"
                assert without[probe_id] == "lost", "without the snapshot pointer the fact is gone"
    assert via >= 1
