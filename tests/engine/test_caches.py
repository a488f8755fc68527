"""``Caches``: what a sweep's replays share, in one object the sweep owns; the current one is
what strategies read (``PROMPTS``, ``shared_memo``), and a replay's events do not depend on it."""

from __future__ import annotations

import pytest

from ctxbench.cell.runner import run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.engine import replay as replay_module
from ctxbench.engine.caches import Caches, current, using
from ctxbench.engine.prompt import PROMPTS
from ctxbench.memo import current_memos, shared_memo
from ctxbench.probes.model import Probe
from ctxbench.probes.needed import Use, needed_uses
from ctxbench.sweep.task import forget_trace_caches, trace_caches
from ctxbench.trace import Message, Trace
from tests.factories import tool_trace
from tests.probes.test_needed import airline_trace


def test_using_makes_the_caches_current_for_the_block_only() -> None:
    outer = current()
    mine = Caches()
    with using(mine) as active:
        assert active is mine and current() is mine
        with using(None) as kept:  # None keeps the current ones
            assert kept is mine
        PROMPTS.get(("test.caches",), lambda: [Message("user", "x")])
        assert len(mine.prompts) == 1
        assert shared_memo(("test.caches",), len) is mine.memo(("test.caches",), len)
        assert current_memos() is mine.memos
    assert current() is outer and current_memos() is outer.memos
    assert len(PROMPTS) == len(outer.prompts)


def test_a_content_memo_is_one_per_name() -> None:
    caches = Caches()
    assert caches.content("a", 100) is caches.content("a", 100)
    assert caches.content("a", 100) is not caches.content("b", 100)
    assert caches.content("a", 100) is not Caches().content("a", 100)


def test_a_process_keeps_the_caches_of_one_trace_at_a_time() -> None:
    first = trace_caches("trace-1")
    assert trace_caches("trace-1") is first
    second = trace_caches("trace-2")
    assert second is not first and trace_caches("trace-2") is second
    assert trace_caches("trace-1") is not first  # dropped when trace-2 came
    forget_trace_caches()
    assert trace_caches("trace-1") is not first


def test_a_cell_gives_the_same_events_under_shared_fresh_and_the_process_caches() -> None:
    probes = tuple(
        Probe(f"p{i}", "fact", "which file?", ("src/app.py",), ask_at=at)
        for i, at in enumerate((5, 15, 25, None))
    )
    trace = tool_trace(30, output="a long tool output line\n" * 80, probes=probes)
    spec = RunSpec(
        trace_source="memory",
        trace_id=trace.id,
        trace_hash="",
        strategy="dbgpt",
        params={"warning_threshold": 0.6},
        window=8192,
        reserved=512,
        counter="chars4",
    )
    shared = Caches()
    first = run_spec(spec, trace, caches=shared)
    again = run_spec(spec, trace, caches=shared)  # every prompt found in the caches
    fresh = run_spec(spec, trace, caches=Caches())
    process = run_spec(spec, trace)
    assert len(shared.prompts) > 0 and len(shared.scoring) > 0
    events = [[e.to_json() for e in out.events] for out in (first, again, fresh, process)]
    assert events[0] == events[1] == events[2] == events[3]
    assert any('"type":"compaction"' in e for e in events[0])
    assert sum('"type":"probe"' in e for e in events[0]) == 4


def test_a_traces_needed_values_are_found_once_per_caches_from_the_first_dropped_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trace = airline_trace()
    found: list[tuple[str, int]] = []

    def counted(trace: Trace, start: int = 0) -> tuple[Use, ...]:
        found.append((trace.id, start))
        return needed_uses(trace, start)

    monkeypatch.setattr(replay_module, "needed_uses", counted)

    def spec(strategy: str, **params: object) -> RunSpec:
        return RunSpec(
            trace_source="memory",
            trace_id=trace.id,
            trace_hash="",
            strategy=strategy,
            params=params,
            window=8192,
            reserved=512,
            counter="chars4",
        )

    run_spec(spec("none"), trace, caches=Caches())
    assert found == []  # every prompt shows every recorded message: no value can be gone
    sliding = spec("sliding_window", keep_rounds=1)
    shared = Caches()
    first = run_spec(sliding, trace, caches=shared)
    again = run_spec(sliding, trace, caches=shared)
    [(_, start)] = found  # the second replay read them from the caches
    assert 0 < start == trace.call_indices[2]  # the first call whose prompt dropped a round
    kept = shared.content("engine.replay.uses_by_call", 1).peek(trace.content_hash)
    assert kept is not None and kept.start == start
    flat = [u for uses in kept.by_call.values() for u, _ in uses]
    assert flat == [u for u in needed_uses(trace) if u.message >= start] != []
    fresh = run_spec(sliding, trace, caches=Caches())
    assert found == [(trace.id, start)] * 2
    events = [[e.to_json() for e in out.events] for out in (first, again, fresh)]
    assert events[0] == events[1] == events[2]
