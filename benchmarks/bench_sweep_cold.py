"""Sweeps against replays, cold: each side of a ratio in a process of its own (issue 43).

- ``dbgpt_0.8.2`` / ``dbgpt_design``: CPU seconds of a 50-configuration DB-GPT sweep (5
  warning thresholds x 10 ``min_keep_recent_rounds``, 32k window, ``keep_files = "none"``, one
  worker: the ratio is work, not parallelism) of a 300-round synthetic trace with its mined
  probes / CPU seconds of one replay of that trace. Each side is a fresh process that imports
  the same modules (ctxbench's and pyarrow's) and then, on the clock, loads the trace and its
  tokenizers and runs; nothing is shared between the two sides. Goal: <= 2.
- ``workers``: CPU seconds (the driver's and its workers') of one sweep (``support_agent``
  seeds x none / sliding_window / dbgpt at 4 thresholds x 3 windows) on two local worker
  processes / the same on one. Goal: <= 1.05 (a second worker adds no work).
- ``memory``: peak RSS of a one-trace DB-GPT sweep of ``4 N`` cells against ``N`` cells (one
  worker): MiB per added cell. Goal: flat, read as <= 0.1 MiB per added cell.

Each figure is the median of :data:`REPEATS` side-by-side pairs (interleaved), every pair's
ratio listed with it. ``python -m benchmarks.bench_sweep_cold [--quick] [NAME ...]`` prints one
JSON object; :func:`main` returns 1 when a figure is invalid (a sweep measured cheaper than the
one replay it contains).
"""

from __future__ import annotations

import dataclasses
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.shared import SUPPORT_SWEEP, in_child

REPEATS = 3
THRESHOLDS = [0.5, 0.55, 0.6, 0.65, 0.7]
KEEP_ROUNDS = list(range(1, 11))
WINDOW = 32768


def _cpu() -> float:
    """CPU seconds of this process and of its children that ended."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _peak_mb() -> float:
    """Peak RSS (MiB) of this process or of its largest child."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024


def _imports() -> None:
    """What both sides import before the clock starts (a process's, paid once)."""
    import pyarrow.parquet  # noqa: F401

    import ctxbench.cell.runner
    import ctxbench.cell.traces
    import ctxbench.sweep  # noqa: F401


def write_trace(path: Path, rounds: int) -> None:
    """The synthetic trace of ``rounds`` rounds with the probes mined from it, at ``path``."""
    from benchmarks.bench_replay import synthetic_trace
    from ctxbench.formats.canonical import write_traces
    from ctxbench.probes.mining import mine_probes

    bare = synthetic_trace(rounds)
    write_traces(path, [dataclasses.replace(bare, probes=tuple(mine_probes(bare)))])


