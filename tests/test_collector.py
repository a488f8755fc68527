"""The collector is paced while replays and sweeps run, and put back as it was; a finished
replay is freed by reference counting (what makes a rarer collection cost no memory)."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest

from ctxbench.collector import YOUNG_THRESHOLD, paced
from ctxbench.counting import get_counter
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import replay
from ctxbench.strategies import STRATEGIES, build_strategy
from ctxbench.summarizers import build_summarizer
from tests.factories import tool_trace

TRACE = tool_trace(30, output="a long tool output line\n" * 120)


@pytest.fixture(autouse=True)
def default_thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_a_block_collects_young_objects_less_often_and_puts_the_thresholds_back() -> None:
    with paced():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_nested_blocks_keep_the_outer_setting_until_the_outermost_ends() -> None:
    with paced():
        with paced():
            pass
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD  # the inner end changed nothing
    assert gc.get_threshold()[0] == 700


def test_a_higher_threshold_and_a_disabled_collection_are_kept() -> None:
    gc.set_threshold(YOUNG_THRESHOLD * 4, 5, 5)
    with paced():
        assert gc.get_threshold() == (YOUNG_THRESHOLD * 4, 5, 5)
    gc.set_threshold(0)
    with paced():
        assert gc.get_threshold()[0] == 0
    assert gc.get_threshold()[0] == 0


def test_the_thresholds_come_back_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), paced():
        raise RuntimeError("a cell failed")
    assert gc.get_threshold() == (700, 10, 10)


def test_threads_share_the_setting_until_the_last_block_ends() -> None:
    entered, release = threading.Event(), threading.Event()

    def worker() -> None:
        with paced():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=worker)
    with paced():
        thread.start()
        entered.wait(10)
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD  # the worker's block still runs
    release.set()
    thread.join(10)
    assert gc.get_threshold()[0] == 700


@pytest.mark.parametrize("name", STRATEGIES.names())
def test_a_finished_replay_is_freed_without_a_collection(name: str) -> None:
    """No reference cycle holds a strategy, its context or their events: a cycle would keep
    every finished cell of a sweep alive until a full collection (DB-GPT's ledger once held a
    closure over both)."""
    strategy = build_strategy(name, {})
    counter = get_counter("tiktoken:o200k_base")
    gc.collect()
    gc.disable()
    try:
        output = replay(
            TRACE,
            strategy,
            SimulatedProvider(8192, 0),
            true_counter=counter,
            estimator=get_counter("dbgpt"),
            summarizer=build_summarizer("extractive", {}),
        )
        assert any(e.type == "provider.call" for e in output.events)
        gone = weakref.ref(strategy)
        del strategy, output
        assert gone() is None
    finally:
        gc.enable()


def test_dbgpt_compacts_the_trace_the_strategies_are_freed_after() -> None:
    """The trace above makes DB-GPT compact: its ledger and prompts were built and freed."""
    output = replay(
        TRACE,
        build_strategy("dbgpt", {}),
        SimulatedProvider(8192, 0),
        true_counter=get_counter("tiktoken:o200k_base"),
        estimator=get_counter("dbgpt"),
    )
    assert any(e.type == "compaction" for e in output.events)
