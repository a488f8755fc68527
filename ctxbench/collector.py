"""CPython's cyclic garbage collector, paced for replays and sweeps.

A replay allocates containers by the hundred thousand (events and their fields, views, lists of
messages) and a sweep keeps growing the caches its replays share (prompts, counts). With the
default thresholds (700, 10, 10) every 700 net allocations start a collection, and each time
the objects that survived grow by a quarter a full collection traverses every cached prompt:
a 50-configuration DB-GPT sweep of a 300-round trace ran 509 young, 46 middle and 4 full
collections, 0.41 s of its 3.5 s (the one replay before it: 0.05 s of 1.2 s). A replay makes
next to no cyclic garbage (a finished replay is freed by reference counting; a test holds
every registered strategy to it), so young objects are collected every :data:`YOUNG_THRESHOLD` allocations
instead: the memory that can wait for a collection is a few MB, and the full traversals of a
sweep's caches all but end. The thresholds are the process's: :func:`paced` sets them for the
outermost block and puts back what it found.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: allocations between two collections of the young generation while a block runs
YOUNG_THRESHOLD = 50_000

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] = ()


@contextmanager
def paced() -> Iterator[None]:
    """Run the block with the young generation collected every :data:`YOUNG_THRESHOLD`
    allocations (a higher threshold set by the caller is kept); nested blocks and threads
    share the outermost block's setting, which is undone when the last one ends."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            young, *older = _saved
            if young != 0:  # 0: automatic collection is off; leave it so
                gc.set_threshold(max(young, YOUNG_THRESHOLD), *older)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.set_threshold(*_saved)


__all__ = ["YOUNG_THRESHOLD", "paced"]
