"""The context view: the messages the model would see, with token totals kept incrementally.

The view holds per-message counts for two counters, the strategy's estimator and the
provider's true counter, and keeps their sums up to date as messages are appended or the view
is replaced. Counting goes through each counter's fingerprint cache, so a message that
survives a compaction is never tokenized again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ctxbench.counting.base import TokenCounter
from ctxbench.pairing import Round, rounds
from ctxbench.trace import Message, ToolSpec

#: ``_dirty_from`` when no message has changed since the last accepted prompt (appends are not changes).
_UNCHANGED = 1 << 62


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
    def append(self, message: Message) -> None:
        est = self.estimator.count_message(message)
        true = self.true_counter.count_message(message)
        self._messages.append(message)
        self._est.append(est)
        self._true.append(true)
        self._est_sum += est
        self._true_sum += true

    def replace(self, messages: Sequence[Message]) -> None:
        """Replace the whole view (counts come from the counters' caches)."""
        common = 0
        for old, new in zip(self._messages, messages):
            if old is not new and old.fingerprint != new.fingerprint:
                break
            common += 1
        self._dirty_from = min(self._dirty_from, common)
        # a message kept from the old view keeps its counts (a compaction keeps most of them)
        position = {id(m): i for i, m in enumerate(self._messages)}
        est, true = [], []
        for m in messages:
            i = position.get(id(m))
            if i is not None and self._messages[i] is m:
                est.append(self._est[i])
                true.append(self._true[i])
            else:
                est.append(self.estimator.count_message(m))
                true.append(self.true_counter.count_message(m))
        self._messages = list(messages)
        self._est, self._true = est, true
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
