"""Rounds and tool pairing: segmentation of tool-calling and ReAct traces, pairing defects."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench import pairing
from ctxbench.pairing import PairingMemo, pairing_violations, rounds
from ctxbench.trace import Message, ToolCall, Trace
from ctxbench.validation import validate
from tests.factories import react_trace, tool_trace, valid_messages


@contextmanager
def chunks_of(size: int) -> Iterator[None]:
    """Lists read ``size`` items at a time, so that short lists cross chunks."""
    saved, pairing.CHUNK = pairing.CHUNK, size
    try:
        yield
    finally:
        pairing.CHUNK = saved


def test_a_tool_round_is_the_assistant_and_the_results_of_all_its_parallel_calls() -> None:
    trace = tool_trace(2, calls=3)
    segs = rounds(trace)
    # user + assistant + 3 results; then assistant + 3 results; then the final answer
    assert [len(r.indices) for r in segs] == [5, 4, 1]
    assert all(trace.messages[i].role != "system" for r in segs for i in r.indices)


def test_a_react_round_closes_at_an_observation_message() -> None:
    trace = react_trace(3)
    segs = rounds(trace)
    assert [len(r.indices) for r in segs] == [3, 2, 2, 1]
    assert [trace.messages[r.last].is_observation for r in segs[:3]] == [True, True, True]


def test_trailing_messages_form_an_incomplete_round() -> None:
    msgs = (Message("user", "a"), Message("assistant", "b", tool_calls=(ToolCall("1", "t"),)))
    segs = rounds(msgs)
    assert len(segs) == 1 and segs[0].complete


def test_system_messages_belong_to_no_round() -> None:
    msgs = (
        Message("system", "s"),
        Message("user", "u"),
        Message("system", "mid"),
        Message("assistant", "a"),
    )
    segs = rounds(msgs)
    assert [r.indices for r in segs] == [(1, 3)]


@settings(max_examples=300, deadline=None)
@given(valid_messages())
def test_rounds_cover_every_non_system_message_once_and_never_split_a_tool_pair(
    msgs: list[Message],
) -> None:
    segs = rounds(msgs)
    seen = [i for r in segs for i in r.indices]
    assert sorted(seen) == [i for i, m in enumerate(msgs) if m.role != "system"]
    assert len(seen) == len(set(seen))
    round_of = {i: r.index for r in segs for i in r.indices}
    call_round = {c.id: round_of[i] for i, m in enumerate(msgs) for c in m.tool_calls}
    for i, m in enumerate(msgs):
        if m.role == "tool":
            assert m.tool_call_id is not None
            assert round_of[i] == call_round[m.tool_call_id]
    assert [r.index for r in segs] == list(range(len(segs)))


@settings(max_examples=200, deadline=None)
@given(valid_messages())
def test_random_valid_conversations_validate_clean_and_have_no_pairing_violations(
    msgs: list[Message],
) -> None:
    trace = Trace("x", tuple(msgs) or (Message("user", "hi"),))
    assert validate(trace) == []
    assert pairing_violations(trace.messages) == 0


def test_pairing_violations_count_orphans_missing_results_and_separated_results() -> None:
    call = Message("assistant", "", tool_calls=(ToolCall("a", "f"), ToolCall("b", "f")))
    assert (
        pairing_violations(
            [call, Message("tool", "r", tool_call_id="a"), Message("tool", "r", tool_call_id="b")]
        )
        == 0
    )
    assert pairing_violations([call, Message("tool", "r", tool_call_id="a")]) == 1
    assert pairing_violations([Message("tool", "r", tool_call_id="a")]) == 1
    assert (
        pairing_violations(
            [
                call,
                Message("user", "x"),
                Message("tool", "r", tool_call_id="a"),
                Message("tool", "r", tool_call_id="b"),
            ]
        )
        == 2
    )


@st.composite
def growing_prompts(draw: st.DrawFn) -> list[list[Message]]:
    """Prompts a replay checks one after another: each extends an earlier one, or is a new
    list of messages from the same pool (a compaction), with calls and results that may be
    orphaned, repeated or out of place, and messages rewritten with their signature kept."""
    pool: list[Message] = [Message("system", "s"), Message("user", "u")]
    for i in range(6):
        ids = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=2, unique=True))
        pool.append(Message("assistant", f"x{i}", tool_calls=tuple(ToolCall(c, "t") for c in ids)))
    pool += [Message("tool", f"r{c}", tool_call_id=c) for c in ("a", "b", "c", "d", None)]
    twins = {id(m): m.with_text(f"{m.content} cut") for m in pool}
    pool += twins.values()  # other messages, same signatures
    picks = st.lists(st.sampled_from(pool), max_size=12)
    prompts = [draw(picks)]
    for _ in range(draw(st.integers(0, 6))):
        base = draw(st.sampled_from(prompts))
        shape = draw(st.sampled_from(["extended", "new", "twins", "twins but one"]))
        if shape.startswith("twins"):  # every message another of its signature, and more
            twin = [twins.get(id(m), m) for m in base]
            if shape == "twins but one" and twin:  # one of them of any signature
                twin[draw(st.integers(0, len(twin) - 1))] = draw(st.sampled_from(pool))
            prompts.append(twin + draw(picks))
        else:
            prompts.append(base + draw(picks) if shape == "extended" else draw(picks))
    return prompts


@settings(max_examples=300, deadline=None)
@given(growing_prompts(), st.integers(1, 6))
def test_the_pairing_memo_counts_every_prompt_as_a_fresh_check_would(
    prompts: list[list[Message]], chunk: int
) -> None:
    memo = PairingMemo()
    with chunks_of(chunk):
        found = [memo.violations(p) for p in prompts]
    assert found == [pairing_violations(p) for p in prompts]


def test_the_calls_of_a_last_assistant_message_are_the_runs_end_not_missing_results() -> None:
    done = Message("assistant", "", tool_calls=(ToolCall("s", "submit"),))
    head = [
        Message("user", "u"),
        Message("assistant", "", tool_calls=(ToolCall("a", "f"),)),
        Message("tool", "r", tool_call_id="a"),
    ]
    assert pairing_violations([*head, done]) == 0
    assert PairingMemo().violations([*head, done]) == 0
    # the same call anywhere but last still misses its result
    assert pairing_violations([*head, done, Message("user", "and then?")]) == 1
    # and a result cut from the middle of a run is missing whatever ends the prompt
    assert pairing_violations([*head[:2], done]) == 1


@settings(max_examples=300, deadline=None)
@given(growing_prompts())
def test_validate_and_the_replays_pairing_check_count_the_same_defects(
    prompts: list[list[Message]],
) -> None:
    pairing_codes = {"orphan_tool_result", "missing_tool_result", "tool_not_adjacent"}
    for prompt in prompts:
        trace = Trace("x", tuple(prompt) or (Message("user", "hi"),))
        found = [p for p in validate(trace) if p.code in pairing_codes]
        assert len(found) == pairing_violations(trace.messages)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from("abcd"), max_size=30),
    st.lists(st.tuples(st.integers(0, 35), st.sampled_from(["a", "copy", "new"])), max_size=8),
    st.integers(1, 6),
    st.integers(0, 10),
)
def test_changed_places_hold_every_difference_and_only_other_objects(
    base: list[str], edits: list[tuple[int, str]], chunk: int, most: int
) -> None:
    """Equal objects that are not the same may or may not be named; a different one always is."""
    x = [f"k{i}{key}" for i, key in enumerate(base)]
    y = list(x)
    for place, edit in edits:
        if place < len(y):
            y[place] = "".join(["k", y[place]])[1:] if edit == "copy" else f"{edit}{place}"
    y += ["tail"] * (len(edits) % 3)
    with chunks_of(chunk):
        places = pairing.changed_places(x, y, most)
    differ = [i for i in range(len(x)) if x[i] != y[i]]
    others = [i for i in range(len(x)) if x[i] is not y[i]]
    if places is None:
        assert len(others) > most
    else:
        assert set(differ) <= set(places) <= set(others)
        assert places == sorted(places) and len(places) <= most
    if len(differ) > most:
        assert places is None


def test_a_prompt_unlike_every_held_one_place_by_place_is_read_from_one_of_its_signatures() -> None:
    """Every message another object (the chunks all differ), and the signatures the same but
    for the last: the held check does not extend to it."""
    held = [Message("user" if i % 2 else "assistant", f"m{i}") for i in range(20)]
    twins = [m.with_text(f"{m.content} cut") for m in held]
    orphan = Message("tool", "a result of no call", tool_call_id="zz")
    memo = PairingMemo()
    assert memo.violations(held) == 0
    assert memo.violations([*twins[:-1], orphan]) == 1
    assert memo.violations([*twins, orphan]) == 1  # the twins extend the first prompt
