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

The prompts it builds are :class:`~ctxbench.engine.prompt.Prompt` objects of the process, named
by the history's :attr:`HistoryLedger.token` (the same for every ledger that holds the same
message objects in the same order: a sweep's configurations of one trace) and where the layers
cut: a sweep's replays show the same prompts, and the engine works out what it derives from one
(its counts, a compaction's alignment) once.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, count, repeat
from operator import eq, is_not

from ctxbench.engine.prompt import PROMPTS, Prompt
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


class _History:
    """The arrays of one append-only history, shared by every ledger that holds it (a sweep's
    configurations of one trace): its messages, their counts' running sums, round ends,
    system messages, and Layer 1's cuts of a prefix with their running sums."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.sums = [0]  # sums[i]: the counts of messages[:i]
        self.ends: list[int] = []  # indices of the messages that end a round
        self.systems: list[int] = []  # indices of system messages
        self.cuts: list[Message] = []  # Layer 1's cut of messages[:len(cuts)]
        self.cut_sums = [0]
        #: the index of the first cut that is not of its message's kind (None: none yet)
        self.kind_changed_at: int | None = None

    def copy(self, n: int) -> _History:
        """The history's first ``n`` messages, as a history of their own."""
        out = _History()
        out.messages, out.sums = self.messages[:n], self.sums[: n + 1]
        out.ends = self.ends[: bisect_left(self.ends, n)]
        out.systems = self.systems[: bisect_left(self.systems, n)]
        out.cuts, out.cut_sums = self.cuts[:n], self.cut_sums[: n + 1]
        if self.kind_changed_at is not None and self.kind_changed_at < n:
            out.kind_changed_at = self.kind_changed_at
        return out


class HistoryLedger:
    """Running sums over an append-only history: its messages' counts, its round ends, and
    Layer 1's cut of each message with the cut's count (made the first time a cut reaches it).

    ``count``, ``kind`` and ``cut`` are the strategy's (memoised by message); ``kind`` says a
    message is system (1), ends a round (2) or neither (0); a cut must keep a message's kind
    for :meth:`layers` to answer (else it returns None and the message lists decide).

    The arrays are a :class:`_History` of the process, shared by the ledgers with the same
    ``key`` whose histories are the same objects in the same order (their :attr:`token`): the
    first to reach a message counts it and cuts it, the others read its answers."""

    def __init__(
        self,
        count_many: Callable[[Sequence[Message]], list[int]],
        kind_many: Callable[[Sequence[Message]], list[int]],
        cut_many: Callable[[Sequence[Message]], list[Message]],
        key: Hashable,
    ) -> None:
        """``key`` names everything ``count_many``, ``kind_many`` and ``cut_many`` depend on
        besides the messages (the rules, the cut's limit, the estimator): ledgers with equal
        keys and histories share their arrays and prompts."""
        self._count_many = count_many
        self._kind_many = kind_many
        self._cut_many = cut_many
        # a number for the key, equal for equal keys: it names the arrays and the prompts at
        # every call, and a tuple holding the rules is hashed again at each lookup
        self._key = _KEYS.setdefault(key, len(_KEYS))
        self.reset(())

    def reset(self, messages: Sequence[Message]) -> None:
        """The history is ``messages`` (not an extension of the last one)."""
        self._h = _History()
        self._n = 0  # the history is self._h.messages[:self._n]
        #: names the history: equal for ledgers holding the same objects in the same order
        self.token = 0
        self.extend(messages)

    @property
    def messages(self) -> list[Message]:
        """The history (a copy)."""
        return self._h.messages[: self._n]

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: int) -> Message:
        """The history's message at ``index`` (from 0)."""
        if not 0 <= index < self._n:
            raise IndexError(index)
        return self._h.messages[index]

    @property
    def cuts(self) -> list[Message]:
        """Layer 1's cuts of the history's first messages (as far as a cut reached)."""
        return self._h.cuts[: self._n]

    @property
    def first_system(self) -> int | None:
        """The index of the history's first system message (None when it has none)."""
        systems = self._h.systems
        return systems[0] if systems and systems[0] < self._n else None

    def extend(self, new: Sequence[Message]) -> None:
        """The history grew by ``new``."""
        if not new:
            return
        token = _extended(self.token, new)
        shared = _HISTORIES.get((self._key, token))
        if shared is not None:  # another ledger grew this history this far
            self._h, self._n = shared
        else:
            if len(self._h.messages) != self._n:  # that one went on another way
                self._h = self._h.copy(self._n)
            h, start = self._h, self._n
            h.messages.extend(new)
            _extend_sums(h.sums, self._count_many(new))
            kinds = self._kind_many(new)
            h.ends += compress(count(start), map(eq, kinds, repeat(ENDS_ROUND)))
            h.systems += compress(count(start), map(eq, kinds, repeat(SYSTEM)))
            self._n = len(h.messages)
            _HISTORIES[(self._key, token)] = (h, self._n)
        self.token = token

    def _cut_through(self, stop: int) -> None:
        h = self._h
        done = len(h.cuts)
        if stop <= done:
            return
        originals = h.messages[done:stop]
        cuts = self._cut_many(originals)
        h.cuts += cuts
        _extend_sums(h.cut_sums, self._count_many(cuts))
        changed = list(compress(count(), map(is_not, cuts, originals)))
        if h.kind_changed_at is None and changed:
            cut_kinds = self._kind_many([cuts[i] for i in changed])
            kinds = self._kind_many([originals[i] for i in changed])
            first = next((i for i, a, b in zip(changed, cut_kinds, kinds) if a != b), None)
            h.kind_changed_at = None if first is None else done + first

    def _mixed(self, cut_to: int, start: int, stop: int) -> int:
        """The counts of ``history[start:stop]`` with ``history[:cut_to]`` cut."""
        h = self._h
        middle = min(max(cut_to, start), stop)  # where the cut part ends
        cut = h.cut_sums[middle] - h.cut_sums[start] if middle > start else 0
        return cut + h.sums[stop] - h.sums[middle]

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
        h, n, skip = self._h, self._n, shape.skip
        stop = n - shape.question  # the managed part is head + history[skip:stop]
        if len(shape.head) > 1 or len(shape.head) < skip or stop <= skip:
            return None
        systems = bisect_left(h.systems, n)  # the system messages of this history
        if systems and h.systems[systems - 1] >= skip:
            return None  # a system message the head does not stand for
        used = head_count + h.sums[stop] - h.sums[skip]
        if not warning(used):
            return Layers((used,))
        # the rounds are the runs ending at each round end, plus an unfinished one
        first, last = bisect_left(h.ends, skip), bisect_left(h.ends, stop)
        ends = h.ends
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
            if h.kind_changed_at is not None and h.kind_changed_at < cut_to:
                return None  # a cut in the prompt ends rounds where its message did not
        used_cut = head_count + self._mixed(cut_to, skip, stop)
        if not warning(used_cut):
            return Layers((used, used_cut), cut_to)
        if rounds <= keep_rounds:
            return Layers((used, used_cut, used_cut), cut_to, skip)
        # Layer 2: walk back over the rounds, keeping the last ``keep_rounds`` and then until
        # ``keep_tokens`` are kept (the round where the walk stops is counted, not kept). What
        # is kept from round ``r`` on only shrinks as ``r`` grows, so the round the walk stops
        # at is found by bisection: the last ``r`` (at most the walk's first) keeping enough
        last_walked = rounds - keep_rounds - 1
        short = bisect_left(
            range(last_walked + 1),
            True,
            key=lambda r: self._mixed(cut_to, start(r), stop) < keep_tokens,
        )
        r = short - 1
        if r < 0:
            return Layers((used, used_cut, used_cut), cut_to, skip)
        keep_from = start(r + 1)
        kept = head_count + self._mixed(cut_to, keep_from, stop)
        return Layers((used, used_cut, kept), cut_to, keep_from)

    def prompts(self, shape: Shape, layers: Layers) -> list[Prompt]:
        """The prompt after each layer that ran (the question last, as the agent appends it)."""
        out: list[Prompt] = []
        if layers.cut_to is not None:
            out.append(self._prompt(shape, shape.skip, layers.cut_to))
            if layers.keep_from is not None:
                out.append(self._prompt(shape, layers.keep_from, layers.cut_to))
        return out

    def _prompt(self, shape: Shape, start: int, cut_to: int) -> Prompt:
        """``head + history[start:]`` with ``history[:cut_to]`` cut (the question kept as is)."""
        h, n = self._h, self._n
        head, stop = shape.head, n - shape.question

        def build() -> list[Message]:
            return [
                *head,
                *h.cuts[start:cut_to],
                *h.messages[max(cut_to, start) : stop],
                *h.messages[stop:n],
            ]

        # the prompt holds the head, so its id stays its own while the key is known
        key = (
            "dbgpt.ledger",
            self._key,
            self.token,
            tuple(map(id, head)),
            stop,
            start,
            cut_to,
        )
        return PROMPTS.get(key, build)


