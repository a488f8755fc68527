"""The viewer and the report on a 10,000-round run (``--quick``: 1,000 rounds).

One sweep of a 10,000-round tool-calling trace (about 1 KB a round: ``bench_limits``'s
``rounds_10000``) through ``none`` and ``dbgpt`` at a 32k window, ``keep_files = "none"``, in
this process; then its report and the viewer of its DB-GPT run (which replays it again to
record every prompt). Wall and CPU seconds (this process) of each:

- ``replay_s``: the DB-GPT cell's own ``replay_seconds``; ``view_s`` / ``view_cpu_s`` and
  ``view_vs_replay_ratio`` (the viewer replays once, then writes its chunks);
- ``report_s`` / ``report_cpu_s`` and ``report_vs_sweep_ratio``;
- ``viewer_mb``, ``viewer_files``; ``call_load_kb_max``: what the page loads to show one call
  (the run's summary, that call's chunk and the message chunks its prompt names), the largest
  over every 250th call: it must not grow with the run (the page loads only the call shown).
The machine may be shared: the ratios and CPU seconds are steadier than wall seconds.
"""

from __future__ import annotations

import json
import tempfile
import time
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
#: What ``viewer.js`` shows of a long prompt: its first and last messages.
SHOWN_HEAD, SHOWN_TAIL = 3, 300


def timed(fn: Callable[[], T]) -> tuple[T, float, float]:
    """``fn()`` and its wall and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def _data(viewer: Path, key: str) -> tuple[Any, int]:
    """A viewer data file's payload and size (files are ``ctxbenchLoad(key, data);``)."""
    path = viewer / "data" / f"{key}.js"
    text = path.read_text("utf-8")
    payload = text[text.index(",") + 1 : text.rindex(")")]
    return json.loads(payload), path.stat().st_size


def call_load_kb(viewer: Path, run_id: str, call: int) -> float:
    """Kilobytes the page loads to show ``call`` of ``run_id`` (as ``viewer.js`` does: the
    index, the run's summary, the chunks of this call and the one before, and the message
    chunks of the messages shown, and the files of the long ones shown: a long prompt shows its
    first 3 and last 300)."""
    index, index_size = _data(viewer, "index")
    run, run_size = _data(viewer, f"{run_id}/run")
    starts = run["call_chunks"]

    def chunk_of(k: int) -> int:
        return bisect_right(starts, k) - 1

    names = {f"calls-{chunk_of(k)}" for k in (call, max(call - 1, 0))}
    chunk, _ = _data(viewer, f"{run_id}/calls-{chunk_of(call)}")
    ids = [i for a, b in chunk[call - starts[chunk_of(call)]]["ranges"] for i in range(a, b + 1)]
    shown = ids[:SHOWN_HEAD] + ids[-SHOWN_TAIL:] if len(ids) > SHOWN_HEAD + SHOWN_TAIL else ids
    names |= {f"msgs-{i // index['messages_per_chunk']}" for i in shown}
    names |= {f"msg-{i}" for i in shown if (viewer / "data" / run_id / f"msg-{i}.js").exists()}
    sizes = sum((viewer / "data" / run_id / f"{name}.js").stat().st_size for name in names)
    return (index_size + run_size + sizes) / 1024


def run(quick: bool) -> dict[str, Any]:
    from benchmarks.bench_limits import many_rounds_trace
    from ctxbench.decisions.verdict import verdict_section
    from ctxbench.formats.canonical import write_traces
    from ctxbench.report.write import write_report
    from ctxbench.results import ResultsDir
    from ctxbench.sweep import run_sweep
    from ctxbench.sweep.spec import StrategyGrid, SweepSpec, TraceSource
    from ctxbench.view import build

    rounds = 1_000 if quick else 10_000
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-view-") as tmp:
        folder = Path(tmp)
        write_traces(folder / "trace.jsonl", [many_rounds_trace(rounds)])
        spec = SweepSpec(
            traces=(TraceSource(path=str(folder / "trace.jsonl")),),
            strategies=(StrategyGrid("none"), StrategyGrid("dbgpt")),
            windows=(32768,),
            keep_files="none",
        )
        out = folder / "results"
        _, sweep_s, sweep_cpu = timed(lambda: run_sweep(spec, out))
        _, report_s, report_cpu = timed(
            lambda: write_report(out, out / "report.html", lead=verdict_section)
        )
        row = next(r for r in ResultsDir(out).results() if r.strategy == "dbgpt")
        run_id = row.run_id
        viewer = folder / "viewer"
        _, view_s, view_cpu = timed(lambda: build(out, viewer, run_ids=[run_id]))
        calls = row.calls
        loads = [call_load_kb(viewer, run_id, k) for k in range(0, calls, 250)]
        files = [p for p in viewer.rglob("*") if p.is_file()]
        replay_s = float(row["replay_seconds"])
        return {
            "rounds": rounds,
            "calls": calls,
            "sweep_s": round(sweep_s, 2),
            "sweep_cpu_s": round(sweep_cpu, 2),
            "replay_s": round(replay_s, 2),
            "report_s": round(report_s, 2),
            "report_cpu_s": round(report_cpu, 2),
            "report_vs_sweep_ratio": round(report_s / sweep_s, 3),
            "view_s": round(view_s, 2),
            "view_cpu_s": round(view_cpu, 2),
            "view_vs_replay_ratio": round(view_s / replay_s, 3),
            "viewer_mb": round(sum(p.stat().st_size for p in files) / 1e6, 1),
            "viewer_files": len(files),
            "call_load_kb_max": round(max(loads), 1),
            "call_load_kb_first": round(loads[0], 1),
        }


if __name__ == "__main__":
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
