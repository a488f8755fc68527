"""CI's parity subset for DB-GPT: ``dbgpt`` (release 0.8.2) against ``shipped:dbgpt@0.8.2`` on
every embedded scenario and one recorded trace of each shared source (their first 24 rounds,
``tests/shipped_cases.py``), at two windows, with issue 17's thresholds: the same compaction
decision at >= 99% of calls, the same first compaction on >= 95% of traces, the same failed
calls. One driver process serves the whole batch (the pool of ``ctxbench.shipped.process``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxbench import parity
from ctxbench.shipped.releases import DBGPT
from tests.shipped_cases import SCENARIOS, SOURCES, needs, recorded_trace, scenario_trace

pytestmark = needs(DBGPT)

WINDOWS = (8_192, 16_384)
REPRODUCTION = "dbgpt"
SHIPPED = "shipped:dbgpt@0.8.2"


def _first_compaction(side: parity.Side) -> int | None:
    return next((c.call for c in side.calls if c.layers), None)


@pytest.fixture(scope="module")
def compared(
    shared_traces: Path,
) -> dict[int, list[tuple[parity.TraceParity, int | None, int | None]]]:
    """Per window: each trace's call-by-call comparison and both sides' first compaction."""
    subset = [scenario_trace(name) for name in SCENARIOS]
    subset += [recorded_trace(shared_traces, source) for source in SOURCES]
    out: dict[int, list[tuple[parity.TraceParity, int | None, int | None]]] = {}
    for window in WINDOWS:
        rows = []
        for trace in subset:
            sides = [
                parity.replay_side(
                    trace, s, window=window, reserved=1024, counter="tiktoken:o200k_base"
                )
                for s in (REPRODUCTION, SHIPPED)
            ]
            row = parity.compare(trace.id, *sides, window=window)
            rows.append((row, _first_compaction(sides[0]), _first_compaction(sides[1])))
        out[window] = rows
    return out


@pytest.mark.parametrize("window", WINDOWS)
def test_both_sides_replay_every_trace_and_the_release_compacts(
    compared: dict[int, list[tuple[parity.TraceParity, int | None, int | None]]], window: int
) -> None:
    rows = compared[window]
    assert [r.error for r, _, _ in rows] == [None] * len(rows)
    assert all(r.calls > 0 for r, _, _ in rows)
    # the subset exercises compaction: a parity that holds only because nothing compacts
    # would say nothing
    assert sum(1 for _, _, shipped in rows if shipped is not None) >= len(rows) // 3


@pytest.mark.parametrize("window", WINDOWS)
def test_the_same_compaction_decision_at_99_percent_of_calls(
    compared: dict[int, list[tuple[parity.TraceParity, int | None, int | None]]], window: int
) -> None:
    rows = [r for r, _, _ in compared[window]]
    share = sum(r.same_compacted for r in rows) / sum(r.calls for r in rows)
    differing = {r.trace_id: r.first_divergence for r in rows if r.same_compacted < r.calls}
    assert share >= 0.99, differing


@pytest.mark.parametrize("window", WINDOWS)
def test_the_same_first_compaction_on_95_percent_of_traces(
    compared: dict[int, list[tuple[parity.TraceParity, int | None, int | None]]], window: int
) -> None:
    rows = compared[window]
    differing = {r.trace_id: (a, b) for r, a, b in rows if a != b}
    assert len(rows) - len(differing) >= 0.95 * len(rows), differing


@pytest.mark.parametrize("window", WINDOWS)
def test_the_same_failed_calls(
    compared: dict[int, list[tuple[parity.TraceParity, int | None, int | None]]], window: int
) -> None:
    rows = [r for r, _, _ in compared[window]]
    assert {r.trace_id: r.first_divergence for r in rows if r.same_failed < r.calls} == {}


#: a Claude Code session whose calls 31-36 re-derive, at 32k, the prompt the model saw last
REPEATING = "marot+spotter/test/fixtures/transcripts/258c7280-ae70-4798-800f-63464d01a85d.jsonl"


def test_memory_managed_back_into_the_last_prompt_is_no_compaction(shared_traces: Path) -> None:
    """0.8.2 rebuilds its prompt from memory at every call. When managing it gives again what
    the model saw last (plus what arrived since), the model's prompt did not change: neither
    side records a compaction, though Layer 2 ran again."""
    trace = recorded_trace(shared_traces, REPEATING, n_rounds=60)
    sides = [
        parity.replay_side(trace, s, window=32_768, reserved=4096, counter="tiktoken:o200k_base")
        for s in (REPRODUCTION, SHIPPED)
    ]
    row = parity.compare(trace.id, *sides, window=32_768)
    assert _first_compaction(sides[1]) is not None
    assert row.same_compacted == row.calls, row.first_divergence
