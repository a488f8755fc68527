"""``EventTexts``: the JSON lines of events, the part before ``call`` and ``step`` written once
for the events that hold the same values (:meth:`ctxbench.engine.events.Event.to_json`).

A sweep's cells replay one trace under many configurations and record much the same events:
DB-GPT 0.8.2 writes the same snapshot at every configuration's call, and the status, layer
and provider events of the prompts the configurations share (about 2,000 events a cell of a
300-round trace, where writing them was a sixth of a cell's time). The text of an event's
values (everything but ``call`` and ``step``) is kept under a key that gives the same text
whenever it is equal: the values, their types (``1``, ``1.0`` and ``True`` are equal but
written apart), the exact text of the floats when a value is zero (``-0.0 == 0.0``), and a
list, tuple or dict as its JSON text; values of any other type (a subclass, a plug-in's
object) are written each time. Bounded by :data:`LIMIT` texts in two halves: the newer takes the texts
written or found since it started, the older goes when the newer is full (forgetting
changes nothing but time).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, NamedTuple


class Plan(NamedTuple):
    """How the events of one class are written (made once per class by the events module)."""

    #: the keys of the line before ``call`` and ``step``: ``type``, then the data fields
    keys: tuple[str, ...]
    #: the line's values before ``call`` and ``step`` (the type name first), of an event
    values: Callable[[Any], tuple[Any, ...]]
    #: (name, default) of the fields written only when they differ from their default
    optional: tuple[tuple[str, Any], ...]


#: what a tuple of the values' types asks of a key: nothing more (``_PLAIN``), no key at all
#: (``_UNKNOWN``: a type the JSON encoder may not write the same for equal values), or the
#: places of the floats and of the lists, tuples and dicts
_Kind = tuple[tuple[int, ...], tuple[int, ...]]
_PLAIN: _Kind = ((), ())
_UNKNOWN: _Kind = ((-1,), ())
_SCALARS = frozenset({str, int, bool, type(None)})
_NESTED = frozenset({list, tuple, dict})
_KINDS: dict[tuple[type, ...], _Kind] = {}
_KINDS_LIMIT = 1 << 12


def _kind(types: tuple[type, ...]) -> _Kind:
    if not all(t in _SCALARS or t is float or t in _NESTED for t in types):
        return _UNKNOWN
    floats = tuple(i for i, t in enumerate(types) if t is float)
    nested = tuple(i for i, t in enumerate(types) if t in _NESTED)
    return (floats, nested) if floats or nested else _PLAIN


#: how many texts :class:`EventTexts` keeps before it starts again (about two cells of a 300-round DB-GPT trace, under 2 MB)
LIMIT = 1 << 12


class EventTexts:
    """The JSON lines of events (:meth:`text`), with the texts of their values kept."""

    def __init__(self, encode: Callable[[Any], str], limit: int = LIMIT) -> None:
        self._encode = encode
        self._limit = limit
        #: the texts written or read since the last turn, and those of the turn before
        self._texts: dict[Hashable, str] = {}
        self._older: dict[Hashable, str] = {}

    def text(self, event: Any, plan: Plan) -> str:
        """``event``'s JSON line: ``{"type", the data fields, "call", "step"}`` in that order,
        the optional fields left out at their default (what ``compact_json(event.to_dict())``
        writes)."""
        values = plan.values(event)
        key = self._key(values)
        head = None
        if key is not None:
            head = self._texts.get(key)
            if head is None and (head := self._older.get(key)) is not None:
                self._keep(key, head)
        if head is None:
            out = dict(zip(plan.keys, values))
            for name, default in plan.optional:
                if out[name] == default:
                    del out[name]
            head = self._encode(out)[:-1]
            if key is not None:
                self._keep(key, head)
        return f'{head},"call":{int.__repr__(event.call)},"step":{int.__repr__(event.step)}}}'

    def _key(self, values: tuple[Any, ...]) -> Hashable | None:
        """What names the text of ``values`` (see the module docstring)."""
        types = tuple(map(type, values))
        kind = _KINDS.get(types)
        if kind is None:
            if len(_KINDS) >= _KINDS_LIMIT:
                _KINDS.clear()
            kind = _KINDS[types] = _kind(types)
        if kind is _PLAIN:
            return (values, types)
        if kind is _UNKNOWN:
            return None
        floats, nested = kind
        if nested:
            listed = list(values)
            for i in nested:
                listed[i] = self._encode(listed[i])
            values = tuple(listed)
        if floats and 0.0 in values:  # a zero, maybe a float's: -0.0 and 0.0 are written apart
            return (values, types, tuple(map(float.__repr__, map(values.__getitem__, floats))))
        return (values, types)

    def _keep(self, key: Hashable, head: str) -> None:
        """Keep ``head`` under ``key`` in the newer half (a full newer half becomes the older,
        and the older goes)."""
        if len(self._texts) >= self._limit // 2:
            self._older, self._texts = self._texts, {}
        self._texts[key] = head

    def clear(self) -> None:
        self._texts.clear()
        self._older.clear()

    def __len__(self) -> int:
        return len(self._texts) + len(self._older)
