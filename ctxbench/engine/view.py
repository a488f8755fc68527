"""The context view: the messages the model would see, with token totals kept incrementally.

The view holds per-message counts for two counters, the strategy's estimator and the
provider's true counter, and keeps their sums up to date as messages are appended or the view
is replaced. Counting goes through each counter's fingerprint cache, so a message that
survives a compaction is never tokenized again, and the views with the same counters
remember the counts of every message object they have held while that object lives (one
:func:`ctxbench.memo.shared_memo` for the process: a sweep's replays hold the same messages),
so a replace costs a lookup per message, done in C: a strategy that rebuilds its whole prompt
at every call (DB-GPT 0.8.2) replaces hundreds of messages per call. A replace keeping the
view's head and tail (a run dropped, a message rewritten) looks up only the messages between,
and the view keeps its messages' fingerprints (``keys``), which a compaction's accounting
aligns on. A :class:`~ctxbench.engine.prompt.Prompt` keeps its counts and keys for every view
that shows it (the view shares them until it appends), so a sweep's replays work them out once.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from functools import partial
from itertools import compress, count
from typing import NamedTuple, cast

from ctxbench import pairing
from ctxbench.counting.base import TokenCounter
from ctxbench.engine.align import equal_head
from ctxbench.engine.prompt import Prompt
from ctxbench.memo import ObjectMemo, shared_memo
from ctxbench.pairing import Round, changed_places, rounds
from ctxbench.trace import Message, ToolSpec

#: ``_dirty_from`` when no message has changed since the last accepted prompt (appends are not changes).
_UNCHANGED = 1 << 62
_EST = operator.itemgetter(0)
_TRUE = operator.itemgetter(1)
_FINGERPRINT = operator.attrgetter("fingerprint")


def _same_head(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading items ``a`` and ``b`` share by identity (read in C up to the first
    difference)."""
    return next(compress(count(), map(operator.is_not, a, b)), min(len(a), len(b)))


def _same_tail(a: Sequence[object], b: Sequence[object], limit: int) -> int:
    """How many trailing items ``a`` and ``b`` share by identity, at most ``limit``."""
    if limit <= 0:
        return 0
    ends = map(operator.is_not, reversed(a), reversed(b))
    return min(next(compress(count(), ends), limit), limit)


class _Held(NamedTuple):
    """A list of messages the view held, with their counts and keys."""

    messages: Sequence[Message]
    est: list[int]
    true: list[int]
    keys: list[str]
    est_sum: int
    true_sum: int


#: how many earlier lists the view keeps for :meth:`ContextView._aligned`
_RECENT = 3


def _count(
    estimator: TokenCounter, true_counter: TokenCounter, message: Message
) -> tuple[int, int]:
    return estimator.count_message(message), true_counter.count_message(message)


