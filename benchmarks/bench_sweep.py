"""Sweep throughput and memory: local processes vs Dask, and streaming over a growing corpus.

- ``cells_per_s_1w`` / ``cells_per_s_2w``: one sweep (16 embedded ``support_agent`` traces x
  none / sliding_window / dbgpt at 4 thresholds x 3 windows, true counter o200k; 288 cells, 72
  with ``--quick``) run on one and on two
  local worker processes, wall time of the whole ``run_sweep`` (plan, workers' start-up,
  replays, journal, final table); ``parallel_efficiency_2w = rate_2w / (2 * rate_1w)``.
  ``cells_per_s_inline`` is ``--workers 1`` (this process, no pool).
- ``dask_overhead_ratio``: the same sweep on a Dask LocalCluster of two worker processes,
  divided by the two local processes' time (cluster start-up included, as users pay it;
  ``dask_startup_s`` is that start-up alone).
- ``memory_growth_ratio``: peak RSS of a ``ctxbench sweep`` over 1,000 traces divided by the
  same over 100 traces (one cell per trace), for the driver and for its two workers (the
  larger worker), measured with getrusage in a fresh process; the figure is the larger of the
  two ratios. Traces are streamed, so it stays near 1.
The machine may be shared: compare ratios measured in one run, not absolute rates.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.shared import SUPPORT_SWEEP

MEMORY_SWEEP = """
windows = [20000]
reserved = [1000]
counters = ["chars4"]

[[traces]]
path = "traces.jsonl"

[[strategies]]
name = "sliding_window"
params = { keep_rounds = [4] }
"""

#: Runs the CLI in a fresh process and prints the peak RSS (KiB) of it and of its workers.
PEAK_RSS = """
import json, resource, sys
from ctxbench.cli import main
main(sys.argv[1:])
print(json.dumps({
    "driver_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "workers_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
}))
"""


def _timed_sweep(sweep: Path, out: Path, executor: Any) -> tuple[float, int]:
    from ctxbench.sweep import load_sweep, run_sweep

    started = time.perf_counter()
    summary = run_sweep(load_sweep(sweep), out, executor=executor)
    return time.perf_counter() - started, summary.cells


def throughput(folder: Path, seeds: int) -> dict[str, Any]:
    from ctxbench.sweep import DaskExecutor, InlineExecutor, ProcessExecutor

    sweep = folder / "throughput.toml"
    sweep.write_text(SUPPORT_SWEEP.format(name="bench", seeds=list(range(seeds))), encoding="utf-8")
    inline_s, cells = _timed_sweep(sweep, folder / "inline", InlineExecutor())
    one_s, _ = _timed_sweep(sweep, folder / "one", ProcessExecutor(1))
    two_s, _ = _timed_sweep(sweep, folder / "two", ProcessExecutor(2))
    started = time.perf_counter()
    dask = DaskExecutor(local=2)
    dask_startup = time.perf_counter() - started
    dask_s, _ = _timed_sweep(sweep, folder / "dask", dask)
    dask_s += dask_startup
    rate_1, rate_2 = cells / one_s, cells / two_s
    return {
        "cells": cells,
        "cells_per_s_inline": round(cells / inline_s, 2),
        "cells_per_s_1w": round(rate_1, 2),
        "cells_per_s_2w": round(rate_2, 2),
        "parallel_efficiency_2w": round(rate_2 / (2 * rate_1), 3),
        "local_2w_s": round(two_s, 2),
        "dask_2w_s": round(dask_s, 2),
        "dask_startup_s": round(dask_startup, 2),
        "dask_overhead_ratio": round(dask_s / two_s, 3),
    }


def _corpus(path: Path, n: int) -> None:
    """``n`` distinct 12-round tool-calling traces (about 30 KB each)."""
    from dataclasses import replace

    from benchmarks.bench_replay import synthetic_trace
    from ctxbench.formats.canonical import write_traces

    traces = (
        replace(synthetic_trace(12, seed=i, obs_chars=2000), id=f"bench-{i}") for i in range(n)
    )
    write_traces(path, traces)


def peak_rss(folder: Path, n_traces: int) -> dict[str, float]:
    folder.mkdir(parents=True, exist_ok=True)
    _corpus(folder / "traces.jsonl", n_traces)
    (folder / "sweep.toml").write_text(MEMORY_SWEEP, encoding="utf-8")
    args = ["sweep", str(folder / "sweep.toml"), "-o", str(folder / "out"), "--workers", "2"]
    done = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *args, "--quiet"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    peak = json.loads(done.stdout.strip().splitlines()[-1])
    return {"driver_mb": peak["driver_kb"] / 1024, "workers_mb": peak["workers_kb"] / 1024}


def run(quick: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-sweep-") as tmp:
        folder = Path(tmp)
        out = throughput(folder, seeds=4 if quick else 16)
        small = peak_rss(folder / "m100", 100)
        large = peak_rss(folder / "m1000", 1000)
    out.update(
        {
            "peak_rss_mb_100": {k: round(v, 1) for k, v in small.items()},
            "peak_rss_mb_1000": {k: round(v, 1) for k, v in large.items()},
            "memory_growth_ratio_driver": round(large["driver_mb"] / small["driver_mb"], 3),
            "memory_growth_ratio_workers": round(large["workers_mb"] / small["workers_mb"], 3),
            "memory_growth_ratio": round(max(large[k] / small[k] for k in small), 3),
        }
    )
    return out


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
