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
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from itertools import compress, count
from typing import Any

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


__all__ = ["PROMPTS", "Change", "CurrentPrompts", "Prompt", "PromptTable", "Step", "index_runs"]
