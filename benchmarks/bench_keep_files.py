"""A 50-configuration DB-GPT sweep of one 300-round trace against one replay of it, and the
disk each cell leaves with ``keep_files = false`` (and, for comparison, with the files kept).

The sweep runs in this process (one worker), so the ratio is work, not parallelism: the
counters' caches make the 49 other configurations cheaper than the first.

- ``replay_s``: one cold DB-GPT replay (o200k, 32k window) of the trace (tokenizers loaded
  first, the trace never counted before);
- ``sweep_s``, ``sweep_vs_replay_ratio`` (goal <= 3): 5 warning thresholds x 10
  ``min_keep_recent_rounds`` = 50 cells, ``keep_files = false``;
- ``disk_kb_per_cell`` (false) and ``disk_kb_per_cell_kept`` (the same sweep keeping files).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from pathlib import Path
from typing import Any

THRESHOLDS = [0.5, 0.55, 0.6, 0.65, 0.7]
KEEP_ROUNDS = list(range(1, 11))


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def run(quick: bool) -> dict[str, Any]:
    from benchmarks.bench_replay import synthetic_trace
    from ctxbench.cell.runner import resolve_spec, run_spec
    from ctxbench.cell.spec import RunSpec
    from ctxbench.counting import get_counter
    from ctxbench.formats.canonical import write_traces
    from ctxbench.sweep import run_sweep
    from ctxbench.sweep.spec import StrategyGrid, SweepSpec, TraceSource

    rounds = 60 if quick else 300
    trace = synthetic_trace(rounds)
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-keep-") as tmp:
        source = Path(tmp) / "trace.jsonl"
        write_traces(source, [trace])
        spec = resolve_spec(
            RunSpec(
                trace_id=trace.id,
                trace_hash=trace.content_hash,
                strategy="dbgpt",
                window=32768,
                trace_source=str(source),
            )
        )
        for name in (spec.counter, spec.estimator):
            get_counter(name).count("warm up")  # tokenizers loaded; this trace never counted
        started = time.perf_counter()
        run_spec(spec, trace)  # cold: the first replay of this trace
        replay_s = time.perf_counter() - started
        sweep = SweepSpec(
            traces=(TraceSource(path=str(source)),),
            strategies=(
                StrategyGrid(
                    "dbgpt",
                    {"warning_threshold": THRESHOLDS, "min_keep_recent_rounds": KEEP_ROUNDS},
                ),
            ),
            windows=(32768,),
            keep_files=False,
        )
        out = Path(tmp) / "results"
        started = time.perf_counter()
        summary = run_sweep(sweep, out)
        sweep_s = time.perf_counter() - started
        kept = Path(tmp) / "kept"
        run_sweep(dataclasses.replace(sweep, keep_files=True), kept)
        cells = summary.cells
        return {
            "rounds": rounds,
            "cells": cells,
            "replay_s": round(replay_s, 3),
            "sweep_s": round(sweep_s, 3),
            "sweep_vs_replay_ratio": round(sweep_s / replay_s, 3),
            "disk_kb_per_cell": round(_size(out) / 1024 / cells, 1),
            "disk_kb_per_cell_kept": round(_size(kept) / 1024 / cells, 1),
            "files_left": sum(1 for _ in (out / "files").rglob("*"))
            if (out / "files").exists()
            else 0,
            "cpus": os.cpu_count(),
        }
