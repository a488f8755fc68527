"""Sweeps: a TOML grid of traces x strategies x windows x counters, run at scale.

``load_sweep(path)`` reads a :class:`SweepSpec`; ``run_sweep(spec, out_dir)`` runs its cells
on an executor (this process, local worker processes or a Dask cluster) into a crash-safe,
resumable results directory; :class:`ResultsDir` reads one back.
"""

from ctxbench.results import ResultsDir, read_result, spec_of_row
from ctxbench.sweep.execution import Plan, Progress, SweepSummary, plan, run_sweep
from ctxbench.sweep.executors import DaskExecutor, Executor, InlineExecutor, ProcessExecutor
from ctxbench.sweep.spec import StrategyGrid, SweepSpec, TraceSource, load_sweep

__all__ = [
    "DaskExecutor",
    "Executor",
    "InlineExecutor",
    "Plan",
    "ProcessExecutor",
    "Progress",
    "ResultsDir",
    "StrategyGrid",
    "SweepSpec",
    "SweepSummary",
    "TraceSource",
    "load_sweep",
    "plan",
    "read_result",
    "run_sweep",
    "spec_of_row",
]
