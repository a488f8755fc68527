"""``ObjectMemo``: one computation per object, by identity, for a single object or a list;
``ContentMemo``: one per content, within a limit; ``shared_memo``: one ``ObjectMemo`` per
question in the current table."""

from __future__ import annotations

import functools
import gc

from hypothesis import given
from hypothesis import strategies as st

from ctxbench.memo import ContentMemo, MemoTable, ObjectMemo, shared_memo, using_memos


class Box:
    """An object equal to any other box of the same value (so identity is what tells apart)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Box) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


def test_a_value_is_computed_once_per_object_and_equal_objects_are_computed_apart() -> None:
    calls: list[int] = []

    def compute(box: Box) -> int:
        calls.append(box.value)
        return box.value * 10

    memo: ObjectMemo[Box, int] = ObjectMemo(compute)
    a, b = Box(1), Box(1)
    assert memo(a) == memo(a) == 10
    assert memo(b) == 10
    assert calls == [1, 1]  # a once, b (equal, not the same) once
    assert len(memo) == 2


@given(st.lists(st.integers(0, 5), max_size=30), st.lists(st.integers(0, 5), max_size=30))
def test_many_is_the_value_of_each_object_whether_seen_before_or_not(
    first: list[int], second: list[int]
) -> None:
    pool = [Box(v) for v in range(6)]
    calls: list[int] = []

    def compute(box: Box) -> str:
        calls.append(box.value)
        return f"v{box.value}"

    memo: ObjectMemo[Box, str] = ObjectMemo(compute)
    for values in (first, second):
        boxes = [pool[v] for v in values]
        assert memo.many(boxes) == [f"v{box.value}" for box in boxes]
    assert sorted(calls) == sorted(set(first) | set(second))  # each object computed once


def test_a_value_can_be_none_and_is_not_mistaken_for_a_missing_one() -> None:
    calls: list[int] = []
    memo: ObjectMemo[Box, None] = ObjectMemo(lambda box: calls.append(box.value))
    box = Box(3)
    assert memo.many([box, box]) == [None, None]
    assert memo.many([box]) == [None]
    assert calls == [3]


def test_an_object_is_not_kept_alive_and_its_value_goes_with_it() -> None:
    calls: list[int] = []

    def compute(box: Box) -> int:
        calls.append(box.value)
        return box.value

    memo: ObjectMemo[Box, int] = ObjectMemo(compute)
    for value in range(200):
        box = Box(value)
        assert memo(box) == value
        assert memo.many([box, box]) == [value, value]
        del box
        # the young generation only: a box is freed by its reference count (a full collection
        # here walked the whole suite's heap 200 times: 490 s of a loaded run)
        gc.collect(0)
    assert len(memo) == 0  # every box collected, its value forgotten
    assert calls == list(range(200))  # none given a collected box's value, though ids recur
    kept = [Box(v) for v in range(5)]
    assert memo.many(kept) == list(range(5)) and len(memo) == 5


def test_an_object_without_weak_references_is_held_while_the_memo_lives() -> None:
    memo: ObjectMemo[tuple[int, ...], int] = ObjectMemo(len)
    key = tuple(range(3))
    assert memo(key) == 3
    assert memo.many([key, (1,)]) == [3, 1]
    assert len(memo) == 2


def test_a_value_that_is_its_own_object_does_not_keep_it_alive() -> None:
    memo: ObjectMemo[Box, Box] = ObjectMemo(lambda box: box if box.value % 2 else Box(-box.value))
    boxes = [Box(v) for v in range(4)]
    out = memo.many(boxes)
    assert out[1] is boxes[1] and out[3] is boxes[3] and memo(boxes[1]) is boxes[1]
    assert out[0] is not boxes[0] and out[2].value == -2
    del boxes, out
    gc.collect()
    assert len(memo) == 0


def test_a_content_memo_computes_once_per_content_and_holds_at_most_its_limit() -> None:
    calls: list[str] = []

    def upper(text: str) -> str:
        calls.append(text)
        return text.upper()

    memo: ContentMemo[str, str] = ContentMemo(limit=100)
    for text in ("ab", "cd", "ab", "ab"):
        assert memo.get(text, functools.partial(upper, text), size=10) == text.upper()
    assert calls == ["ab", "cd"] and len(memo) == 2
    for i in range(30):  # 300 units of content through a memo of 100
        assert memo.get(f"k{i}", functools.partial(upper, f"k{i}"), size=10) == f"K{i}"
    assert len(memo) <= 10
    assert memo.get("k29", lambda: "not computed again", size=10) == "K29"


def test_a_shared_memo_is_one_per_key_of_the_current_table() -> None:
    first: ObjectMemo[Box, int] = shared_memo(("test.shared", 1), lambda box: box.value)
    again: ObjectMemo[Box, int] = shared_memo(("test.shared", 1), lambda box: -1)
    other: ObjectMemo[Box, int] = shared_memo(("test.shared", 2), lambda box: -1)
    box = Box(3)
    assert first is again and first(box) == again(box) == 3  # the first compute stays
    assert other is not first and other(box) == -1


def test_the_shared_memos_start_again_past_their_limit_and_those_in_use_still_answer() -> None:
    def value(box: Box) -> int:
        return box.value

    def seven(box: Box) -> int:
        return 7

    with using_memos(MemoTable()) as table:
        held = shared_memo(("test.limit", -1), value)
        for i in range(table.limit):
            shared_memo(("test.limit", i), seven)
        assert len(table) < table.limit
        assert held(Box(5)) == 5
        assert shared_memo(("test.limit", -1), seven)(Box(5)) == 7  # made anew
