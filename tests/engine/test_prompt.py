"""Prompts a sweep's replays share: each answer the engine keeps on a prompt is worked out
once and is what a replay working it out alone would get."""

from __future__ import annotations

import functools
import gc
import operator
import weakref
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.counting import get_counter
from ctxbench.engine.caches import Caches, using
from ctxbench.engine.prompt import (
    PROMPTS,
    REF_BYTES,
    Change,
    Drops,
    Prompt,
    PromptTable,
    index_runs,
)
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.engine.view import ContextView
from ctxbench.strategies import build_strategy
from ctxbench.strategies.dbgpt import ledger
from ctxbench.trace import Message
from tests.factories import tool_trace
from tests.test_pairing import chunks_of

TRACE = tool_trace(40, output="a long tool output line\n" * 120)


def _replay(**params: object) -> ReplayOutput:
    return replay(
        TRACE,
        build_strategy("dbgpt", dict(params)),
        SimulatedProvider(8192, 0),
        true_counter=get_counter("tiktoken:o200k_base"),
        estimator=get_counter("dbgpt"),
    )


def _events(out: ReplayOutput) -> list[str]:
    return [e.to_json() for e in out.events]


def test_a_replay_of_shared_prompts_records_what_it_records_alone() -> None:
    for warning in (0.5, 0.6, 0.7):
        _replay(warning_threshold=warning, min_keep_recent_rounds=1)
    assert len(PROMPTS) > 0, "DB-GPT names its prompts"
    shared = _events(_replay(warning_threshold=0.55, min_keep_recent_rounds=2))
    ledger._CHAINS.clear()
    ledger._HISTORIES.clear()
    with using(Caches()) as fresh:  # no prompt, no shared memo
        alone = _events(_replay(warning_threshold=0.55, min_keep_recent_rounds=2))
        assert len(PROMPTS) == len(fresh.prompts) > 0
    assert any('"type":"compaction"' in e for e in alone)
    assert shared == alone


def test_the_same_replay_twice_records_the_same_events() -> None:
    first = _events(_replay(min_keep_recent_rounds=3))
    assert _events(_replay(min_keep_recent_rounds=3)) == first


def test_a_table_builds_a_prompt_once_per_key() -> None:
    table = PromptTable(limit=10_000)
    built: list[int] = []
    message = Message("user", "hi")

    def build() -> list[Message]:
        built.append(1)
        return [message, message]

    first = table.get(("k", 1), build)
    assert isinstance(first, Prompt) and list(first) == [message, message]
    assert table.get(("k", 1), build) is first
    assert len(built) == 1
    assert table.get(("k", 2), build) is not first


def _weight(length: int, size: int = 0) -> int:
    return REF_BYTES * (length + 1) + size


@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 8), st.integers(0, 300)), max_size=60))
def test_a_table_never_holds_more_than_its_limit(gets: list[tuple[int, int, int]]) -> None:
    """Whatever is asked, the weights of the prompts held (a reference per message plus what
    the builder says the prompt alone holds) stay within the limit, and the table's count is
    theirs."""
    limit = _weight(10)
    table = PromptTable(limit=limit)
    message = Message("user", "x")
    built: dict[int, tuple[int, int]] = {}
    for key, length, size in gets:
        held_before = key in table
        prompt = table.get(key, functools.partial(operator.mul, [message], length), size)
        if not held_before:
            built[key] = (len(prompt), size)
        if key in table:
            assert table.get(key, lambda: []) is prompt
        held = [_weight(*built[k]) for k in built if k in table]
        assert table.held == sum(held) <= limit


def test_a_full_table_keeps_a_cells_first_prompts_for_the_next_cell() -> None:
    """Past its limit, the table drops the newest prompts no other cell fetched: the next
    cell, asking in the same order, finds the first ones (least recently used first would
    leave it only the last ones, each evicted by its own misses before it got there)."""
    table = PromptTable(limit=_weight(1) * 3)
    messages = [Message("user", str(i)) for i in range(6)]
    first = [table.get(i, functools.partial(list, [m])) for i, m in enumerate(messages)]
    table.end_cell()
    found = [table.get(i, functools.partial(list, [m])) for i, m in enumerate(messages)]
    assert [a is b for a, b in zip(first, found)] == [True, True, False, False, False, False]
    assert found[3:] == first[3:]  # rebuilt, equal


