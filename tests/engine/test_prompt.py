"""Prompts a sweep's replays share: each answer the engine keeps on a prompt is worked out
once and is what a replay working it out alone would get."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.counting import get_counter
from ctxbench.engine.caches import Caches, using
from ctxbench.engine.prompt import PROMPTS, Change, Drops, Prompt, PromptTable, index_runs
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import ReplayOutput, replay
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
    table = PromptTable(limit=100)
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


def test_a_full_table_starts_again_and_the_prompts_in_use_live_on() -> None:
    table = PromptTable(limit=10)
    message = Message("user", "hi")
    first = table.get("a", lambda: [message] * 6)
    second = table.get("b", lambda: [message] * 6)  # 7 + 7 > 10: the table starts again
    assert len(table) == 1
    assert list(first) == [message] * 6  # still whole for whoever holds it
    assert table.get("b", lambda: []) is second
    assert table.get("a", lambda: [message]) is not first  # rebuilt


def test_a_change_is_known_only_for_the_prompt_it_was_worked_out_for() -> None:
    before, after, other = Prompt([Message("user", "a")]), Prompt([]), Prompt([])
    change = Change(1, 0, 0, (((), (), (), ("k",)),))
    assert before.change_to(after) is None
    before.remember(after, True, change)
    assert before.change_to(after) == (True, change)
    assert before.change_to(other) is None


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
