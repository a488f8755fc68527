"""``ObjectMemo``: one computation per object, by identity, for a single object or a list."""

from __future__ import annotations

import gc

from hypothesis import given
from hypothesis import strategies as st

from ctxbench.memo import ObjectMemo


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


def test_an_object_is_held_so_a_new_object_never_gets_a_dead_ones_value() -> None:
    memo: ObjectMemo[Box, int] = ObjectMemo(lambda box: box.value)
    ids = set()
    for value in range(200):
        box = Box(value)
        ids.add(id(box))
        assert memo(box) == value
        del box
        gc.collect()
    assert len(ids) == 200  # every box kept alive, so no id was reused
    assert len(memo) == 200
