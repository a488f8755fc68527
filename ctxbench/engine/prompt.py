"""``Prompt``: a prompt that the replays of a sweep share, with what the engine derives from it
once; ``PromptTable``: the process's prompts, by the key their strategy names them with.

A sweep replays one trace under many configurations of one strategy. A strategy that rebuilds
its prompt from the trace's messages makes the same lists under every configuration: DB-GPT
0.8.2 rebuilds its whole memory at every call and Layer 1 cuts it the same way whatever the
thresholds. What the engine works out from a list (its messages' counts and keys, its pairing
violations, whether it keeps the system prompt) and from a change between two lists (the
compaction's alignment: what was dropped, rewritten, added) costs passes over the whole list,
paid again by every configuration. A strategy that can name a list by a key (everything the
list is made of) builds it once as a :class:`Prompt` through :data:`PROMPTS` (the table of
the sweep's :class:`~ctxbench.engine.caches.Caches`); the engine keeps those answers on the
prompt, so each is worked out by the first replay that asks.

Every answer kept is a pure function of the messages (and of the counters, for counts): a
replay gets the same events from a prompt whose answers another replay worked out. What a
change does to one replay's state (the trace index a rewrite inherits, the trace indices a
drop names) is kept as the keys to look up, and looked up in that replay's own state
(:meth:`ctxbench.engine.context.ReplayContext.apply`).
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import compress, count, repeat
from typing import Any, cast

from ctxbench.pairing import changed_places
from ctxbench.trace import Message


@dataclass(frozen=True)
class Change:
    """A compaction from one list to another, as the accounting sees it (pure of the lists).

    ``steps`` are the alignment's runs in order, each ``(new, sources, messages, dropped)``:
    the keys of the messages rewritten in place, the keys of the messages they stand for, the
    rewrites themselves (each inherits its source's trace index when a replay knows it and has
    none for the rewrite), and the keys of the dropped messages (whose trace indices the event
    names)."""

    dropped: int
    rewritten: int
    added: int
    steps: tuple[Step, ...]
    #: both lists' keys are known unique (a list the next change starts from need not be
    #: checked again: :func:`ctxbench.engine.align.aligned`)
    unique: bool = field(default=False, compare=False)
    #: the trace indices a replay found for the dropped keys, and their ``[first, last]`` runs
    #: (the last worked out: the same indices give the same runs)
    _runs: list[tuple[list[list[int | None]], list[list[int]]]] = field(
        default_factory=list, compare=False, repr=False
    )

    def runs_of(self, found: list[list[int | None]]) -> list[list[int]]:
        """The ``[first, last]`` runs of the trace indices ``found`` for the dropped keys of
        each step (None: a key the replay does not know), as new lists."""
        if self._runs and self._runs[0][0] == found:
            runs = self._runs[0][1]
        else:
            gone = sorted({i for indices in found for i in indices if i is not None})
            runs = index_runs(gone)
            self._runs[:] = [(found, runs)]
        return [list(run) for run in runs]


#: one run of a :class:`Change`: (keys of rewrites, keys of their sources, the rewrites, keys
#: of dropped messages)
Step = tuple[tuple[str, ...], tuple[str, ...], tuple[Message, ...], tuple[str, ...]]


def index_runs(indices: Sequence[int]) -> list[list[int]]:
    """Sorted indices as [first, last] runs: [1, 2, 3, 7] -> [[1, 3], [7, 7]]."""
    if not indices:
        return []
    # where a run breaks: the next index is not one more (found in C)
    breaks = list(compress(count(1), map(operator.ne, indices[1:], map(_NEXT, indices))))
    starts, ends = [0, *breaks], [*breaks, len(indices)]
    return [[indices[i], indices[j - 1]] for i, j in zip(starts, ends)]


_NEXT = (1).__add__


def few(n: int) -> int:
    """How many places of a list of ``n`` are read one by one before the whole list is read
    again in C instead (a sixteenth, and a few)."""
    return 8 + n // 16


class Drops:
    """The trace indices of the messages a replay's compactions drop, as ``[first, last]``
    runs, carried from the last run of keys dropped: DB-GPT 0.8.2 drops the oldest rounds of
    its rebuilt prompt at every call, the same keys as the last call's (but the few messages
    newly cut) and a few more. It keeps the last keys (a tuple of a :class:`Change`), the
    indices found for them, the places found none, each index's count and the runs. The next
    keys are compared with them in C (:func:`changed_places`): where a key changed, where none
    was found (the replay may know the key now), and past the shorter are looked up again;
    an index found at every other place stays (a replay never forgets a key). The runs are
    extended when indices only arrive after the last, else made again from the counted
    indices. A run that is the last one and more costs one slice compared. More than a
    sixteenth of the keys to read again (:func:`few`): worked out whole again."""

    def __init__(self) -> None:
        self._keys: tuple[str, ...] | None = None
        self._found: list[int | None] = []
        self._none: set[int] = set()  # the places of ``_found`` that hold None
        self._counts: dict[int, int] = {}
        self._runs: list[list[int]] = []

    def runs(self, keys: tuple[str, ...], recorded: dict[str, int]) -> list[list[int]]:
        """The runs of the indices ``recorded`` holds for ``keys`` (new lists)."""
        last = self._keys
        places: list[int] | None = None
        if last is not None and (most := few(len(keys)) - abs(len(keys) - len(last))) >= 0:
            most -= len(self._none)
            if len(keys) >= len(last) and keys[: len(last)] == last:  # the last, and more
                places = [] if most >= 0 else None
            elif most >= 0:
                places = changed_places(keys, last, most)
        if places is None or last is None:
            self._whole(keys, recorded)
        else:
            self._again(keys, recorded, places)
        self._keys = keys
        return [list(run) for run in self._runs]

    def _whole(self, keys: tuple[str, ...], recorded: dict[str, int]) -> None:
        found = list(map(recorded.get, keys))
        nones = list(map(operator.is_, found, repeat(None)))
        self._found, self._none = found, set(compress(count(), nones))
        self._counts = Counter(cast("Iterator[int]", compress(found, map(operator.not_, nones))))
        self._runs = index_runs(sorted(self._counts))

    def _again(self, keys: tuple[str, ...], recorded: dict[str, int], places: list[int]) -> None:
        """``places``: where the keys may differ from the last (within both)."""
        found, counts, n = self._found, self._counts, len(keys)
        gone = False  # an index no place holds any more
        new: list[int] = []  # indices no place held
        for index in found[n:]:  # the old keys past the new ones
            gone = self._uncount(index) or gone
        del found[n:]
        none = {i for i in self._none if i < n}
        looked = [*places, *none, *range(len(found), n)]  # a place twice finds the same
        found += repeat(None, n - len(found))
        for place in looked:
            index = recorded.get(keys[place])
            held = found[place]
            if index == held:
                continue
            gone = self._uncount(held) or gone
            found[place] = index
            if index is not None:
                if index not in counts:
                    new.append(index)
                counts[index] = counts.get(index, 0) + 1
        if looked:
            none.update(looked)
            self._none = {i for i in none if found[i] is None}
        runs = self._runs
        if gone or (new and runs and min(new) <= runs[-1][1]):
            self._runs = index_runs(sorted(counts))
        elif new:  # every new index after the last: the runs grow at their end
            tail = index_runs(sorted(new))
            if runs and tail[0][0] == runs[-1][1] + 1:
                self._runs = [*runs[:-1], [runs[-1][0], tail[0][1]], *tail[1:]]
            else:
                self._runs = [*runs, *tail]

    def _uncount(self, index: int | None) -> bool:
        """Take one ``index`` out of the counts; whether no place holds it any more."""
        if index is None:
            return False
        held = self._counts[index]
        if held > 1:
            self._counts[index] = held - 1
            return False
        del self._counts[index]
        return True


class Prompt(tuple[Message, ...]):
    """Messages a strategy built under a key (:meth:`PromptTable.get`), with the engine's
    answers about them, filled in as the first replay asks."""

    counts: dict[Hashable, Any]
    changes: dict[int, tuple[Prompt, bool, Change | None]]
    violations: int | None
    system_kept: dict[tuple[str, ...], bool]
    stand_ins: dict[int, tuple[Prompt, tuple[int, ...]]]

    def __new__(cls, messages: Sequence[Message]) -> Prompt:
        prompt = super().__new__(cls, messages)
        prompt.counts = {}  # the view's counts and keys, by its counters
        prompt.changes = {}  # id(after) -> (after, whether it differs, the change)
        prompt.violations = None
        prompt.system_kept = {}  # by the replay's original system texts
        prompt.stand_ins = {}  # id(sources) -> (sources, the places not their own source)
        return prompt

    def standing_in(self, sources: Prompt) -> tuple[int, ...]:
        """The places whose message may not be ``sources``' at that place (the messages that
        stand for another: :meth:`ctxbench.engine.context.ReplayContext.reassemble`): every
        place holding an unequal message, and only places holding another object (found a
        chunk at a time in C: :func:`ctxbench.pairing.changed_places`)."""
        found = self.stand_ins.get(id(sources))
        if found is None or found[0] is not sources:
            places = tuple(changed_places(self, sources, len(self)) or ())
            found = self.stand_ins[id(sources)] = (sources, places)
        return found[1]

    def change_to(self, after: Prompt) -> tuple[bool, Change | None] | None:
        """(whether ``after`` differs, the change) when worked out before, else None."""
        found = self.changes.get(id(after))
        if found is None or found[0] is not after:
            return None
        return found[1], found[2]

    def remember(self, after: Prompt, differs: bool, change: Change | None) -> None:
        self.changes[id(after)] = (after, differs, change)


class PromptTable:
    """The process's prompts by key. A key names everything its prompt is made of (object ids
    too, when the key holds those objects or the prompt does). Bounded by the messages the
    prompts hold: past ``limit`` it starts again (the prompts in use live on with their
    users; forgetting changes nothing but time)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._prompts: dict[Hashable, Prompt] = {}
        self._held = 0

    def get(self, key: Hashable, build: Callable[[], Sequence[Message]]) -> Prompt:
        """The prompt of ``key``, built by ``build()`` the first time."""
        found = self._prompts.get(key)
        if found is not None:
            return found
        prompt = Prompt(build())
        if self._held + len(prompt) + 1 > self.limit:
            self.clear()
        self._prompts[key] = prompt
        self._held += len(prompt) + 1
        return prompt

    def __len__(self) -> int:
        return len(self._prompts)

    def clear(self) -> None:
        self._prompts.clear()
        self._held = 0


class CurrentPrompts:
    """The prompts of the caches the cell runs under (:func:`ctxbench.engine.caches.current`):
    what a strategy names its prompts through (:data:`PROMPTS`)."""

    def get(self, key: Hashable, build: Callable[[], Sequence[Message]]) -> Prompt:
        from ctxbench.engine.caches import current

        return current().prompts.get(key, build)

    def __len__(self) -> int:
        from ctxbench.engine.caches import current

        return len(current().prompts)

    def clear(self) -> None:
        from ctxbench.engine.caches import current

        current().prompts.clear()


#: the prompts of the current caches (a sweep's, else the process's: :mod:`ctxbench.engine.caches`)
PROMPTS = CurrentPrompts()


__all__ = [
    "PROMPTS",
    "Change",
    "CurrentPrompts",
    "Drops",
    "Prompt",
    "PromptTable",
    "Step",
    "few",
    "index_runs",
]