class ContextView:
    """An ordered list of messages with incremental estimated and true token totals."""

    def __init__(
        self, estimator: TokenCounter, true_counter: TokenCounter, tools: Sequence[ToolSpec] = ()
    ) -> None:
        self.estimator = estimator
        self.true_counter = true_counter
        self._messages: Sequence[Message] = []  # a list, or a prompt's tuple while shared
        self._est: list[int] = []
        self._true: list[int] = []
        self._keys: list[str] = []  # the messages' fingerprints
        self._est_sum = 0
        self._true_sum = 0
        self.est_overhead = estimator.prompt_overhead(tools)
        self.true_overhead = true_counter.prompt_overhead(tools)
        # prompt-cache bookkeeping: the last prompt sent, and the first index changed since
        self._mark_len = 0
        self._mark_true_sum = 0
        self._dirty_from = 0
        #: (est, true) of every message object held by a view with these counters, while it
        #: lives (the process's: a sweep's replays hold the same messages)
        self._counts: ObjectMemo[Message, tuple[int, int]] = shared_memo(
            ("view.counts", estimator, true_counter), partial(_count, estimator, true_counter)
        )
        #: the last lists the view held before the current one, newest first
        self._recent: list[_Held] = []
        #: the prompt the view shows, when it shows one (no append since)
        self._prompt: Prompt | None = None
        #: the key of the prompts' counts: what they depend on besides the messages
        self._counts_key = ("view", estimator, true_counter, self.est_overhead, self.true_overhead)
        #: whether the lists are a prompt's (copied before the view appends)
        self._shared = False

    # -- reading ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __getitem__(self, index: int) -> Message:
        return self._messages[index]

    @property
    def messages(self) -> tuple[Message, ...]:
        """The messages (the :class:`Prompt` itself when the view shows one)."""
        if self._prompt is not None:
            return self._prompt
        return tuple(self._messages)

    @property
    def prompt(self) -> Prompt | None:
        """The prompt the view shows, when it was set to one and nothing was appended since."""
        return self._prompt

    @property
    def keys(self) -> list[str]:
        """The messages' fingerprints, in order (a replace makes a new list, an append adds to
        it: read it, do not edit it)."""
        return self._keys

    @property
    def estimated_tokens(self) -> int:
        """The whole prompt by the strategy's estimator (overhead included)."""
        return self.est_overhead + self._est_sum

    @property
    def true_tokens(self) -> int:
        """The whole prompt by the provider's true counter (overhead included)."""
        return self.true_overhead + self._true_sum

    def shows(self, messages: Sequence[Message]) -> bool:
        """Whether the view is ``messages`` already, message for message: a prompt that did
        not change, which a strategy does not record again."""
        mine = self._messages
        return len(messages) == len(mine) and list(messages) == list(mine)

    def rounds(self) -> list[Round]:
        return rounds(self._messages)

    # -- changing -----------------------------------------------------------------------------
    def append(self, message: Message) -> None:
        if self._shared:  # the lists are a prompt's: the view's own from now on
            self._messages, self._est = list(self._messages), list(self._est)
            self._true, self._keys = list(self._true), list(self._keys)
            self._shared = False
        self._prompt = None
        est, true = self._counts(message)
        cast(list[Message], self._messages).append(message)
        self._est.append(est)
        self._true.append(true)
        self._keys.append(message.fingerprint)
        self._est_sum += est
        self._true_sum += true

    def replace(self, messages: Sequence[Message]) -> None:
        """Replace the whole view. A :class:`Prompt` brings the counts and keys a view with
        these counters worked out for it before. A list that repeats, place by place, the
        view or one of the last it held (:meth:`_aligned`) takes their counts and keys but
        where it differs; any other keeps those of the messages at the view's head and tail,
        and looks up the others (from what the view held, else the counters' caches)."""
        prompt = messages if isinstance(messages, Prompt) else None
        current = _Held(
            self._messages, self._est, self._true, self._keys, self._est_sum, self._true_sum
        )
        held: _Held | None = None
        if prompt is not None:
            held = prompt.counts.get(self._counts_key)
            if held is not None:
                held = held._replace(messages=prompt)
        if held is None:
            new = list(messages)
            held = next(
                (h for h in (self._aligned(new, c) for c in (current, *self._recent)) if h), None
            ) or self._around(new, current)
            if prompt is not None:
                # kept without the prompt itself: a prompt holding itself is a cycle
                prompt.counts[self._counts_key] = held._replace(messages=())
                held = held._replace(messages=prompt)
        self._prompt, self._shared = prompt, prompt is not None
        # a message with the same fingerprint is the same prompt to the provider's cache
        self._dirty_from = min(self._dirty_from, equal_head(self._keys, held.keys))
        self._recent = [current, *self._recent[: _RECENT - 1]]
        self._messages, self._est, self._true, self._keys = (
            held.messages,
            held.est,
            held.true,
            held.keys,
        )
        self._est_sum, self._true_sum = held.est_sum, held.true_sum

    def _aligned(self, new: list[Message], old: _Held) -> _Held | None:
        """``new``'s counts and keys from ``old`` when ``new`` is ``old`` place by place but
        for a few places (and what it adds at the end): DB-GPT 0.8.2 rebuilds the prompt of
        the last call again, with a new system prompt and a few more observations cut. A
        probe of three places rejects any other list at once. None when it is not."""
        held = old.messages
        n = min(len(held), len(new))
        if n < 16 or any(new[i] is not held[i] for i in (n // 4, n // 2, n - 1 - n // 4)):
            return None
        if n < 2 * pairing.CHUNK:  # a short list: one pass in C costs less than chunks
            differ: list[int] | None = list(compress(count(), map(operator.is_not, new, held)))
        else:  # the places that may differ, a chunk at a time in C (a list against a list:
            # a prompt's tuple is read as one); an equal message has the same counts and key
            differ = changed_places(new, held if type(held) is list else list(held), n // 16)
        if differ is None or len(differ) > n // 16:
            return None
        est, true, keys = old.est[:n], old.true[:n], old.keys[:n]
        est_sum = old.est_sum - sum(old.est[n:])
        true_sum = old.true_sum - sum(old.true[n:])
        looked_up = [*map(new.__getitem__, differ), *new[n:]]
        counts = self._counts.many(looked_up)
        for i, (e, t), message in zip(differ, counts, looked_up):
            est_sum += e - est[i]
            true_sum += t - true[i]
            est[i], true[i], keys[i] = e, t, message.fingerprint
        added = counts[len(differ) :]
        est += map(_EST, added)
        true += map(_TRUE, added)
        keys += map(_FINGERPRINT, new[n:])
        return _Held(
            new, est, true, keys, est_sum + sum(map(_EST, added)), true_sum + sum(map(_TRUE, added))
        )

    def _around(self, new: list[Message], old: _Held) -> _Held:
        """``new``'s counts and keys, ``old``'s for the messages it keeps at its head and tail."""
        head = _same_head(old.messages, new)
        tail = _same_tail(old.messages, new, min(len(old.messages), len(new)) - head)
        stop, old_stop = len(new) - tail, len(old.messages) - tail
        counts = self._counts.many(new[head:stop])  # new[head:stop] are looked up
        est = list(map(_EST, counts))
        true = list(map(_TRUE, counts))
        keys = list(map(_FINGERPRINT, new[head:stop]))
        return _Held(
            new,
            [*old.est[:head], *est, *old.est[old_stop:]],
            [*old.true[:head], *true, *old.true[old_stop:]],
            [*old.keys[:head], *keys, *old.keys[old_stop:]],
            old.est_sum + sum(est) - sum(old.est[head:old_stop]),
            old.true_sum + sum(true) - sum(old.true[head:old_stop]),
        )

    # -- prompt caching --------------------------------------------------------------------------
    def mark_sent(self) -> None:
        """Remember the current view as the last prompt the provider accepted."""
        self._mark_len = len(self._messages)
        self._mark_true_sum = self._true_sum
        self._dirty_from = _UNCHANGED

    def cached_prefix_tokens(self, *, with_reply: bool = False) -> int:
        """True tokens of the prefix shared with the last accepted prompt (a provider's prompt
        cache would serve these); 0 when nothing is shared. ``with_reply``: the message
        appended first after that prompt (the model's reply) is part of the cached prefix."""
        marked = self._mark_len + (with_reply and self._mark_len > 0)
        prefix = min(self._dirty_from, marked, len(self._messages))
        if prefix == 0:
            return 0
        if prefix == self._mark_len:
            return self.true_overhead + self._mark_true_sum
        return self.true_overhead + sum(self._true[:prefix])
