"""A sweep's replays of one trace share what DB-GPT derives from its messages (the results
citing their snapshot, Layer 1's cuts, their counts) through the sweep's memos
(:mod:`ctxbench.engine.caches`); what a replay records does not depend on which replays ran
before it."""

from __future__ import annotations

import json

from ctxbench.counting import get_counter
from ctxbench.engine.caches import Caches, using
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.strategies import build_strategy
from ctxbench.trace import Trace
from tests.factories import tool_trace

TRACE: Trace = tool_trace(40, output="a long tool output line\n" * 120)


def _replay(**params: object) -> ReplayOutput:
    counter = get_counter("tiktoken:o200k_base")
    return replay(
        TRACE,
        build_strategy("dbgpt", dict(params)),
        SimulatedProvider(8192, 0),
        true_counter=counter,
        estimator=get_counter("dbgpt"),
    )


def _events(out: ReplayOutput) -> list[str]:
    return [json.dumps([e.type, e.call, e.data], sort_keys=True) for e in out.events]


def test_a_second_configuration_holds_the_first_ones_derived_messages() -> None:
    first = _replay(min_keep_recent_rounds=1)
    second = _replay(min_keep_recent_rounds=2)
    cut = [m for m in first.final_view if "[truncated" in m.content]
    assert cut, "the trace is long enough for Layer 1 to cut"
    shared = {id(m) for m in second.final_view}
    assert all(id(m) in shared for m in cut[-3:])  # the same objects, not equal copies


def test_what_a_replay_records_does_not_depend_on_the_replays_before_it() -> None:
    _replay(min_keep_recent_rounds=1, warning_threshold=0.5)
    after_another = _events(_replay(min_keep_recent_rounds=3))
    with using(Caches()):  # no shared memo
        alone = _events(_replay(min_keep_recent_rounds=3))
    assert after_another == alone


def test_two_configurations_share_the_ledgers_history() -> None:
    """The counts, round ends and cuts of the history are worked out by the first replay that
    reaches a message; a replay under other thresholds reads them."""
    strategies = [build_strategy("dbgpt", {"warning_threshold": w}) for w in (0.5, 0.7)]
    counter = get_counter("tiktoken:o200k_base")
    for strategy in strategies:
        replay(
            TRACE,
            strategy,
            SimulatedProvider(8192, 0),
            true_counter=counter,
            estimator=get_counter("dbgpt"),
        )
    first, second = (s._ledger for s in strategies)  # type: ignore[attr-defined]
    assert first is not None and second is not None
    assert first._h is second._h and len(first) == len(second) > 0
