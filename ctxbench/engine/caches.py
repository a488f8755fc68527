"""``Caches``: what the replays of a sweep share, in one object the sweep owns.

A sweep replays one trace under many configurations, and the configurations make the same
things again: DB-GPT 0.8.2 rebuilds the same prompts (:class:`~ctxbench.engine.prompt.PromptTable`),
the engine and the strategies ask the same questions of the same message objects (the
:class:`~ctxbench.memo.ObjectMemo` of each question, :meth:`Caches.memo`), a snapshot renders
to the same file and a trace has the same needed values (:meth:`Caches.content`), and probes are scored against the same prompts
(:class:`~ctxbench.probes.scoring.ScoringCache`). Each value is a pure function of its key, so a
cache changes nothing but time, and each is bounded (past its limit it starts again).

Who owns one: a sweep's worker keeps one per trace it replays (:mod:`ctxbench.sweep.task`; the
next trace starts a new one, so a worker's memory does not grow with the traces it ran) and
tells it when each cell ends (:meth:`Caches.end_cell`: the prompts no cell uses any more go,
so it does not grow with the cells either); a replay is given one (``run_spec(caches=...)``,
``replay(caches=...)``) and makes it :func:`current` while it builds and runs the cell
(:func:`using`), so the code a strategy calls
(:data:`~ctxbench.engine.prompt.PROMPTS`, :func:`~ctxbench.memo.shared_memo`) reads the cell's
caches. Code given no caches reads the process's own (one ``ctxbench run``, a test).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from ctxbench.engine.prompt import PromptTable
from ctxbench.memo import ContentMemo, MemoTable, ObjectMemo, current_memos, using_memos
from ctxbench.probes.scoring import ScoringCache

K = TypeVar("K")
V = TypeVar("V")

#: bytes the prompts may hold, by their weight (:class:`~ctxbench.engine.prompt.PromptTable`):
#: a few cells' worth of a 300-round DB-GPT 0.8.2 trace, which its sweep's configurations share
PROMPT_LIMIT = 64 * 2**20
#: the same for the process's own caches (one ``ctxbench run``, a test, a script replaying
#: configurations one after the other): a replay never asks for its own prompts again, so
#: only replays after it in the process use them; a full table still leaves those its first
#: prompts (:class:`~ctxbench.engine.prompt.PromptTable`)
PROCESS_PROMPT_LIMIT = 16 * 2**20
#: shared memos, by what they compute: past this many keys (a program building counters by
#: the hundred) they start again
MEMO_LIMIT = 256
#: characters of prompt text probe scoring keeps (:class:`ScoringCache`)
SCORING_LIMIT = 32_000_000


class Caches:
    """The caches of one sweep (or one trace of it): prompts, shared memos, content memos by
    name, probe scoring. See the module docstring."""

    def __init__(
        self,
        *,
        prompt_limit: int = PROMPT_LIMIT,
        memo_limit: int = MEMO_LIMIT,
        scoring_limit: int = SCORING_LIMIT,
    ) -> None:
        self.prompts = PromptTable(limit=prompt_limit)
        self.scoring = ScoringCache(limit=scoring_limit)
        self.memos = MemoTable(limit=memo_limit)
        self._contents: dict[str, ContentMemo[Any, Any]] = {}

    def end_cell(self) -> None:
        """A cell replayed under these caches ended: what it alone built goes once the next
        cell has not asked for it (:meth:`~ctxbench.engine.prompt.PromptTable.end_cell`)."""
        self.prompts.end_cell()

    def memo(self, key: Hashable, compute: Callable[[K], V]) -> ObjectMemo[K, V]:
        """The :class:`ObjectMemo` of ``compute`` under ``key`` (see
        :func:`ctxbench.memo.shared_memo` for what ``key`` must name)."""
        return self.memos.memo(key, compute)

    def content(self, name: str, limit: int) -> ContentMemo[Any, Any]:
        """The :class:`ContentMemo` named ``name`` (holding at most ``limit`` bytes)."""
        memo = self._contents.get(name)
        if memo is None:
            memo = self._contents[name] = ContentMemo(limit)
        return memo


_PROCESS = Caches(prompt_limit=PROCESS_PROMPT_LIMIT)
_PROCESS.memos = current_memos()  # the table shared_memo reads outside any caches
_CURRENT: ContextVar[Caches] = ContextVar("ctxbench_caches")


def current() -> Caches:
    """The caches of the cell being built or replayed (:func:`using`), else the process's."""
    return _CURRENT.get(_PROCESS)


@contextmanager
def using(caches: Caches | None) -> Iterator[Caches]:
    """Make ``caches`` :func:`current` for the block (None: keep the current ones)."""
    if caches is None:
        yield current()
        return
    token = _CURRENT.set(caches)
    try:
        with using_memos(caches.memos):
            yield caches
    finally:
        _CURRENT.reset(token)


__all__ = ["Caches", "current", "using"]