#: the histories ledgers held, as (the token of a history, the ids of the messages it grew by)
#: -> (its token, those messages: held, so each id stays its object's); bounded by the messages
#: held, then started again (tokens are never given twice, so an old one just stops matching)
_CHAINS: dict[tuple[int, tuple[int, ...]], tuple[int, tuple[Message, ...]]] = {}
_CHAINS_LIMIT = 2_000_000
_held = [0]
_tokens = count(1)


#: the ledgers' keys (the rules, the cut's limit, the estimator) -> their numbers
_KEYS: dict[Hashable, int] = {}

#: the shared arrays of the histories: (a ledger's key, a token) -> (the arrays that hold the
#: history the token names, its length there); started again with the tokens
_HISTORIES: dict[tuple[Hashable, int], tuple[_History, int]] = {}


def _extended(token: int, new: Sequence[Message]) -> int:
    """The token of the history ``token`` names grown by ``new``."""
    key = (token, tuple(map(id, new)))
    found = _CHAINS.get(key)
    if found is not None:
        return found[0]
    if _held[0] + len(new) > _CHAINS_LIMIT:
        _CHAINS.clear()
        _HISTORIES.clear()
        _held[0] = 0
    made = _CHAINS[key] = (next(_tokens), tuple(new))
    _held[0] += len(new)
    return made[0]


def _extend_sums(sums: list[int], counts: Iterable[int]) -> None:
    """Extend the running sums ``sums`` (``sums[i]``: the first ``i`` counts) by ``counts``."""
    running = accumulate(counts, initial=sums[-1])
    next(running)  # the last sum, already there
    sums.extend(running)


__all__ = ["ENDS_ROUND", "OTHER", "SYSTEM", "HistoryLedger", "Layers", "Shape"]
