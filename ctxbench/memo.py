"""``ObjectMemo``: a value computed once per object, looked up for a whole list in C;
``ContentMemo``: a value computed once per content, within a limit; ``shared_memo``: an
``ObjectMemo`` of the current :class:`MemoTable` (a sweep's), shared by the replays that ask
the same question.

A replay puts the same message objects through the same questions at every call (its
counts, its pairing signature, its stored form): a strategy that rebuilds its whole prompt at
every call (DB-GPT 0.8.2) asks them of hundreds of messages per call. The memo keys values by
``id``; a list's values come from one ``map`` over the ids, and only the objects not seen
before run Python.

An id is an object's only while the object lives, so the memo watches each object with a weak
reference and forgets its value when it is collected (before its id can be given to another).
It does not keep objects alive: DB-GPT 0.8.2 makes a new system prompt at every call (the task
progress grows by a line), and holding those would grow memory with the square of a run's
length. An object that takes no weak reference is held for the memo's life instead, and a
value that is its object itself (a Layer 1 "cut" that leaves a message as it is) is kept as a
mark, so a value never keeps its own object alive.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import compress, count, repeat
from operator import is_
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_MISSING: object = object()
_ITSELF: object = object()  # the value is the object itself


class _Watch(weakref.ref[Any]):
    """A weak reference that forgets its object's value when the object goes: the key and
    the memo's dicts in two slots, one callback for all (a closure per object cost three
    times the memory: a DB-GPT replay's memos watch ~90k objects at 3,000 rounds)."""

    __slots__ = ("dicts", "key")

    def __new__(cls, obj: object, key: int, dicts: tuple[dict[int, Any], dict[int, Any]]) -> _Watch:
        return super().__new__(cls, obj, _forget)

    def __init__(self, obj: object, key: int, dicts: tuple[dict[int, Any], dict[int, Any]]) -> None:
        self.key = key
        self.dicts = dicts


def _forget(watch: _Watch) -> None:
    """Forget the value of the object ``watch`` watched (it was collected)."""
    values, watching = watch.dicts
    values.pop(watch.key, None)
    watching.pop(watch.key, None)


class ObjectMemo(Generic[K, V]):
    """``compute(obj)`` once per object (by identity, not equality)."""

    def __init__(self, compute: Callable[[K], V]) -> None:
        self._compute = compute
        self._values: dict[int, object] = {}  # a V, or ``_ITSELF``
        #: what keeps each id its object's: a weak reference that forgets the value when the
        #: object goes, or (for an object that takes none) the object itself
        self._watch: dict[int, Any] = {}
        self._itself = False  # whether some value is its own object (kept as ``_ITSELF``)
        self._dicts = (self._values, self._watch)  # what a watch forgets from

    def __call__(self, obj: K) -> V:
        key = id(obj)
        value = self._values.get(key, _MISSING)
        if value is _ITSELF:
            return obj  # type: ignore[return-value]
        if value is _MISSING:
            value = self._compute(obj)
            itself = value is obj
            self._values[key] = _ITSELF if itself else value
            self._itself = self._itself or itself
            try:
                self._watch[key] = _Watch(obj, key, self._dicts)
            except TypeError:  # no weak references to it: keep it, so its id stays its own
                self._watch[key] = obj
        return value  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self._values)

    def many(self, objs: Sequence[K]) -> list[V]:
        """``[self(o) for o in objs]``, in C for the objects already seen."""
        if len(objs) < 3:  # a call or two cost less than the passes below
            return [self(o) for o in objs]
        out: list[object] = list(map(self._values.get, map(id, objs), repeat(_MISSING)))
        for i in _positions(out, _MISSING):
            out[i] = self(objs[i])
        if self._itself:
            for i in _positions(out, _ITSELF):
                out[i] = objs[i]
        return out  # type: ignore[return-value]


class ContentMemo(Generic[K, V]):
    """Values of a pure function of hashable content, kept for the process: a sweep's replays
    build objects with the same content again (DB-GPT 0.8.2's system prompt with its task
    progress, a snapshot's file), and a value computed from content (a fingerprint, a
    rendered file) is the same each time. Forgetting a value changes nothing but time, so
    the memo holds at most ``limit`` bytes of content (each entry's ``size``: what its key
    and value hold, by ``sys.getsizeof``) and then starts again: memory stays bounded however
    long the sweep."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._values: dict[K, V] = {}
        self._held = 0

    def get(self, key: K, compute: Callable[[], V], size: int) -> V:
        """The value of ``key``, from ``compute()`` the first time (``size``: what it holds)."""
        found = self._values.get(key, _MISSING)
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        value = compute()
        self.put(key, value, size)
        return value

    def peek(self, key: K) -> V | None:
        """The value of ``key`` when the memo holds one, else None."""
        return self._values.get(key)

    def put(self, key: K, value: V, size: int) -> None:
        """Hold ``value`` for ``key`` (``size``: what it holds)."""
        if self._held + size > self.limit:
            self._values.clear()
            self._held = 0
        self._values[key] = value
        self._held += size

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        self._values.clear()
        self._held = 0


class MemoTable:
    """Shared :class:`ObjectMemo` s by what they compute (:func:`shared_memo`); past ``limit``
    keys (a program building counters by the hundred) it starts again. A sweep owns one in its
    :class:`~ctxbench.engine.caches.Caches`."""

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._memos: dict[Hashable, ObjectMemo[Any, Any]] = {}

    def memo(self, key: Hashable, compute: Callable[[K], V]) -> ObjectMemo[K, V]:
        """The memo of ``compute`` under ``key``, made at the first call."""
        memo = self._memos.get(key)
        if memo is None:
            if len(self._memos) >= self.limit:
                self._memos.clear()  # the memos in use live on with their users
            memo = self._memos[key] = ObjectMemo(compute)
        return memo

    def __len__(self) -> int:
        return len(self._memos)


#: the process's table, read where no caller made another current
_PROCESS_TABLE = MemoTable()
_TABLE: ContextVar[MemoTable] = ContextVar("ctxbench_memos")


def shared_memo(key: Hashable, compute: Callable[[K], V]) -> ObjectMemo[K, V]:
    """The :class:`ObjectMemo` of ``compute`` under ``key`` in the current table (a sweep's,
    :func:`using_memos`; else the process's), made at the first call.

    A sweep's replays of one trace put the same message objects (the trace's, and those a
    shared memo made of them) through the same questions; a shared memo answers each once,
    not once per replay. ``key`` must name everything ``compute`` reads besides the object
    (the rules, a limit, a counter), and ``compute`` must hold nothing of one replay (a bound
    method of a strategy would keep the first one alive)."""
    return _TABLE.get(_PROCESS_TABLE).memo(key, compute)


def current_memos() -> MemoTable:
    """The table :func:`shared_memo` reads now."""
    return _TABLE.get(_PROCESS_TABLE)


@contextmanager
def using_memos(table: MemoTable) -> Iterator[MemoTable]:
    """Make ``table`` the one :func:`shared_memo` reads for the block."""
    token = _TABLE.set(table)
    try:
        yield table
    finally:
        _TABLE.reset(token)


def _positions(values: list[object], target: object) -> Iterable[int]:
    """The positions holding ``target`` (by identity), found in C."""
    return list(compress(count(), map(is_, values, repeat(target))))
