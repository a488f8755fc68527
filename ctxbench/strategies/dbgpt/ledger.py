"""``HistoryLedger``: 0.8.2's memory with what its manager asks of it at every call, kept as
the memory grows.

The 0.8.2 agent rebuilds its prompt from the uncompacted history at every call and Layers 1
and 2 run on it again (see the package docstring). Worked out from the message lists, each
call costs a pass over the whole history per question: the state (a sum of counts), the
rounds (where observations are), Layer 1's cuts. The history only grows between calls, so the
ledger keeps those answers as running sums over it, and a call costs what arrived since plus
the rounds Layer 2 walks.

The ledger answers only for the prompt shape the 0.8.2 agent builds, ``X + history[j:]``: ``X``
one system prompt (the recorded one with the task-progress block, or a new one) standing for
``history[:j]``, no other system message. ``DbgptStrategy`` checks it against the message-list
layers it stands in for (``tests/strategies/test_dbgpt_ledger.py``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, count, repeat
from operator import eq, is_not

from ctxbench.trace import Message


@dataclass(frozen=True)
class Shape:
    """A prompt ``head + history[skip:]`` with the trailing question ``question`` (0 or 1
    messages, not managed); ``head`` is one system message or none."""

    head: tuple[Message, ...]
    skip: int
    question: int


@dataclass(frozen=True)
class Layers:
    """What Layers 1 and 2 do to a prompt, as history indices, with the manager's count of the
    prompt before the manager and after each layer that ran (``used``: one to three)."""

    used: tuple[int, ...]
    #: Layer 1 ran (``used[1]``) and cut ``history[:cut_to]`` (nothing when ``cut_to`` is the
    #: prompt's ``skip``)
    cut_to: int | None = None
    #: Layer 2 ran (``used[2]``) and kept ``history[keep_from:]``
    keep_from: int | None = None


#: what a message is to the manager's rounds (``DbgptStrategy._kind_of``)
OTHER, SYSTEM, ENDS_ROUND = 0, 1, 2


class HistoryLedger:
    """Running sums over an append-only history: its messages' counts, its round ends, and
    Layer 1's cut of each message with the cut's count (made the first time a cut reaches it).

    ``count``, ``kind`` and ``cut`` are the strategy's (memoised by message); ``kind`` says a
    message is system (1), ends a round (2) or neither (0); a cut must keep a message's kind
    for :meth:`layers` to answer (else it returns None and the message lists decide)."""

    def __init__(
        self,
        count_many: Callable[[Sequence[Message]], list[int]],
        kind_many: Callable[[Sequence[Message]], list[int]],
        cut_many: Callable[[Sequence[Message]], list[Message]],
    ) -> None:
        self._count_many = count_many
        self._kind_many = kind_many
        self._cut_many = cut_many
        self.reset(())

    def reset(self, messages: Sequence[Message]) -> None:
        """The history is ``messages`` (not an extension of the last one)."""
        self.messages: list[Message] = []
        self._sums = [0]  # _sums[i]: the counts of messages[:i]
        self._ends: list[int] = []  # indices of the messages that end a round
        self._systems: list[int] = []  # indices of system messages
        self.cuts: list[Message] = []  # Layer 1's cut of messages[:len(cuts)]
        self._cut_sums = [0]
        self._kind_changed = False  # some cut is not of its message's kind
        self.extend(messages)

    def extend(self, new: Sequence[Message]) -> None:
        """The history grew by ``new``."""
        if not new:
            return
        start = len(self.messages)
        self.messages.extend(new)
        _extend_sums(self._sums, self._count_many(new))
        kinds = self._kind_many(new)
        self._ends += compress(count(start), map(eq, kinds, repeat(ENDS_ROUND)))
        self._systems += compress(count(start), map(eq, kinds, repeat(SYSTEM)))

    def _cut_through(self, stop: int) -> None:
        done = len(self.cuts)
        if stop <= done:
            return
        originals = self.messages[done:stop]
        cuts = self._cut_many(originals)
        self.cuts += cuts
        _extend_sums(self._cut_sums, self._count_many(cuts))
        changed = list(compress(count(), map(is_not, cuts, originals)))
        if changed and self._kind_many([cuts[i] for i in changed]) != self._kind_many(
            [originals[i] for i in changed]
        ):
            self._kind_changed = True

    def _mixed(self, cut_to: int, start: int, stop: int) -> int:
        """The counts of ``history[start:stop]`` with ``history[:cut_to]`` cut."""
        middle = min(max(cut_to, start), stop)  # where the cut part ends
        cut = self._cut_sums[middle] - self._cut_sums[start] if middle > start else 0
        return cut + self._sums[stop] - self._sums[middle]

    def layers(
        self,
        shape: Shape,
        head_count: int,
        *,
        cutoff_rounds: int,
        keep_rounds: int,
        keep_tokens: int,
        warning: Callable[[int], bool],
    ) -> Layers | None:
        """Layers 1 and 2 on the prompt ``shape`` (the history must be what it was built
        from); ``head_count``: the head's count; ``cutoff_rounds``: the rounds Layer 1 cuts
        (``current round - max age``); ``warning(used)``: whether the state at that count is
        at least ``warning`` (the next layer runs). None when the prompt is not of the shape
        the ledger answers for."""
        n, skip = len(self.messages), shape.skip
        stop = n - shape.question  # the managed part is head + history[skip:stop]
        if len(shape.head) > 1 or len(shape.head) < skip or stop <= skip:
            return None
        if self._systems and self._systems[-1] >= skip:
            return None  # a system message the head does not stand for
        used = head_count + self._sums[stop] - self._sums[skip]
        if not warning(used):
            return Layers((used,))
        # the rounds are the runs ending at each round end, plus an unfinished one
        first, last = bisect_left(self._ends, skip), bisect_left(self._ends, stop)
        ends = self._ends
        rounds = last - first
        unfinished = rounds == 0 or ends[last - 1] < stop - 1
        rounds += unfinished

        def end(r: int) -> int:  # the history index round ``r`` ends at
            return ends[first + r] if first + r < last else stop - 1

        def start(r: int) -> int:
            return end(r - 1) + 1 if r > 0 else skip

        # Layer 1
        cut_to = skip
        if cutoff_rounds > 0:
            cut_to = end(cutoff_rounds - 1) + 1 if cutoff_rounds <= rounds else stop
            self._cut_through(cut_to)
            if self._kind_changed:
                return None
        used_cut = head_count + self._mixed(cut_to, skip, stop)
        if not warning(used_cut):
            return Layers((used, used_cut), cut_to)
        if rounds <= keep_rounds:
            return Layers((used, used_cut, used_cut), cut_to, skip)
        # Layer 2: walk back over the rounds, keeping the last ``keep_rounds`` and then until
        # ``keep_tokens`` are kept (the round where the walk stops is counted, not kept)
        r = rounds - keep_rounds - 1
        while r >= 0 and self._mixed(cut_to, start(r), stop) < keep_tokens:
            r -= 1
        if r < 0:
            return Layers((used, used_cut, used_cut), cut_to, skip)
        keep_from = start(r + 1)
        kept = head_count + self._mixed(cut_to, keep_from, stop)
        return Layers((used, used_cut, kept), cut_to, keep_from)

    def prompts(self, shape: Shape, layers: Layers) -> list[list[Message]]:
        """The prompt after each layer that ran (the question last, as the agent appends it)."""
        head, skip = list(shape.head), shape.skip
        stop = len(self.messages) - shape.question
        question = self.messages[stop:]
        out: list[list[Message]] = []
        if layers.cut_to is not None:
            cut_to = layers.cut_to
            out.append(
                [
                    *head,
                    *self.cuts[skip:cut_to],
                    *self.messages[max(cut_to, skip) : stop],
                    *question,
                ]
            )
            if layers.keep_from is not None:
                keep = layers.keep_from
                out.append(
                    [
                        *head,
                        *self.cuts[keep:cut_to],
                        *self.messages[max(cut_to, keep) : stop],
                        *question,
                    ]
                )
        return out


def _extend_sums(sums: list[int], counts: Iterable[int]) -> None:
    """Extend the running sums ``sums`` (``sums[i]``: the first ``i`` counts) by ``counts``."""
    running = accumulate(counts, initial=sums[-1])
    next(running)  # the last sum, already there
    sums.extend(running)


__all__ = ["ENDS_ROUND", "OTHER", "SYSTEM", "HistoryLedger", "Layers", "Shape"]
