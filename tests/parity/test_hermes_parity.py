"""CI parity subset for Hermes: ``hermes`` at ``release="0.19.0"`` against the released
``shipped:hermes@0.19.0`` on one recorded trace of each shared source and every embedded
scenario, at two windows, held to issue 17's thresholds: the same compaction decision at >= 99%
of calls, the same first compaction on >= 95% of traces, the same failed calls. One pooled
driver process serves the whole batch."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ctxbench import parity
from ctxbench.shipped import process
from ctxbench.shipped.releases import HERMES
from ctxbench.trace import Trace
from tests.shipped_cases import SCENARIOS, SOURCES, needs, recorded_trace, scenario_trace

SHARED = os.environ.get("CTXBENCH_TRACES")
pytestmark = [
    needs(HERMES),
    pytest.mark.skipif(not SHARED, reason="CTXBENCH_TRACES is not set (shared recorded traces)"),
]
REPRODUCTION = "hermes"
SHIPPED = "shipped:hermes@0.19.0"
WINDOWS = (8_192, 32_768)
RESERVED = 1024
COUNTER = "tiktoken:o200k_base"


@dataclass(frozen=True)
class Pair:
    """Both sides of one trace at one window."""

    trace_id: str
    window: int
    reproduction: parity.Side
    shipped: parity.Side

    @property
    def result(self) -> parity.TraceParity:
        return parity.compare(self.trace_id, self.reproduction, self.shipped, window=self.window)


def _first_compaction(side: parity.Side) -> int | None:
    return next((c.call for c in side.calls if c.layers), None)


def _subset() -> list[Trace]:
    assert SHARED is not None
    return [scenario_trace(name, 40) for name in SCENARIOS] + [
        recorded_trace(Path(SHARED), source, 40) for source in SOURCES
    ]


@pytest.fixture(scope="module")
def pairs() -> Any:
    out = [
        Pair(
            trace.id,
            window,
            *(
                parity.replay_side(
                    trace, strategy, window=window, reserved=RESERVED, counter=COUNTER
                )
                for strategy in (REPRODUCTION, SHIPPED)
            ),
        )
        for trace in _subset()
        for window in WINDOWS
    ]
    yield out
    process.shutdown()


@pytest.mark.parametrize("window", WINDOWS)
def test_the_same_compaction_decision_at_99_percent_of_calls(
    pairs: list[Pair], window: int
) -> None:
    results = [p.result for p in pairs if p.window == window]
    assert all(r.error is None for r in results), [r.error for r in results if r.error]
    calls = sum(r.calls for r in results)
    assert calls >= 100  # the subset exercises the loop, not a handful of calls
    same = sum(r.same_compacted for r in results)
    assert same >= 0.99 * calls, [r.first_divergence for r in results if r.first_divergence]


@pytest.mark.parametrize("window", WINDOWS)
def test_the_same_first_compaction_on_95_percent_of_traces(pairs: list[Pair], window: int) -> None:
    at = [p for p in pairs if p.window == window]
    firsts = [(_first_compaction(p.reproduction), _first_compaction(p.shipped)) for p in at]
    assert any(a is not None for a, _ in firsts)  # something compacts at this window
    same = sum(1 for a, b in firsts if a == b)
    differing = [(p.trace_id, f) for p, f in zip(at, firsts, strict=True) if f[0] != f[1]]
    assert same >= 0.95 * len(at), differing


@pytest.mark.parametrize("window", WINDOWS)
def test_the_same_failed_calls(pairs: list[Pair], window: int) -> None:
    for pair in (p for p in pairs if p.window == window):
        result = pair.result
        assert result.same_failed == result.calls, (pair.trace_id, result.first_divergence)


@pytest.mark.parametrize("window", WINDOWS)
def test_the_same_trace_messages_kept_at_99_percent_of_calls(
    pairs: list[Pair], window: int
) -> None:
    """A rewrite (a pruned result, the tail message a summary was merged into) keeps its trace
    index on both sides by one rule: the reproduction declares what each message stands for
    as the driver identifies the release's copies."""
    results = [p.result for p in pairs if p.window == window]
    calls = sum(r.calls for r in results)
    same = sum(r.same_kept for r in results)
    assert same >= 0.99 * calls, [r.first_divergence for r in results if r.same_kept < r.calls]