def _dbgpt_spec(source: Path, release: str, cells: int) -> Any:
    from ctxbench.sweep.spec import StrategyGrid, SweepSpec, TraceSource

    keep = KEEP_ROUNDS[: max(1, cells // len(THRESHOLDS))]
    return SweepSpec(
        traces=(TraceSource(path=str(source)),),
        strategies=(
            StrategyGrid(
                "dbgpt",
                {
                    "release": release,
                    "warning_threshold": THRESHOLDS,
                    "min_keep_recent_rounds": keep,
                },
            ),
        ),
        windows=(WINDOW,),
        keep_files="none",
    )


def replay_side(source: Path, release: str) -> dict[str, float]:
    """One cold replay of the trace at ``source`` (DB-GPT ``release``)."""
    _imports()
    started = _cpu()
    from ctxbench.cell.runner import resolve_spec, run_spec
    from ctxbench.cell.spec import RunSpec
    from ctxbench.formats.canonical import read_traces

    trace = next(iter(read_traces(source)))
    spec = resolve_spec(
        RunSpec(
            trace_id=trace.id,
            trace_hash=trace.content_hash,
            strategy="dbgpt",
            params={"release": release},
            window=WINDOW,
            trace_source=str(source),
        )
    )
    run_spec(spec, trace)
    return {"cpu_s": _cpu() - started}


def sweep_side(source: Path, release: str, cells: int, out: Path) -> dict[str, float]:
    """One cold sweep of ``cells`` DB-GPT configurations of the trace at ``source``."""
    _imports()
    started = _cpu()
    from ctxbench.sweep import run_sweep

    summary = run_sweep(_dbgpt_spec(source, release, cells), out)
    return {"cpu_s": _cpu() - started, "cells": summary.cells, "peak_mb": _peak_mb()}


def workers_side(seeds: int, workers: int, out: Path) -> dict[str, float]:
    """The workers' sweep on ``workers`` local processes: CPU of the driver and workers."""
    _imports()
    started = _cpu()
    from ctxbench.sweep import ProcessExecutor, load_sweep, run_sweep

    sweep = out.parent / f"{out.name}.toml"
    sweep.write_text(
        SUPPORT_SWEEP.format(name="bench-workers", seeds=list(range(seeds))), encoding="utf-8"
    )
    begun = time.perf_counter()
    summary = run_sweep(load_sweep(sweep), out, executor=ProcessExecutor(workers))
    return {
        "cpu_s": _cpu() - started,
        "wall_s": time.perf_counter() - begun,
        "cells": summary.cells,
    }


def _child(*args: str) -> dict[str, float]:
    return in_child("benchmarks.bench_sweep_cold", "--child", *args)


def _ratio(
    over: list[dict[str, float]], under: list[dict[str, float]], key: str = "cpu_s"
) -> tuple[float, list[float]]:
    ratios = [a[key] / b[key] for a, b in zip(over, under)]
    return statistics.median(ratios), [round(r, 3) for r in ratios]


def sweep_vs_replay(folder: Path, release: str, repeats: int, rounds: int) -> dict[str, Any]:
    source = folder / f"trace-{rounds}.jsonl"
    if not source.exists():
        write_trace(source, rounds)
    replays, sweeps = [], []
    for i in range(repeats):
        replays.append(_child("replay", str(source), release))
        out = folder / f"sweep-{release}-{i}"
        sweeps.append(_child("sweep", str(source), release, "50", str(out)))
    ratio, ratios = _ratio(sweeps, replays)
    return {
        "rounds": rounds,
        "cells": int(sweeps[0]["cells"]),
        "replay_cpu_s": round(statistics.median(r["cpu_s"] for r in replays), 3),
        "sweep_cpu_s": round(statistics.median(s["cpu_s"] for s in sweeps), 3),
        "sweep_vs_replay": round(ratio, 3),
        "ratios": ratios,
        "goal": 2.0,
        "met": ratio <= 2.0,
        "valid": min(s["cpu_s"] for s in sweeps) >= max(r["cpu_s"] for r in replays) * 0.9,
    }


def workers(folder: Path, repeats: int, seeds: int) -> dict[str, Any]:
    ones, twos = [], []
    for i in range(repeats):
        ones.append(_child("workers", str(seeds), "1", str(folder / f"w1-{i}")))
        twos.append(_child("workers", str(seeds), "2", str(folder / f"w2-{i}")))
    ratio, ratios = _ratio(twos, ones)
    return {
        "cells": int(ones[0]["cells"]),
        "cpu_1w_s": round(statistics.median(o["cpu_s"] for o in ones), 3),
        "cpu_2w_s": round(statistics.median(t["cpu_s"] for t in twos), 3),
        "wall_1w_s": round(statistics.median(o["wall_s"] for o in ones), 3),
        "wall_2w_s": round(statistics.median(t["wall_s"] for t in twos), 3),
        "cpu_2w_vs_1w": round(ratio, 3),
        "ratios": ratios,
        "goal": 1.05,
        "met": ratio <= 1.05,
        "valid": True,
    }


def memory(folder: Path, repeats: int, rounds: int, small: int) -> dict[str, Any]:
    source = folder / f"trace-{rounds}.jsonl"
    if not source.exists():
        write_trace(source, rounds)
    smalls, larges = [], []
    for i in range(repeats):
        smalls.append(_child("sweep", str(source), "0.8.2", str(small), str(folder / f"ms-{i}")))
        larges.append(
            _child("sweep", str(source), "0.8.2", str(4 * small), str(folder / f"ml-{i}"))
        )
    per_cell = [
        (b["peak_mb"] - a["peak_mb"]) / (b["cells"] - a["cells"]) for a, b in zip(smalls, larges)
    ]
    figure = statistics.median(per_cell)
    return {
        "rounds": rounds,
        "cells": [int(smalls[0]["cells"]), int(larges[0]["cells"])],
        "peak_mb": [
            round(statistics.median(s["peak_mb"] for s in smalls), 1),
            round(statistics.median(s["peak_mb"] for s in larges), 1),
        ],
        "mib_per_added_cell": round(figure, 3),
        "per_pair": [round(p, 3) for p in per_cell],
        "goal": 0.1,
        "met": figure <= 0.1,
        "valid": True,
    }


NAMES = ("dbgpt_0.8.2", "dbgpt_design", "workers", "memory")


def run(quick: bool = False, names: tuple[str, ...] = NAMES) -> dict[str, Any]:
    repeats = 1 if quick else REPEATS
    rounds = 60 if quick else 300
    out: dict[str, Any] = {"repeats": repeats}
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-cold-") as tmp:
        folder = Path(tmp)
        for name in names:
            print(f"  sweep_cold {name} ...", file=sys.stderr, flush=True)
            if name.startswith("dbgpt_"):
                release = name.removeprefix("dbgpt_")
                out[name] = sweep_vs_replay(folder, release, repeats, rounds)
            elif name == "workers":
                out[name] = workers(folder, repeats, seeds=4 if quick else 8)
            elif name == "memory":
                out[name] = memory(folder, repeats, rounds=60 if quick else 100, small=10)
    out["valid"] = all(v.get("valid", True) for v in out.values() if isinstance(v, dict))
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--child"]:
        side, rest = args[1], args[2:]
        if side == "replay":
            result = replay_side(Path(rest[0]), rest[1])
        elif side == "sweep":
            result = sweep_side(Path(rest[0]), rest[1], int(rest[2]), Path(rest[3]))
        else:
            result = workers_side(int(rest[0]), int(rest[1]), Path(rest[2]))
        print(json.dumps(result))
        return 0
    wanted = tuple(a for a in args if not a.startswith("-")) or NAMES
    result = run(quick="--quick" in args, names=wanted)
    print(json.dumps(result, indent=2))
    return 0 if result["valid"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
