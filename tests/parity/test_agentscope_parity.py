"""Parity of ``agentscope`` (release 2.0.11) with ``shipped:agentscope@2.0.11`` on the CI subset
of the parity table (``make parity``): every embedded scenario and a recorded trace of every
shared source, at 8k and 32k windows. Issue 17's bar: the same compaction decisions at >= 99 %
of calls, the same first compaction on >= 95 % of traces, the same failed calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxbench import parity
from ctxbench.shipped import process
from ctxbench.shipped.releases import AGENTSCOPE
from ctxbench.trace import Message, Trace
from tests.factories import tool_round
from tests.shipped_cases import SCENARIOS, SOURCES, needs, recorded_trace, scenario_trace

pytestmark = needs(AGENTSCOPE)
WINDOWS = (8_192, 32_768)


@pytest.fixture(scope="module")
def subset(shared_traces: Path) -> list[Trace]:
    return [scenario_trace(name) for name in SCENARIOS] + [
        recorded_trace(shared_traces, source) for source in SOURCES
    ]


@pytest.fixture(scope="module", params=WINDOWS, ids=lambda w: f"{w // 1024}k")
def results(request: pytest.FixtureRequest, subset: list[Trace]) -> list[parity.TraceParity]:
    out = parity.parity(
        subset, "agentscope", "shipped:agentscope@2.0.11", window=request.param, reserved=1024
    )
    process.shutdown()
    return out


def test_no_side_errors(results: list[parity.TraceParity]) -> None:
    assert [r.error for r in results if r.error] == []


def test_the_same_compaction_decisions_at_99_percent_of_calls(
    results: list[parity.TraceParity],
) -> None:
    summary = parity.overall(results)
    assert summary["calls"] > 200
    assert summary["same_compacted"] >= 0.99, [
        (r.trace_id, r.first_divergence) for r in results if r.same_compacted < r.calls
    ]


def test_the_same_first_compaction_on_95_percent_of_traces(
    results: list[parity.TraceParity],
) -> None:
    assert parity.overall(results)["same_first_compaction"] >= 0.95, [
        (r.trace_id, r.first_compaction) for r in results
    ]
    assert any(r.first_compaction[0] is not None for r in results)  # the subset compacts


def test_the_same_failed_calls(results: list[parity.TraceParity]) -> None:
    assert [(r.trace_id, r.failed) for r in results if r.same_failed < r.calls] == []


def test_a_turn_the_compression_cuts_is_kept_on_both_sides_at_every_call() -> None:
    """The compression cuts a boundary turn after its text; its tool call stays. The release
    keeps that block in the turn's ``Msg`` and the adaptor names the turn once the prompt is
    re-assembled (here by the last-iteration hint, ``max_iters`` 9: astropy-12907's call 50 at
    16k); the reproduction names it from the compression on, and so must the release's side."""
    msgs = [Message("system", "You are a careful agent."), Message("user", "Fix the bug")]
    for i in range(12):
        msgs += tool_round(i, thought=f"thinking {i} " + "x" * 600, output="ok " * 20)
    trace = Trace("cut", (*msgs, Message("assistant", "All done.")))
    sides = [
        parity.replay_side(trace, strategy, window=1500, reserved=0,
                           counter="tiktoken:o200k_base", params={"max_iters": 9})
        for strategy in ("agentscope", "shipped:agentscope@2.0.11")
    ]  # fmt: skip
    process.shutdown()
    result = parity.compare(trace.id, *sides, window=1500)
    assert result.first_compaction == (7, 7)  # the cut happens, and before the hint
    assert (result.same_kept, result.agreeing) == (result.calls, result.calls), (
        result.first_divergence
    )
    later = [c for c in sides[1].calls if c.call >= 7]
    turn = later[0].kept[1]  # the first message kept after the system prompt
    assert msgs[turn].tool_calls and msgs[turn].content  # the turn whose text was compressed
    assert all(turn in c.kept for c in later)
