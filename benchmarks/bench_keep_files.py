"""A 50-configuration DB-GPT sweep of one 300-round trace against one replay of it, and the
disk each cell leaves for each ``keep_files`` value.

The sweep runs in this process (one worker), so the ratio is work, not parallelism: the
counters' caches make the 49 other configurations cheaper than the first.

- the trace: 300 synthetic tool-calling rounds with the probes ctxbench mines from it attached
  (mined once, so neither side pays for mining);
- ``replay_s``: one cold DB-GPT replay (o200k, 32k window) of the trace (tokenizers loaded
  first, the trace never counted before);
- ``sweep_s``, ``sweep_vs_replay_ratio`` (goal <= 3): 5 warning thresholds x 10
  ``min_keep_recent_rounds`` = 50 cells, ``keep_files = "none"``; the ``_cpu`` figures are the
  same in this process's CPU seconds (steadier than wall time on a shared machine);
- ``disk_kb_per_cell``: the results directory's size / cells, for ``"none"``, ``"cited"``
  (the files a probe's evidence was found in) and ``"all"``; ``files_per_cell`` likewise (the
  synthetic trace's probes are answered in context or lost, so "cited" keeps nothing there);
- ``scenario``: the same figures on embedded scenarios whose probes snapshots answer.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxbench.cell.runner import KeepFiles

THRESHOLDS = [0.5, 0.55, 0.6, 0.65, 0.7]
KEEP_ROUNDS = list(range(1, 11))
KEEP: tuple[KeepFiles, ...] = ("none", "cited", "all")


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _disk(out: Path, cells: int) -> tuple[float, float]:
    """KB and files a sweep's directory holds per cell."""
    kept = [p for p in (out / "files").rglob("*") if p.is_file()]
    return round(_size(out) / 1024 / cells, 1), round(len(kept) / cells, 2)


def _scenario_disk(folder: Path) -> dict[str, Any]:
    """Disk per cell for each value on a trace whose probes DB-GPT's snapshots answer (the
    embedded ``support_agent`` and ``coding_agent``, DB-GPT as designed and sliding_window
    at 16k): ``"cited"`` keeps a few files, ``"all"`` every snapshot."""
    from ctxbench.sweep import run_sweep
    from ctxbench.sweep.spec import StrategyGrid, SweepSpec, TraceSource

    spec = SweepSpec(
        traces=(TraceSource(scenario="support_agent"), TraceSource(scenario="coding_agent")),
        strategies=(
            StrategyGrid("dbgpt", {"release": "design", "warning_threshold": [0.6, 0.7]}),
            StrategyGrid("sliding_window", {"keep_rounds": 4}),
        ),
        windows=(16384,),
    )
    out: dict[str, Any] = {"cells": 0, "disk_kb_per_cell": {}, "files_per_cell": {}}
    for keep in KEEP:
        cells = run_sweep(dataclasses.replace(spec, keep_files=keep), folder / keep).cells
        kb, files = _disk(folder / keep, cells)
        out["cells"] = cells
        out["disk_kb_per_cell"][keep] = kb
        out["files_per_cell"][keep] = files
    return out


def run(quick: bool) -> dict[str, Any]:
    from benchmarks.bench_replay import synthetic_trace
    from ctxbench.cell.runner import resolve_spec, run_spec
    from ctxbench.cell.spec import RunSpec
    from ctxbench.counting import get_counter
    from ctxbench.formats.canonical import write_traces
    from ctxbench.probes.mining import mine_probes
    from ctxbench.sweep import run_sweep
    from ctxbench.sweep.spec import StrategyGrid, SweepSpec, TraceSource

    rounds = 60 if quick else 300
    bare = synthetic_trace(rounds)
    trace = dataclasses.replace(bare, probes=tuple(mine_probes(bare)))
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
        started, cpu = time.perf_counter(), time.process_time()
        run_spec(spec, trace)  # cold: the first replay of this trace
        replay_s, replay_cpu = time.perf_counter() - started, time.process_time() - cpu
        sweep = SweepSpec(
            traces=(TraceSource(path=str(source)),),
            strategies=(
                StrategyGrid(
                    "dbgpt",
                    {"warning_threshold": THRESHOLDS, "min_keep_recent_rounds": KEEP_ROUNDS},
                ),
            ),
            windows=(32768,),
            keep_files="none",
        )
        seconds: dict[str, float] = {}
        cpu_seconds: dict[str, float] = {}
        disk: dict[str, float] = {}
        files: dict[str, float] = {}
        cells = 0
        for keep in KEEP:
            out = Path(tmp) / keep
            started, cpu = time.perf_counter(), time.process_time()
            cells = run_sweep(dataclasses.replace(sweep, keep_files=keep), out).cells
            seconds[keep] = round(time.perf_counter() - started, 3)
            cpu_seconds[keep] = round(time.process_time() - cpu, 3)
            disk[keep], files[keep] = _disk(out, cells)
        scenario = _scenario_disk(Path(tmp) / "scenario")
        return {
            "scenario": scenario,
            "rounds": rounds,
            "probes": len(trace.probes),
            "cells": cells,
            "replay_s": round(replay_s, 3),
            "sweep_s": seconds["none"],
            "sweep_vs_replay_ratio": round(seconds["none"] / replay_s, 3),
            "replay_cpu_s": round(replay_cpu, 3),
            "sweep_cpu_s": cpu_seconds["none"],
            "sweep_vs_replay_cpu_ratio": round(cpu_seconds["none"] / replay_cpu, 3),
            "sweep_s_by_keep_files": seconds,
            "sweep_cpu_s_by_keep_files": cpu_seconds,
            "disk_kb_per_cell": disk,
            "files_per_cell": files,
            "cpus": os.cpu_count(),
        }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