def test_a_full_table_drops_the_shared_prompts_least_recently_fetched_first() -> None:
    table = PromptTable(limit=_weight(1) * 3)
    a, b, c = Message("user", "a"), Message("user", "b"), Message("user", "c")
    for key, m in (("a", a), ("b", b), ("c", c)):
        table.get(key, functools.partial(list, [m]))
    table.end_cell()
    kept = table.get("a", list)  # cell 1 fetches all three: shared
    table.get("b", list)
    table.get("c", list)
    assert table.get("a", list) is kept  # fetched again: "b" is now the least recent
    table.get("d", functools.partial(list, [a]))
    assert "b" not in table and "a" in table and "c" in table and "d" in table
    again = table.get("b", functools.partial(list, [b]))
    assert again == (b,) and isinstance(again, Prompt)


def test_a_size_given_by_a_function_of_the_prompt_counts_in_its_weight() -> None:
    table = PromptTable(limit=10_000)
    table.get("head", lambda: [Message("system", "x" * 100)], lambda p: len(p[0].content))
    assert table.held == _weight(1, 100)


def test_a_prompt_larger_than_the_table_is_built_but_not_held() -> None:
    table = PromptTable(limit=_weight(3))
    message = Message("user", "hi")
    kept = table.get("small", lambda: [message])
    big = table.get("big", lambda: [message] * 4)
    assert list(big) == [message] * 4
    assert "big" not in table and table.get("small", lambda: []) is kept


def test_a_prompt_no_cell_asked_for_in_the_last_cells_goes() -> None:
    table = PromptTable(limit=10**6, grace=1)
    message = Message("user", "m")
    table.get("shared", lambda: [message])
    table.get("first's own", lambda: [message])
    table.end_cell()  # cell 0 ends: what it built waits for cell 1
    assert "first's own" in table
    table.get("shared", lambda: [])  # cell 1 asks for one of them
    table.get("second's own", lambda: [message])
    table.end_cell()  # cell 1 ends: what it did not use goes
    assert "first's own" not in table
    assert "shared" in table and "second's own" in table
    table.get("shared", lambda: [])
    table.end_cell()  # cell 2 used only "shared"
    assert "second's own" not in table and "shared" in table
    assert table.held == _weight(1)
    table.end_cell()  # cell 3 used nothing: the run of cells sharing it is over
    assert len(table) == 0 and table.held == 0


def test_a_longer_grace_keeps_a_prompt_for_a_cell_further_on() -> None:
    table = PromptTable(limit=10**6, grace=2)
    kept = table.get("k", lambda: [Message("user", "m")])
    table.end_cell()
    table.end_cell()  # one cell in between asked for nothing
    assert table.get("k", lambda: []) is kept
    table.end_cell()
    table.end_cell()
    table.end_cell()
    assert "k" not in table


def test_a_table_outside_cells_keeps_its_prompts_to_its_limit() -> None:
    """One replay (no cells counted) forgets only by size."""
    table = PromptTable(limit=10**6)
    for i in range(50):
        table.get(i, lambda: [Message("user", "m")])
    assert len(table) == 50


def test_a_prompt_holds_no_prompt_so_one_forgotten_is_freed_without_the_collector() -> None:
    """What the engine keeps on a prompt about another (a change, the places standing in for
    it) is kept under the other's serial, and the view's counts without the prompt itself: a
    prompt dropped by the table goes at once, with no cycle left for the collector."""
    own = Message("user", "only this prompt holds me")
    others = [Message("user", str(i)) for i in range(20)]
    before = Prompt([own, *others])
    after = Prompt([Message("system", "s"), *others])
    view = ContextView(get_counter("chars4"), get_counter("chars4"))
    gone = weakref.ref(own)
    gc.disable()
    try:
        view.replace(before)
        view.replace(after)
        before.remember(after, True, None)
        after.remember(before, True, None)
        assert after.standing_in(before) == (0,) and before.standing_in(after) == (0,)
        assert before.change_to(after) == (True, None)
        del before, own
        view.replace(Prompt(others))
        view.replace(Prompt(others[:5]))  # the view's recent lists no longer hold it
        view.replace(Prompt(others[:3]))
        view.replace(Prompt(others[:2]))
        assert gone() is None
    finally:
        gc.enable()


def test_a_change_is_known_only_for_the_prompt_it_was_worked_out_for() -> None:
    before, after, other = Prompt([Message("user", "a")]), Prompt([]), Prompt([])
    change = Change(1, 0, 0, (((), (), (), ("k",)),))
    assert before.change_to(after) is None
    before.remember(after, True, change)
    assert before.change_to(after) == (True, change)
    assert before.change_to(other) is None


