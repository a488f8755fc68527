"""``ObjectMemo``: a value computed once per object, looked up for a whole list in C.

A replay puts the same message objects through the same questions at every call (its
counts, its pairing signature, its stored form): a strategy that rebuilds its whole prompt at
every call (DB-GPT 0.8.2) asks them of hundreds of messages per call. The memo keys values by
``id`` and holds each object, so an id is never reused while its value is kept; a list's
values come from one ``map`` over the ids, and only the objects not seen before run Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import compress, count, repeat
from operator import is_
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_MISSING: object = object()


class ObjectMemo(Generic[K, V]):
    """``compute(obj)`` once per object (by identity, not equality)."""

    def __init__(self, compute: Callable[[K], V]) -> None:
        self._compute = compute
        self._values: dict[int, V] = {}
        self._held: list[K] = []  # keeps every keyed object alive, so its id stays its own

    def __call__(self, obj: K) -> V:
        value = self._values.get(id(obj), _MISSING)
        if value is _MISSING:
            value = self._values[id(obj)] = self._compute(obj)
            self._held.append(obj)
        return value  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self._values)

    def many(self, objs: Sequence[K]) -> list[V]:
        """``[self(o) for o in objs]``, in C for the objects already seen."""
        out: list[object] = list(map(self._values.get, map(id, objs), repeat(_MISSING)))
        for i in _positions(out, _MISSING):
            out[i] = self(objs[i])
        return out  # type: ignore[return-value]


def _positions(values: list[object], target: object) -> Iterable[int]:
    """The positions holding ``target`` (by identity), found in C."""
    return list(compress(count(), map(is_, values, repeat(target))))
