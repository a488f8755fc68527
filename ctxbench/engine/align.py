"""The alignment of a prompt before and after a compaction, as ``difflib`` computes it.

A compaction event counts messages dropped, rewritten and added by aligning the two message
lists on fingerprints. ``difflib.SequenceMatcher`` does that in time quadratic in the list's
length, which a strategy that rebuilds and compacts its whole prompt at every call (DB-GPT
0.8.2) pays on every call of a long trace. Compactions almost never repeat or reorder a
message, and for those lists the alignment is found in one pass: when every key is unique on
each side and the keys both sides share appear in the same order, every common key is part of
the longest common subsequence, and difflib's matching blocks are exactly the runs of
consecutive shared keys. Any other pair of lists goes to difflib itself, so the opcodes are
always difflib's.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import compress, count
from typing import Any, Literal

from ctxbench import pairing

Tag = Literal["replace", "delete", "insert", "equal"]
Opcode = tuple[Tag, int, int, int, int]


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """``difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()``."""
    return aligned(a, b)[0]


def aligned(a: Sequence[str], b: Sequence[str], unique: bool = False) -> tuple[list[Opcode], bool]:
    """:func:`opcodes`, and whether both lists' keys are known unique (the one-pass paths
    check it, difflib's does not). ``unique``: ``a``'s keys are known unique (the last
    alignment found them so), which spares the set that checks a list when the other only
    dropped or inserted a run."""
    blocks = _one_change(a, b, unique)
    if blocks is None:
        blocks = _monotone_blocks(a, b)
    if blocks is None:
        import difflib

        return difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes(), False
    out: list[Opcode] = []
    i = j = 0
    for ai, bj, size in [*blocks, (len(a), len(b), 0)]:
        if i < ai and j < bj:
            out.append(("replace", i, ai, j, bj))
        elif i < ai:
            out.append(("delete", i, ai, j, bj))
        elif j < bj:
            out.append(("insert", i, ai, j, bj))
        if size:
            out.append(("equal", ai, ai + size, bj, bj + size))
        i, j = ai + size, bj + size
    return out, True


def _one_change(
    a: Sequence[str], b: Sequence[str], unique: bool = False
) -> list[tuple[int, int, int]] | None:
    """The matching blocks when ``b`` is ``a`` with one run changed (a run dropped, inserted,
    or replaced by keys ``a`` does not have), every key unique on each side: the shared keys
    are the common head and tail, found in C. None otherwise. ``unique``: ``a``'s keys are
    known unique. A side without a run of its own is the other's head and tail, keys of
    distinct places of the other: unique when the other is, and not checked again."""
    head = equal_head(a, b)
    tail = equal_tail(a, b, min(len(a), len(b)) - head)
    middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
    if not unique and middle_a:
        if len(set(a)) != len(a):
            return None
        unique = True
    # b has keys of its own, or a's uniqueness is to follow from b's
    if (middle_b or not unique) and len(set(b)) != len(b):
        return None
    if middle_a and middle_b and not set(middle_a).isdisjoint(middle_b):
        return None
    blocks = [(0, 0, head)] if head else []
    if tail:
        blocks.append((len(a) - tail, len(b) - tail, tail))
    return blocks


def equal_head(a: Sequence[Any], b: Sequence[Any], limit: int | None = None) -> int:
    """How many leading items ``a`` and ``b`` share (equal), at most ``limit``: a chunk at a
    time in C, then the chunk that differs item by item. (Lists of one type: a list and a
    tuple compare unequal, so they are read item by item, with the same answer.)"""
    most = min(len(a), len(b)) if limit is None else min(limit, len(a), len(b))
    i = 0
    while i < most:
        stop = min(i + pairing.CHUNK, most)
        xs, ys = a[i:stop], b[i:stop]
        if xs != ys:
            found = next(compress(count(i), map(operator.ne, xs, ys)), None)
            if found is not None:
                return found
        i = stop
    return max(most, 0)


def equal_tail(a: Sequence[Any], b: Sequence[Any], limit: int) -> int:
    """How many trailing items ``a`` and ``b`` share (equal), at most ``limit``
    (:func:`equal_head` from the ends, without reversed copies)."""
    most = min(limit, len(a), len(b))
    la, lb = len(a), len(b)
    done = 0
    while done < most:
        size = min(pairing.CHUNK, most - done)
        xs, ys = a[la - done - size : la - done], b[lb - done - size : lb - done]
        if xs != ys:
            ends = map(operator.ne, reversed(xs), reversed(ys))
            found = next(compress(count(done), ends), None)
            if found is not None:
                return found
        done += size
    return max(most, 0)


def _monotone_blocks(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int]] | None:
    """The matching blocks (merged runs of shared keys), or None when a key repeats on a side or
    the shared keys are not in the same order on both."""
    where = {key: j for j, key in enumerate(b)}
    if len(where) != len(b) or len(set(a)) != len(a):
        return None
    blocks: list[tuple[int, int, int]] = []
    last_j = -1
    for i, key in enumerate(a):
        j = where.get(key)
        if j is None:
            continue
        if j < last_j:
            return None
        if blocks and blocks[-1][0] + blocks[-1][2] == i and blocks[-1][1] + blocks[-1][2] == j:
            ai, bj, size = blocks[-1]
            blocks[-1] = (ai, bj, size + 1)
        else:
            blocks.append((i, j, 1))
        last_j = j
    return blocks
