"""A 50-configuration DB-GPT sweep of one 300-round trace against one replay of it, and the
disk each cell leaves for each ``keep_files`` value.

The sweep runs in one process (one worker), so the ratio is work, not parallelism: what the
replays share (counts, prompts, the ledger's history) makes the 49 other configurations
cheaper than the first.

- the trace: 300 synthetic tool-calling rounds with the probes ctxbench mines from it attached
  (mined once, so neither side pays for mining);
- ``replay_s``: one cold DB-GPT replay (o200k, 32k window) of the trace (tokenizers loaded
  first, the trace never counted before);
- ``sweep_s``, ``sweep_vs_replay_ratio`` (goal <= 3): 5 warning thresholds x 10
  ``min_keep_recent_rounds`` = 50 cells, ``keep_files = "none"``, pyarrow imported first (its
  import, 0.1-0.15 s, is a process's, paid once, not a sweep's); the ``_cpu`` figures are the
  same in CPU seconds. The replay and the sweep after it run side by side in a fresh process,
  :data:`REPEATS` times: the figures are the medians, ``..._ratios`` lists each pair's;
- ``sweep_s_by_keep_files``: the same sweep for each value, one after the other in this
  process after a replay of the trace (so all warm); ``disk_kb_per_cell``: the results directory's size / cells, for
  ``"none"``, ``"cited"`` (the files a probe's evidence was found in) and ``"all"``;
  ``files_per_cell`` likewise (the synthetic trace's probes are answered in context or lost,
  so "cited" keeps nothing there);
- ``scenario``: the same figures on embedded scenarios whose probes snapshots answer.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Any

from benchmarks.bench_view import timed

if TYPE_CHECKING:
    from ctxbench.cell.runner import KeepFiles
    from ctxbench.sweep.spec import SweepSpec
    from ctxbench.trace import Trace

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


#: fresh processes the side-by-side figures are measured in: each holds one cold replay, and
#: on a shared machine one pair's noise is of the size of the goal's margin, so the figures
#: reported are the medians (every pair's ratio is listed with them)
REPEATS = 3


def _trace(rounds: int) -> Trace:
    from benchmarks.bench_replay import synthetic_trace
    from ctxbench.probes.mining import mine_probes

    bare = synthetic_trace(rounds)
    return dataclasses.replace(bare, probes=tuple(mine_probes(bare)))


def _sweep_spec(source: Path) -> SweepSpec:
    from ctxbench.sweep.spec import StrategyGrid, SweepSpec, TraceSource

    return SweepSpec(
        traces=(TraceSource(path=str(source)),),
        strategies=(
            StrategyGrid(
                "dbgpt", {"warning_threshold": THRESHOLDS, "min_keep_recent_rounds": KEEP_ROUNDS}
            ),
        ),
        windows=(32768,),
        keep_files="none",
    )


def side_by_side(rounds: int) -> dict[str, float]:
    """In this process, which has not replayed the trace: one cold replay of it, then the
    50-cell sweep (``keep_files = "none"``); wall and CPU seconds of each."""
    from ctxbench.formats.canonical import write_traces
    from ctxbench.sweep import run_sweep

    trace = _trace(rounds)
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-keep-") as tmp:
        source = Path(tmp) / "trace.jsonl"
        write_traces(source, [trace])
        replay_s, replay_cpu = _replay(trace, source)
        _, sweep_s, sweep_cpu = timed(lambda: run_sweep(_sweep_spec(source), Path(tmp) / "out"))
    return {
        "replay_s": replay_s,
        "sweep_s": sweep_s,
        "replay_cpu_s": replay_cpu,
        "sweep_cpu_s": sweep_cpu,
    }


def _replay(trace: Trace, source: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one DB-GPT replay of ``trace`` (written at ``source``), the
    tokenizers loaded first; then pyarrow is imported (the results table's writer, imported
    once a process: after the replay, which measured 4% more CPU time with it imported)."""
    from ctxbench.cell.runner import resolve_spec, run_spec
    from ctxbench.cell.spec import RunSpec
    from ctxbench.counting import get_counter

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
        get_counter(name).count("warm up")
    _, seconds, cpu_seconds = timed(lambda: run_spec(spec, trace))
    import pyarrow.parquet  # noqa: F401

    return seconds, cpu_seconds


def _in_fresh_process(rounds: int) -> dict[str, float]:
    root = Path(__file__).resolve().parent.parent
    code = (
        "import json; from benchmarks.bench_keep_files import side_by_side; "
        f"print(json.dumps(side_by_side({rounds})))"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def run(quick: bool) -> dict[str, Any]:
    from ctxbench.formats.canonical import write_traces
    from ctxbench.sweep import run_sweep

    rounds = 60 if quick else 300
    pairs = [_in_fresh_process(rounds) for _ in range(REPEATS)]
    ratios = [p["sweep_s"] / p["replay_s"] for p in pairs]
    cpu_ratios = [p["sweep_cpu_s"] / p["replay_cpu_s"] for p in pairs]
    trace = _trace(rounds)
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-keep-") as tmp:
        source = Path(tmp) / "trace.jsonl"
        write_traces(source, [trace])
        _replay(trace, source)  # the sweeps below are all warm
        sweep = _sweep_spec(source)
        seconds: dict[str, float] = {}
        cpu_seconds: dict[str, float] = {}
        disk: dict[str, float] = {}
        files: dict[str, float] = {}
        cells = 0
        for keep in KEEP:
            out = Path(tmp) / keep
            summary, wall, cpu = timed(
                partial(run_sweep, dataclasses.replace(sweep, keep_files=keep), out)
            )
            cells = summary.cells
            seconds[keep], cpu_seconds[keep] = round(wall, 3), round(cpu, 3)
            disk[keep], files[keep] = _disk(out, cells)
        scenario = _scenario_disk(Path(tmp) / "scenario")
    return {
        "scenario": scenario,
        "rounds": rounds,
        "probes": len(trace.probes),
        "cells": cells,
        "replay_s": round(median(p["replay_s"] for p in pairs), 3),
        "sweep_s": round(median(p["sweep_s"] for p in pairs), 3),
        "sweep_vs_replay_ratio": round(median(ratios), 3),
        "sweep_vs_replay_ratios": [round(r, 3) for r in ratios],
        "replay_cpu_s": round(median(p["replay_cpu_s"] for p in pairs), 3),
        "sweep_cpu_s": round(median(p["sweep_cpu_s"] for p in pairs), 3),
        "sweep_vs_replay_cpu_ratio": round(median(cpu_ratios), 3),
        "sweep_vs_replay_cpu_ratios": [round(r, 3) for r in cpu_ratios],
        "sweep_s_by_keep_files": seconds,
        "sweep_cpu_s_by_keep_files": cpu_seconds,
        "disk_kb_per_cell": disk,
        "files_per_cell": files,
        "cpus": os.cpu_count(),
    }


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
