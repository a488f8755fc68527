"""The context view: the messages the model would see, with token totals kept incrementally.

The view holds per-message counts for two counters, the strategy's estimator and the
provider's true counter, and keeps their sums up to date as messages are appended or the view
is replaced. Counting goes through each counter's fingerprint cache, so a message that
survives a compaction is never tokenized again, and the view remembers the counts of every
message object it has held while that object lives (:class:`ctxbench.memo.ObjectMemo`), so
a replace costs a lookup per message, done in C: a strategy that rebuilds its whole prompt
at every call (DB-GPT 0.8.2) replaces hundreds of messages per call.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence

from ctxbench.counting.base import TokenCounter
from ctxbench.memo import ObjectMemo
from ctxbench.pairing import Round, rounds
from ctxbench.trace import Message, ToolSpec

#: ``_dirty_from`` when no message has changed since the last accepted prompt (appends are not changes).
_UNCHANGED = 1 << 62
_EST = operator.itemgetter(0)
_TRUE = operator.itemgetter(1)


def common_prefix(a: Sequence[Message], b: Sequence[Message]) -> int:
    """How many leading messages ``a`` and ``b`` share (the same object or the same
    fingerprint); the identical run is found in C."""
    same = list(map(operator.is_, a, b))
    try:
        k = same.index(False)
    except ValueError:
        return len(same)
    n = len(same)
    while k < n and (a[k] is b[k] or a[k].fingerprint == b[k].fingerprint):
        k += 1
    return k


class ContextView:
    """An ordered list of messages with incremental estimated and true token totals."""

    def __init__(
        self, estimator: TokenCounter, true_counter: TokenCounter, tools: Sequence[ToolSpec] = ()
    ) -> None:
        self.estimator = estimator
        self.true_counter = true_counter
        self._messages: list[Message] = []
        self._est: list[int] = []
        self._true: list[int] = []
        self._est_sum = 0
        self._true_sum = 0
        self.est_overhead = estimator.prompt_overhead(tools)
        self.true_overhead = true_counter.prompt_overhead(tools)
        # prompt-cache bookkeeping: the last prompt sent, and the first index changed since
        self._mark_len = 0
        self._mark_true_sum = 0
        self._dirty_from = 0
        #: (est, true) of every message object the view has held, while it lives
        self._counts: ObjectMemo[Message, tuple[int, int]] = ObjectMemo(self._count)

    # -- reading ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __getitem__(self, index: int) -> Message:
        return self._messages[index]

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(self._messages)

    @property
    def estimated_tokens(self) -> int:
        """The whole prompt by the strategy's estimator (overhead included)."""
        return self.est_overhead + self._est_sum

    @property
    def true_tokens(self) -> int:
        """The whole prompt by the provider's true counter (overhead included)."""
        return self.true_overhead + self._true_sum

    def rounds(self) -> list[Round]:
        return rounds(self._messages)

    # -- changing -----------------------------------------------------------------------------
    def _count(self, message: Message) -> tuple[int, int]:
        return self.estimator.count_message(message), self.true_counter.count_message(message)

    def append(self, message: Message) -> None:
        est, true = self._counts(message)
        self._messages.append(message)
        self._est.append(est)
        self._true.append(true)
        self._est_sum += est
        self._true_sum += true

    def replace(self, messages: Sequence[Message]) -> None:
        """Replace the whole view (counts from what the view held, else the counters' caches)."""
        new = list(messages)
        self._dirty_from = min(self._dirty_from, common_prefix(self._messages, new))
        counts = self._counts.many(new)
        self._messages = new
        self._est = list(map(_EST, counts))
        self._true = list(map(_TRUE, counts))
        self._est_sum = sum(self._est)
        self._true_sum = sum(self._true)

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
