"""The HTML report: how big it is and how long it takes, next to the sweep it reports on.

Runs the quickstart sweep (``scenarios/quickstart.toml``: 6 scenarios x 5 strategy
configurations x 3 windows x 2 true counters = 180 cells; with ``--quick`` two scenarios, one
window, one counter: 10 cells) in this process, then writes its report twice (a cold and a warm process-level cache of
tokenizers and fonts) and the drift report of the same traces.

- ``report_kb``, ``report_kb_per_run``: size of the self-contained HTML file.
- ``report_s`` (cold) / ``report_warm_s``; ``report_vs_sweep_ratio`` = report_s / sweep_s.
- ``drift_s``, ``drift_kb``: ``ctxbench drift`` of the sweep's traces (two counters, two windows).
The machine may be shared: compare the ratio, not absolute seconds.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Any

from ctxbench.resources import resource_dir


def run(quick: bool) -> dict[str, Any]:
    from ctxbench.cell.traces import iter_traces
    from ctxbench.decisions.verdict import verdict_section
    from ctxbench.formats.canonical import write_traces
    from ctxbench.report.write import write_drift_report, write_report
    from ctxbench.sweep import load_sweep, run_sweep
    from ctxbench.sweep.sources import refs_of

    spec = load_sweep(resource_dir("scenarios") / "quickstart.toml")
    if quick:
        spec = dataclasses.replace(
            spec, traces=spec.traces[:2], windows=(32768,), counters=("tiktoken:o200k_base",)
        )
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-report-") as tmp:
        out = Path(tmp) / "results"
        started = time.perf_counter()
        summary = run_sweep(spec, out)
        sweep_s = time.perf_counter() - started
        cold = write_report(out, out / "report.html", lead=verdict_section)
        warm = write_report(out, out / "again.html", lead=verdict_section)
        traces = [t for source in spec.traces for ref in refs_of(source) for t in iter_traces(ref)]
        write_traces(Path(tmp) / "traces.jsonl", traces)
        drift = write_drift_report(
            [Path(tmp) / "traces.jsonl"],
            Path(tmp) / "drift.html",
            counters=["tiktoken:o200k_base", "hf:qwen2.5"],
        )
        runs = summary.cells
    return {
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
