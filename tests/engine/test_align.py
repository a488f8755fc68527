"""The compaction alignment is difflib's, whichever path computes it."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.engine import align
from tests.test_pairing import chunks_of


def _difflib(a: list[str], b: list[str]) -> list[align.Opcode]:
    return difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()


@st.composite
def compactions(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """A list of unique keys and what a compaction makes of it: runs dropped, rewritten (new
    keys) or inserted, sometimes with a key repeated or two kept keys swapped."""
    n = draw(st.integers(0, 40))
    before = [f"m{i}" for i in range(n)]
    after: list[str] = []
    fresh = 0
    for key in before:
        action = draw(st.sampled_from(["keep", "keep", "keep", "drop", "rewrite", "insert"]))
        if action == "keep":
            after.append(key)
        elif action == "rewrite":
            after.append(f"new{fresh}")
            fresh += 1
        elif action == "insert":
            after += [f"new{fresh}", key]
            fresh += 1
    repeat: bool = draw(st.booleans())
    if after and repeat:
        after.insert(draw(st.integers(0, len(after))), draw(st.sampled_from(after)))
    if len(after) > 1 and draw(st.integers(0, 4)) == 0:
        i, j = sorted(draw(st.lists(st.integers(0, len(after) - 1), min_size=2, max_size=2)))
        after[i], after[j] = after[j], after[i]
    return before, after


@settings(max_examples=400, deadline=None)
@given(compactions())
def test_opcodes_are_difflibs_on_every_compaction_shape(pair: tuple[list[str], list[str]]) -> None:
    before, after = pair
    assert align.opcodes(before, after) == _difflib(before, after)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from("abcde"), max_size=12), st.lists(st.sampled_from("abcde"), max_size=12)
)
def test_opcodes_are_difflibs_on_repeating_keys(a: list[str], b: list[str]) -> None:
    assert align.opcodes(a, b) == _difflib(a, b)


def test_the_one_pass_path_takes_unique_keys_in_order_and_refuses_the_rest() -> None:
    assert align._monotone_blocks(["a", "b", "c", "d"], ["a", "x", "c", "d"]) == [
        (0, 0, 1),
        (2, 2, 2),
    ]
    assert align._monotone_blocks(["a", "b"], ["b", "a"]) is None  # reordered
    assert align._monotone_blocks(["a", "a"], ["a"]) is None  # repeated before
    assert align._monotone_blocks(["a"], ["a", "a"]) is None  # repeated after


def test_a_long_rebuilt_prompt_aligns_in_one_pass() -> None:
    """Every old observation cut and the oldest rounds dropped: the shape DB-GPT 0.8.2 applies
    at every call, on which difflib is quadratic."""
    before = [f"m{i}" for i in range(3000)]
    after = [f"cut{i}" if i % 2 else f"m{i}" for i in range(1000, 3000)]
    assert align._monotone_blocks(before, after) is not None
    assert align.opcodes(before, after) == _difflib(before, after)


@st.composite
def one_run_changes(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """A list and the same list with one run dropped, inserted or replaced, the new run's
    keys sometimes taken from the old list (where the head-and-tail path must step aside)."""
    n = draw(st.integers(0, 30))
    before = [f"m{i}" for i in range(n)]
    i = draw(st.integers(0, n))
    j = draw(st.integers(i, n))
    fresh = [f"new{k}" for k in range(draw(st.integers(0, 4)))]
    reused = draw(st.lists(st.sampled_from(before), max_size=2)) if before else []
    return before, before[:i] + fresh + reused + before[j:]


@settings(max_examples=400, deadline=None)
@given(one_run_changes())
def test_opcodes_are_difflibs_when_one_run_changed(pair: tuple[list[str], list[str]]) -> None:
    before, after = pair
    assert align.opcodes(before, after) == _difflib(before, after)


def test_the_head_and_tail_path_takes_one_changed_run_and_refuses_the_rest() -> None:
    keys = ["s", "a", "b", "c", "d"]
    assert align._one_change(keys, ["s", "c", "d"]) == [(0, 0, 1), (3, 1, 2)]  # a run dropped
    assert align._one_change(keys, ["s", "x", "a", "b", "c", "d"]) == [(0, 0, 1), (1, 2, 4)]
    assert align._one_change(keys, ["s", "x", "d"]) == [(0, 0, 1), (4, 2, 1)]  # replaced
    assert align._one_change(keys, ["s", "b", "x", "d"]) is None  # b kept inside the change
    assert align._one_change(["a", "a"], ["a"]) is None  # a repeated key


@given(st.lists(st.sampled_from("abc"), max_size=8), st.lists(st.sampled_from("abc"), max_size=8))
def test_equal_head_counts_the_leading_keys_both_share(a: list[str], b: list[str]) -> None:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    assert align.equal_head(a, b) == n
    assert align.equal_head(a, b, 2) == min(n, 2)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from("abc"), max_size=20),
    st.lists(st.sampled_from("abc"), max_size=20),
    st.integers(1, 5),
    st.integers(0, 25),
    st.booleans(),
)
def test_equal_head_and_tail_read_a_chunk_at_a_time_as_item_by_item(
    a: list[str], b: list[str], chunk: int, limit: int, as_tuple: bool
) -> None:
    def head(x: list[str], y: list[str], most: int) -> int:
        n = 0
        while n < min(most, len(x), len(y)) and x[n] == y[n]:
            n += 1
        return n

    other: Sequence[str] = tuple(b) if as_tuple else b  # a tuple never equals a list
    with chunks_of(chunk):
        assert align.equal_head(a, other) == head(a, b, len(a))
        assert align.equal_head(a, other, limit) == head(a, b, limit)
        assert align.equal_tail(a, other, limit) == head(a[::-1], b[::-1], limit)


@settings(max_examples=400, deadline=None)
@given(one_run_changes(), st.integers(1, 6))
def test_an_alignment_from_a_list_known_unique_is_difflibs(
    pair: tuple[list[str], list[str]], chunk: int
) -> None:
    """The sets spared for a list known unique change nothing; whenever the one-pass paths
    answer, both lists are unique."""
    before, after = pair
    with chunks_of(chunk):
        found, unique = align.aligned(before, after, unique=True)
        assert found == _difflib(before, after)
        assert align.aligned(after, before, unique=len(set(after)) == len(after))[0] == _difflib(
            after, before
        )
    if unique:
        assert len(set(after)) == len(after)
