"""Fact values: expanding value patterns, and the near-duplicates used as distractors.

A fact's value is drawn from its pattern (``ORD-{d5}`` -> ``ORD-48213``); a distractor is the
same value with two adjacent digits swapped or one digit changed (``ORD-48231``), planted in an
unrelated message. The scorer matches numbers and ids exactly, so a distractor must never be
accepted as the answer; :func:`near_duplicate` checks that with the scorer's own matcher.
"""

from __future__ import annotations

import re
import string
from random import Random

from ctxbench.probes.scoring import TextIndex
from ctxbench.synth.scenario import PLACEHOLDER

_CHARSETS = {
    "d": string.digits,
    "h": "0123456789abcdef",
    "u": string.ascii_uppercase,
    "l": string.ascii_lowercase,
}


def expand(pattern: str, rng: Random, value: str = "") -> str:
    """Fill the placeholders of ``pattern``; ``{value}`` becomes ``value``."""

    def fill(match: re.Match[str]) -> str:
        token = match.group(1)
        if token == "value":
            return value
        if token.startswith("one:"):
            return rng.choice(token[4:].split("|"))
        charset, n = _CHARSETS[token[0]], int(token[1:])
        first = rng.choice(charset[1:] if token[0] == "d" else charset)  # no leading zero
        return first + "".join(rng.choice(charset) for _ in range(n - 1))

    return PLACEHOLDER.sub(fill, pattern)


def draw_value(pattern: str, rng: Random, taken: set[str], *, attempts: int = 50) -> str:
    """A value of ``pattern`` not in ``taken`` (and not overlapping one), added to ``taken``."""
    value = expand(pattern, rng)
    for _ in range(attempts):
        if value not in taken and not any(value in t or t in value for t in taken):
            break
        value = expand(pattern, rng)
    taken.add(value)
    return value


def near_duplicate(value: str, rng: Random) -> str | None:
    """A value one edit away that the scorer does not accept for ``value`` (None if the value
    has no digits: a changed word is a different fact, not a confusable one).

    Transpositions of adjacent digits come first (``48213`` -> ``48231``), then single-digit
    changes; no edit may give a number a new leading zero."""
    digits = [i for i, ch in enumerate(value) if ch.isdigit()]
    if not digits:
        return None
    swaps = [
        value[:i] + value[i + 1] + value[i] + value[i + 2 :]
        for i in digits
        if i + 1 in digits and value[i] != value[i + 1]
    ]
    changes = [
        value[:i] + d + value[i + 1 :] for i in digits for d in string.digits if d != value[i]
    ]
    rng.shuffle(swaps)
    rng.shuffle(changes)
    for candidate in swaps + changes:
        if _leading_zeros(candidate) > _leading_zeros(value):
            continue
        if not TextIndex.of(candidate).has(value) and not TextIndex.of(value).has(candidate):
            return candidate
    return None


def _leading_zeros(text: str) -> int:
    """How many digit runs of ``text`` start with a 0 followed by another digit."""
    return len(_LEADING_ZERO.findall(text))


_LEADING_ZERO = re.compile(r"(?<![0-9.])0[0-9]")
