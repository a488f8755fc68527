"""Helpers for users' own test suites: run a sweep and assert that nothing regressed.

    from ctxbench.testing import run_sweep, assert_no_regression

    def test_compaction_keeps_facts(tmp_path):
        results = run_sweep("ctxbench/ci.toml", tmp_path / "results")
        assert_no_regression(results, "ctxbench/baseline.json", max_retention_drop=0.02)

Both run in-process (no subprocess, no network); the assertion message is the same table
``ctxbench check`` prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxbench.gate.baseline import load_baseline, make_baseline
from ctxbench.gate.check import CheckReport, Tolerances, check
from ctxbench.gate.check_report import text_report


def run_sweep(
    sweep_file: str | Path,
    out_dir: str | Path,
    *,
    workers: int = 1,
    resume: bool = False,
    summarizer_endpoint: Mapping[str, str] | None = None,
) -> Path:
    """Run a sweep TOML into ``out_dir`` (in this process, or ``workers`` processes). A file
    naming a summarizer endpoint or key variable runs only when ``summarizer_endpoint``
    gives the same (``{"base_url": ..., "api_key_env": ...}``, as ``sweep --summarizer-set``)."""
    from ctxbench.sweep import InlineExecutor, ProcessExecutor, load_sweep
    from ctxbench.sweep import run_sweep as execute
    from ctxbench.sweep.spec import with_endpoint

    executor: Any = InlineExecutor() if workers <= 1 else ProcessExecutor(workers)
    spec = with_endpoint(load_sweep(sweep_file), summarizer_endpoint or {}, source=Path(sweep_file))
    execute(spec, out_dir, executor=executor, resume=resume)
    return Path(out_dir)


def write_baseline(results_dir: str | Path, path: str | Path) -> Path:
    """Record ``results_dir`` as a baseline file (what ``ctxbench baseline`` writes)."""
    import json

    from ctxbench.results import ResultsDir

    doc = make_baseline(ResultsDir(results_dir).results())
    Path(path).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return Path(path)


def assert_no_regression(
    results_dir: str | Path,
    baseline: str | Path,
    *,
    max_retention_drop: float = 0.0,
    max_cost_increase: float = 0.0,
    fail_on_new_overflow: bool = False,
    allow_missing: bool = False,
) -> CheckReport:
    """Raise AssertionError (with the regression table) when ``results_dir`` regressed."""
    from ctxbench.results import ResultsDir

    tol = Tolerances(max_retention_drop, max_cost_increase, fail_on_new_overflow, allow_missing)
    report = check(ResultsDir(results_dir).results(), load_baseline(baseline), tol)
    if report.failed:
        raise AssertionError("ctxbench regression\n" + text_report(report))
    return report


__all__ = ["assert_no_regression", "run_sweep", "write_baseline"]
