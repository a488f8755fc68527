"""Chars per token by content class (or role) and counter: how far ``len(text) // 4`` drifts.

Token density depends on what the text is: English prose runs ~4.4 chars per token, logs and
tables ~2.3 and Chinese ~1.2 (TOKENIZERS.md 4.2), so a chars/4 estimate that is fine on
prose undercounts a tool result full of JSON by a quarter. Every message is counted once per
counter (:func:`measure`); tables group those samples by any key (content class, role).

``chars4_ratio`` follows TOKENIZERS.md: (sum of ``len(text) // 4``) / (true tokens); below 1
the estimate undercounts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ctxbench.counting.base import TokenCounter
from ctxbench.trace import Trace, message_search_text

#: The group label of the totals row.
ALL = "all"


@dataclass(frozen=True)
class Sample:
    """One message's text, its role and content class, and its tokens per counter."""

    role: str
    content_class: str
    chars: int
    tokens: Mapping[str, int]


@dataclass(frozen=True)
class Density:
    """Totals of one group under one counter."""

    texts: int
    chars: int
    tokens: int
    chars4: int

    @property
    def chars_per_token(self) -> float | None:
        return self.chars / self.tokens if self.tokens else None

    @property
    def chars4_ratio(self) -> float | None:
        """chars/4 estimate over true tokens (< 1: chars/4 undercounts)."""
        return self.chars4 / self.tokens if self.tokens else None

    def __add__(self, other: Density) -> Density:
        return Density(
            self.texts + other.texts,
            self.chars + other.chars,
            self.tokens + other.tokens,
            self.chars4 + other.chars4,
        )


_ZERO = Density(0, 0, 0, 0)


def measure(
    traces: Iterable[Trace],
    counters: Sequence[TokenCounter],
    classify: Callable[[str], str],
    *,
    budget: int | None = None,
) -> list[Sample]:
    """One sample per non-empty message: the text a reader sees (content, tool-call names and
    arguments), counted bare (no chat framing) by every counter. With ``budget``, a (role,
    content class) group stops taking messages once it holds that many characters (in trace
    order): a ratio of sums settles long before a big sweep's last megabyte."""
    samples = []
    taken: dict[tuple[str, str], int] = {}
    for trace in traces:
        for message in trace.messages:
            text = message_search_text(message).strip("\n")
            if not text:
                continue
            content_class = classify(text)
            group = (message.role, content_class)
            if budget is not None:
                if taken.get(group, 0) >= budget:
                    continue
                taken[group] = taken.get(group, 0) + len(text)
            samples.append(
                Sample(
                    role=message.role,
                    content_class=content_class,
                    chars=len(text),
                    tokens={c.name: c.count(text) for c in counters},
                )
            )
    return samples


def density_table(
    samples: Iterable[Sample], counters: Sequence[str], key: Callable[[Sample], str]
) -> dict[str, dict[str, Density]]:
    """group -> counter -> totals, groups in first-seen order, then an ``ALL`` row."""
    table: dict[str, dict[str, Density]] = {}
    total = dict.fromkeys(counters, _ZERO)
    for s in samples:
        row = table.setdefault(key(s), dict.fromkeys(counters, _ZERO))
        for name in counters:
            one = Density(1, s.chars, s.tokens[name], s.chars // 4)
            row[name] = row[name] + one
            total[name] = total[name] + one
    table[ALL] = total
    return table


def by_content_class(sample: Sample) -> str:
    return sample.content_class


def by_role(sample: Sample) -> str:
    return sample.role
