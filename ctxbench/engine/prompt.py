"""``Prompt``: a prompt that the replays of a sweep share, with what the engine derives from it
once; ``PromptTable``: a sweep's prompts (or the process's), by the key their strategy names
them with, bounded by the bytes they hold and by the cells that use them.

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
from collections import Counter, OrderedDict
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
    answers about them, filled in as the first replay asks.

    A prompt's answers about another prompt (the change from it, the places standing for it)
    are kept under the other's :attr:`serial`, never the other itself, and the view's counts
    without the prompt itself: a prompt holds no prompt, so one the table forgot is freed by
    reference counting at once, not by a collection of cycles (which the replay's paced
    collector runs rarely), and does not keep the prompts after it alive."""

    counts: dict[Hashable, Any]
    changes: dict[int, tuple[bool, Change | None]]
    violations: int | None
    system_kept: dict[tuple[str, ...], bool]
    stand_ins: dict[int, tuple[int, ...]]
    #: the prompt's number in the process (never given twice)
    serial: int

    def __new__(cls, messages: Sequence[Message]) -> Prompt:
        prompt = super().__new__(cls, messages)
        prompt.counts = {}  # the view's counts and keys, by its counters
        prompt.changes = {}  # serial of a prompt before -> (whether it differs, the change)
        prompt.violations = None
        prompt.system_kept = {}  # by the replay's original system texts
        prompt.stand_ins = {}  # serial of sources -> the places not their own source
        prompt.serial = next(_SERIALS)
        return prompt

    def standing_in(self, sources: Prompt) -> tuple[int, ...]:
        """The places whose message may not be ``sources``' at that place (the messages that
        stand for another: :meth:`ctxbench.engine.context.ReplayContext.reassemble`): every
        place holding an unequal message, and only places holding another object (found a
        chunk at a time in C: :func:`ctxbench.pairing.changed_places`); kept by the sources'
        serial (a prompt holds no prompt)."""
        found = self.stand_ins.get(sources.serial)
        if found is None:
            found = tuple(changed_places(self, sources, len(self)) or ())
            self.stand_ins[sources.serial] = found
        return found

    def change_to(self, after: Prompt) -> tuple[bool, Change | None] | None:
        """(whether ``after`` differs, the change) when worked out before, else None."""
        return after.changes.get(self.serial)

    def remember(self, after: Prompt, differs: bool, change: Change | None) -> None:
        """Keep the change to ``after``: on ``after``, which the configurations reaching it
        share (a prompt every configuration shows, such as DB-GPT's rebuilt memory, would
        otherwise gather a change per configuration's own next prompt, kept as long as it)."""
        after.changes[self.serial] = (differs, change)


_SERIALS = count()


#: what the table counts for each message a prompt holds, in bytes: its reference in the
#: prompt and what the engine keeps on a prompt per message (the view's counts and keys, a
#: change's steps, the places standing in for another), measured with tracemalloc on a
#: 1,000-round DB-GPT 0.8.2 replay (about 56 bytes)
REF_BYTES = 64


#: what a prompt alone holds, in bytes, or a function of the prompt giving it
Size = int | Callable[[Prompt], int]


class _Entry:
    """A prompt the table holds: its weight and the last cell that built or fetched it."""

    __slots__ = ("cell", "prompt", "weight")

    def __init__(self, prompt: Prompt, weight: int, cell: int) -> None:
        self.prompt = prompt
        self.weight = weight
        self.cell = cell


