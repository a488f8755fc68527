"""The HTML report: how big it is and how long it takes, next to the sweep it reports on.

Runs the quickstart sweep (``scenarios/quickstart.toml``: 6 scenarios x 6 strategy
configurations x 3 windows x 2 true counters = 216 cells; with ``--quick`` two scenarios, one
window, one counter: 12 cells) in this process, then writes its report twice (a cold and a warm process-level cache of
tokenizers and fonts) and the drift report of the same traces.

- ``report_kb``, ``report_kb_per_run``: size of the self-contained HTML file.
- ``report_s`` (cold) / ``report_warm_s``; ``report_vs_sweep_ratio`` = report_s / sweep_s.
- ``drift_s``, ``drift_kb``: ``ctxbench drift`` of the sweep's traces (two counters, two windows).
- ``recorded``: the same ratio on a sweep over the shared recorded traces (``CTXBENCH_TRACES``:
  every mini-swe-agent, SWE-agent, tau-bench, tau2-bench and OpenHands file, the first 3
  traces of each, one file per name (two SWE-agent demonstrations share a trace id), probes
  mined; none, sliding_window and dbgpt x 32k and 128k; with ``--quick`` the first 3 files,
  2 traces each, 32k only); absent when the folder is not there.
- ``view_s``: ``ctxbench view`` of the quickstart's first DB-GPT run (replayed again).
The machine may be shared: compare the ratio, not absolute seconds.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Any

from ctxbench.resources import resource_dir


def timed_sweep(spec: Any, out: Path) -> tuple[Any, float]:
    """Run ``spec`` into ``out`` in this process: its summary and its seconds."""
    from ctxbench.sweep import run_sweep

    started = time.perf_counter()
    summary = run_sweep(spec, out)
    return summary, time.perf_counter() - started


def run(quick: bool) -> dict[str, Any]:
    from ctxbench.cell.traces import iter_traces
    from ctxbench.decisions.verdict import Verdict
    from ctxbench.formats.canonical import write_traces
    from ctxbench.report.write import write_drift_report, write_report
    from ctxbench.results import ResultsDir
    from ctxbench.sweep import load_sweep
    from ctxbench.sweep.sources import refs_of
    from ctxbench.view import build

    spec = load_sweep(resource_dir("scenarios") / "quickstart.toml")
    if quick:
        spec = dataclasses.replace(
            spec, traces=spec.traces[:2], windows=(32768,), counters=("tiktoken:o200k_base",)
        )
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-report-") as tmp:
        out = Path(tmp) / "results"
        summary, sweep_s = timed_sweep(spec, out)
        cold = write_report(out, out / "report.html", **Verdict().report_args())
        warm = write_report(out, out / "again.html", **Verdict().report_args())
        traces = [t for source in spec.traces for ref in refs_of(source) for t in iter_traces(ref)]
        write_traces(Path(tmp) / "traces.jsonl", traces)
        drift = write_drift_report(
            [Path(tmp) / "traces.jsonl"],
            Path(tmp) / "drift.html",
            counters=["tiktoken:o200k_base", "hf:qwen2.5"],
        )
        runs = summary.cells
        first = next(r for r in ResultsDir(out).results() if r.strategy == "dbgpt")
        started = time.perf_counter()
        build(out, Path(tmp) / "viewer", run_ids=[first.run_id])
        view_s = time.perf_counter() - started
    return {
        "recorded": _recorded(quick),
        "view_s": round(view_s, 2),
        "runs": runs,
        "sweep_s": round(sweep_s, 2),
        "report_s": cold.seconds,
        "report_warm_s": warm.seconds,
        "report_kb": round(cold.bytes / 1024),
        "report_kb_per_run": round(cold.bytes / 1024 / runs, 1) if runs else None,
        "report_vs_sweep_ratio": round(cold.seconds / sweep_s, 3),
        "drift_s": drift.seconds,
        "drift_kb": round(drift.bytes / 1024),
    }


#: Folders of the shared recorded traces and their formats (``CTXBENCH_TRACES``).
RECORDED = ("mini-swe-agent", "swe-agent", "tau-bench", "tau2-bench", "openhands-benchmarks")


def _recorded(quick: bool) -> dict[str, Any] | None:
    """report_s / sweep_s on a sweep over the shared recorded traces."""
    import os

    from ctxbench.decisions.verdict import Verdict
    from ctxbench.report.write import write_report
    from ctxbench.sweep.spec import StrategyGrid, SweepSpec, TraceSource

    root = Path(os.environ.get("CTXBENCH_TRACES", "/work/shared/traces"))
    folders = [root / f for f in RECORDED if (root / f).is_dir()]
    if not folders:
        return None
    files: dict[str, Path] = {}
    for folder in folders:
        for p in sorted(folder.rglob("*")):
            if p.is_file() and p.suffix in (".json", ".jsonl", ".traj"):
                files.setdefault(p.name, p)
    sources = tuple(
        TraceSource(path=str(p), format="auto", limit=2 if quick else 3) for p in files.values()
    )
    spec = SweepSpec(
        traces=sources[:3] if quick else sources,
        strategies=(StrategyGrid("none"), StrategyGrid("sliding_window"), StrategyGrid("dbgpt")),
        windows=(32768,) if quick else (32768, 131072),
        mine_probes=True,
        keep_files="none",
    )
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-recorded-") as tmp:
        out = Path(tmp) / "results"
        summary, sweep_s = timed_sweep(spec, out)
        written = write_report(out, out / "report.html", **Verdict().report_args())
    return {
        "runs": summary.cells,
        "failed": summary.failed,
        "sweep_s": round(sweep_s, 2),
        "report_s": written.seconds,
        "report_vs_sweep_ratio": round(written.seconds / sweep_s, 3),
    }
