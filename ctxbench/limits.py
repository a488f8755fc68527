"""The size limits ctxbench enforces before work starts (issue 22).

Each limit is checked where the input is read or the work planned, and exceeding it is one
clear error naming the limit, before any memory or time is spent on it. They are far above
any real input (the largest recorded trace in /work/shared/traces is a few MB; the largest
single message ctxbench is measured on is 50 MB, benchmarks/bench_limits.py).

- :data:`MAX_LINE_CHARS`: one line of a JSON Lines file (a trace, a row, a probe record), or a
  whole ``.json`` document. Python holds about 2 bytes per character of a line being parsed,
  and a 4 GB single line under a 5 GB memory cap died with MemoryError.
- :data:`MAX_FORMAT_WIDTH`: a width or precision in a format template from a config
  (``{summary:>1000000000}`` asked for a gigabyte of padding: MemoryError).
- :data:`MAX_TRACE_CHARS`: the expected text of one generated trace (rounds x calls x output
  size, in product: 100,000 rounds of 50 MB outputs never finished).
- :data:`MAX_GENERATED_CHARS`: the expected text of every trace one scenario source generates
  (traces x rounds x calls x output size: ``gen --traces N``, or a sweep's ``count`` x
  ``seeds``), so a huge ``count`` of ordinary traces is refused before the first is built,
  in ``gen``, ``sweep --dry-run`` and ``sweep`` alike.
- :data:`MAX_SWEEP_MESSAGES`: messages replayed by a whole sweep (cells x trace length).
"""

from __future__ import annotations

MAX_LINE_CHARS = 256 * 1024 * 1024
MAX_FORMAT_WIDTH = 10_000
MAX_TRACE_CHARS = 1_000_000_000
MAX_GENERATED_CHARS = 4_000_000_000
MAX_SWEEP_MESSAGES = 2_000_000_000

__all__ = [
    "MAX_FORMAT_WIDTH",
    "MAX_GENERATED_CHARS",
    "MAX_LINE_CHARS",
    "MAX_SWEEP_MESSAGES",
    "MAX_TRACE_CHARS",
]