class PromptTable:
    """The prompts of a sweep (or of the process) by key. A key names everything its prompt is
    made of (object ids too, when the key holds those objects or the prompt does).

    A replay never asks for a prompt of its own again (each call's keys are new); the table
    is for a sweep's other configurations of the trace, which ask for the prompts they share
    in the order the first one built them. Two rules bound what it holds, and forgetting a
    prompt changes nothing but time (the prompts in use live on with their users; a key
    asked again is built again, equal):

    - **size**: at most ``limit`` bytes, by the weight of each prompt (:data:`REF_BYTES` per
      message, plus the ``size`` its builder gives for what the prompt alone holds, such as a
      system prompt made for it). Past it, the prompts no other cell has fetched go newest
      first, then the shared ones least recently fetched first: a cell whose prompts do not
      all fit leaves the next cell its first ones (least recently used first would leave it
      only the last ones, each evicted by the next cell's own before it gets there).
    - **cells**: a sweep's cells come configuration by configuration, and a prompt serves
      the run of cells that share what it depends on (every cell, for DB-GPT's rebuilt
      memory; the cells with one ``min_keep_recent_rounds``, for its Layer 2 cuts).
      :meth:`end_cell` drops the prompts no cell built or fetched in the last ``grace``
      cells (a cell's own among them), so what the table holds does not grow with the
      cells a sweep runs."""

    def __init__(self, limit: int, *, grace: int = 1) -> None:
        self.limit = limit
        self.grace = grace
        #: the prompts only the cell that built them fetched, oldest first
        self._own: OrderedDict[Hashable, _Entry] = OrderedDict()
        #: the prompts another cell fetched too, least recently fetched first
        self._shared: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._held = 0
        self._cell = 0  # the cell being replayed (counted by end_cell)

    def get(self, key: Hashable, build: Callable[[], Sequence[Message]], size: Size = 0) -> Prompt:
        """The prompt of ``key``, built by ``build()`` the first time. ``size``: the bytes the
        prompt alone holds besides its messages' references (a message made for it), or a
        function of the prompt giving them; counted in its weight."""
        entry = self._shared.get(key)
        if entry is not None:
            self._shared.move_to_end(key)
            entry.cell = self._cell
            return entry.prompt
        entry = self._own.get(key)
        if entry is not None:
            if entry.cell != self._cell:  # another cell's: shared from now on
                self._shared[key] = self._own.pop(key)
                entry.cell = self._cell
            return entry.prompt
        prompt = Prompt(build())
        weight = REF_BYTES * (len(prompt) + 1) + (size if isinstance(size, int) else size(prompt))
        if weight > self.limit:
            return prompt  # larger than the whole table: not held
        while self._held + weight > self.limit:
            if self._own:
                self._held -= self._own.popitem(last=True)[1].weight
            else:
                self._held -= self._shared.popitem(last=False)[1].weight
        self._own[key] = _Entry(prompt, weight, self._cell)
        self._held += weight
        return prompt

    def end_cell(self) -> None:
        """The cell being replayed ended: drop the prompts no cell built or fetched in the
        last ``grace`` cells (this one included), and count the next cell."""
        last = self._cell - self.grace  # the prompts last used by this cell or before go
        # each table is in the order of its entries' cells (an entry is added, or moved to
        # the end of the shared ones, with the cell being replayed; evictions keep the order):
        # the ones to drop are the first few, not a pass over every prompt held
        for entries in (self._own, self._shared):
            while entries:
                entry = next(iter(entries.values()))
                if entry.cell > last:
                    break
                self._held -= entries.popitem(last=False)[1].weight
        self._cell += 1

    @property
    def held(self) -> int:
        """The weight of the prompts held, in bytes (at most :attr:`limit`)."""
        return self._held

    def __len__(self) -> int:
        return len(self._own) + len(self._shared)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._own or key in self._shared

    def clear(self) -> None:
        self._own.clear()
        self._shared.clear()
        self._held = 0


class CurrentPrompts:
    """The prompts of the caches the cell runs under (:func:`ctxbench.engine.caches.current`):
    what a strategy names its prompts through (:data:`PROMPTS`)."""

    def get(self, key: Hashable, build: Callable[[], Sequence[Message]], size: Size = 0) -> Prompt:
        from ctxbench.engine.caches import current

        return current().prompts.get(key, build, size)

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
    "REF_BYTES",
    "Change",
    "CurrentPrompts",
    "Drops",
    "Prompt",
    "PromptTable",
    "Size",
    "Step",
    "few",
    "index_runs",
]
