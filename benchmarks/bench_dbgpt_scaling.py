"""DB-GPT 0.8.2 against trace length: CPU milliseconds per round and peak RSS, each length a
cold replay in a fresh process (medians of 3; 1 with ``--quick``).

The trace is ``bench_replay.synthetic_trace`` (8 KB observations of prose, logs and JSON),
written as a canonical trace file and read back by the child, replayed with the default
release (0.8.2), o200k as the true counter, DB-GPT's own estimator and a 128k window, for a
caller that keeps no file (a sweep's ``keep_files = "none"``, ``run`` without ``--files-dir``:
the snapshots are kept by path and hash). Goals
(issue 43): milliseconds per round flat in the length (the longest / the shortest within
1.2x), and peak RSS at most 10x the trace file.

``python -m benchmarks.bench_dbgpt_scaling [--quick] [--rounds 100,300]`` prints one JSON
object.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.shared import paced_replay

ROUNDS = (100, 300, 1000, 3000)
WINDOW = 131072


def child(path: str) -> dict[str, Any]:
    """One cold replay of the trace file ``path`` in this process."""
    from ctxbench.cell.runner import build_parts
    from ctxbench.cell.spec import RunSpec
    from ctxbench.cell.traces import open_traces

    trace = next(iter(open_traces(path).traces()))
    parts = build_parts(RunSpec(trace.id, "", "dbgpt", window=WINDOW), trace)
    parts.true_counter.count("warm up")
    parts.estimator.count("warm up")
    started = time.process_time()
    output = paced_replay(trace, parts, file_contents=False)
    seconds = time.process_time() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": seconds, "peak_rss_mb": peak_kb / 1024, "events": len(output.events)}


def _once(path: Path) -> dict[str, Any]:
    args = [sys.executable, "-m", "benchmarks.bench_dbgpt_scaling", "--child", str(path)]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dbgpt replay of {path} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(quick: bool = False, rounds: tuple[int, ...] = ROUNDS) -> dict[str, Any]:
    from benchmarks.bench_replay import synthetic_trace
    from ctxbench.formats.canonical import write_traces

    repeats = 1 if quick else 3
    lengths = tuple(n for n in rounds if n <= 300) if quick else rounds
    out: dict[str, Any] = {"window": WINDOW, "repeats": repeats, "rounds": {}}
    with tempfile.TemporaryDirectory(prefix="ctxbench-dbgpt-scaling-") as tmp:
        for n in lengths:
            path = Path(tmp) / f"rounds-{n}.jsonl"
            write_traces(path, [synthetic_trace(n)])
            print(f"  dbgpt {n} rounds ...", file=sys.stderr, flush=True)
            runs = [_once(path) for _ in range(repeats)]
            seconds = statistics.median(r["seconds"] for r in runs)
            peak = max(r["peak_rss_mb"] for r in runs)
            size_mb = path.stat().st_size / 2**20
            out["rounds"][str(n)] = {
                "ms_per_round": round(seconds / n * 1000, 3),
                "cpu_s": round(seconds, 3),
                "peak_rss_mb": round(peak, 1),
                "trace_file_mb": round(size_mb, 2),
                "peak_rss_vs_trace_file": round(peak / size_mb, 1),
            }
    per_round = [v["ms_per_round"] for v in out["rounds"].values()]
    longest = out["rounds"][str(lengths[-1])]
    flat = per_round[-1] / per_round[0]
    out["ms_per_round"] = {
        "longest_vs_shortest": round(flat, 2),
        "goal": 1.2,
        "met": flat <= 1.2,
        "rounds": [lengths[0], lengths[-1]],
    }
    out["peak_rss"] = {
        "peak_rss_vs_trace_file": longest["peak_rss_vs_trace_file"],
        "goal": 10,
        "met": longest["peak_rss_vs_trace_file"] <= 10,
        "rounds": lengths[-1],
    }
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--child"]:
        print(json.dumps(child(args[1])))
        return 0
    rounds = ROUNDS
    if "--rounds" in args:
        rounds = tuple(int(n) for n in args[args.index("--rounds") + 1].split(","))
    print(json.dumps(run(quick="--quick" in args, rounds=rounds), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
