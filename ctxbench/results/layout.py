"""The results directory, written down once. Every reader and writer takes its names from here.

Layout of ``DIR``::

    sweep.json          the resolved sweep spec (written when the sweep starts)
    cells.jsonl         the journal: one line per finished cell, in completion order,
                        {"run_id": ..., "row": {...result row...}, "events": [{...}, ...]}
    files/<run_id>/     snapshot and offload files a cell wrote (written before its line)
    results.parquet     the final table: one row per cell of the sweep, sorted by run_id
                        (``results.jsonl``, the same rows as JSON Lines, where pyarrow is not
                        installed: the core install, :func:`final_table`)
    results.csv         the same table as CSV (``--csv``)
    events.jsonl        every event of every cell, ``run_id`` first on each line, sorted by
                        run_id, then in the order the replay emitted them
    .lock               held (flock) while a sweep writes, so two sweeps never share a dir

``ctxbench run --out DIR/results.jsonl --events DIR/events.jsonl`` makes a results directory
too (rows as JSON Lines instead of the parquet table; no journal, no sweep.json).
"""

from __future__ import annotations

SPEC_FILE = "sweep.json"
JOURNAL = "cells.jsonl"
FILES = "files"
RESULTS = "results.parquet"
RESULTS_JSONL = "results.jsonl"
RESULTS_CSV = "results.csv"
EVENTS = "events.jsonl"
LOCK = ".lock"
#: The files derived from the journal when a sweep ends (a resumed sweep removes them first).
FINAL_FILES = (RESULTS, RESULTS_JSONL, RESULTS_CSV, EVENTS)
#: Every name a sweep writes at the top of its directory (temporary files aside).
OWN_FILES = frozenset({SPEC_FILE, JOURNAL, FILES, LOCK, *FINAL_FILES})
#: The row files a results directory may hold, in the order readers prefer them.
ROW_FILES = (RESULTS, RESULTS_JSONL)
#: Every file whose presence makes a folder a results directory.
MARKERS = (SPEC_FILE, JOURNAL, *ROW_FILES)
#: How to rebuild a damaged final file: a resumed sweep rewrites them from the journal.
REBUILD = f"delete it and rerun the sweep with --resume: the final files are rebuilt from {JOURNAL}"
#: The next step after a failed write: finished cells are in the journal, nothing is lost.
RESUME = "rerun with --resume (finished cells are kept)"


def final_table() -> str:
    """The name of a sweep's final table here: ``results.parquet`` where pyarrow is installed
    (the ``parquet`` extra), else ``results.jsonl`` (the same rows; every reader takes both)."""
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return RESULTS_JSONL
    return RESULTS