def test_a_change_is_kept_on_the_prompt_after_it_so_it_goes_with_that_prompt() -> None:
    """A prompt every configuration shows (DB-GPT's rebuilt memory) is followed by each
    configuration's own next prompt: the changes live on those, not on the shared one."""
    shared = Prompt([Message("user", "a")])
    mine, yours = Prompt([]), Prompt([Message("user", "b")])
    shared.remember(mine, True, None)
    shared.remember(yours, True, None)
    assert shared.changes == {}
    assert list(mine.changes) == [shared.serial] == list(yours.changes)
    assert shared.change_to(mine) == (True, None) and mine.change_to(shared) is None


def test_a_prompt_knows_which_places_stand_for_another_message() -> None:
    a, b, c = Message("user", "a"), Message("user", "b"), Message("system", "c")
    sources = Prompt([a, b])
    assert Prompt([c, b]).standing_in(sources) == (0,)
    assert Prompt([a, b]).standing_in(sources) == ()


def test_the_runs_of_a_change_are_new_lists_each_time() -> None:
    change = Change(3, 0, 0, ())
    runs = change.runs_of([[4, 2, 3], [None, 9]])
    assert runs == [[2, 4], [9, 9]]
    runs[0][0] = 99  # an event's list: changing it changes no other event's
    assert change.runs_of([[4, 2, 3], [None, 9]]) == [[2, 4], [9, 9]]
    assert change.runs_of([[1]]) == [[1, 1]]


def test_index_runs_by_example() -> None:
    assert index_runs([]) == []
    assert index_runs([5]) == [[5, 5]]
    assert index_runs([1, 2, 3, 7]) == [[1, 3], [7, 7]]
    assert index_runs([0, 2, 4]) == [[0, 0], [2, 2], [4, 4]]


@given(st.sets(st.integers(0, 200)))
def test_index_runs_cover_the_indices_and_nothing_else(indices: set[int]) -> None:
    runs = index_runs(sorted(indices))
    covered = [i for first, last in runs for i in range(first, last + 1)]
    assert covered == sorted(indices)
    assert all(b[0] > a[1] + 1 for a, b in pairwise(runs))  # runs never touch


@st.composite
def drops_call_by_call(draw: st.DrawFn) -> list[tuple[tuple[str, ...], dict[str, int]]]:
    """The keys a replay drops call after call, with what it has recorded by then: the oldest
    rounds of a growing history, a few of them rewritten (a new key, with the index of the
    key it stands for, or none yet), now and then a shorter run, keys moved, or a run of
    keys never seen; the replay records more keys as it goes (never forgetting one)."""
    recorded: dict[str, int] = {}
    keys: list[str] = []
    out = []
    for call in range(draw(st.integers(1, 10))):
        for i in range(len(keys), len(keys) + draw(st.integers(0, 12))):
            keys.append(f"k{i}")
            if draw(st.integers(0, 5)):
                recorded.setdefault(f"k{i}", draw(st.sampled_from([i, i, i, 2 * i, 3])))
        for i in draw(st.lists(st.integers(0, max(len(keys) - 1, 0)), max_size=3)):
            if i < len(keys):
                keys[i] = f"{keys[i]}/cut{call}"
                if draw(st.booleans()):
                    recorded.setdefault(keys[i], i)
        for key in draw(st.lists(st.sampled_from(keys), max_size=2)) if keys else []:
            recorded.setdefault(key, len(recorded) + 100)  # a key found only now
        shape = draw(st.sampled_from(["grown"] * 5 + ["shorter", "moved", "unknown"]))
        dropped = list(keys)
        if shape == "shorter":
            dropped = dropped[: draw(st.integers(0, len(dropped)))]
        elif shape == "moved" and len(dropped) > 2:
            dropped[0], dropped[-1] = dropped[-1], dropped[0]
        elif shape == "unknown":
            dropped = [f"u{call}.{i}" for i in range(len(dropped))]
        out.append((tuple(dropped), dict(recorded)))
    return out


@settings(max_examples=400, deadline=None)
@given(drops_call_by_call(), st.integers(1, 8))
def test_the_dropped_runs_carried_from_the_last_call_are_those_of_the_indices_found(
    calls: list[tuple[tuple[str, ...], dict[str, int]]], chunk: int
) -> None:
    drops = Drops()
    with chunks_of(chunk):
        for dropped, recorded in calls:
            found = sorted({recorded[k] for k in dropped if k in recorded})
            assert drops.runs(dropped, recorded) == index_runs(found)
