"""A task: the cells of one trace that a worker runs together, and what it sends back.

Cells are batched per trace so a worker loads each trace once and its counter caches serve
every configuration of it; the cells of one trace share one
:class:`~ctxbench.engine.caches.Caches` in each worker (:func:`trace_caches`). ``run_task`` is a
plain top-level function (picklable, so it runs under ``spawn`` and on Dask workers) that never
raises for a cell: a cell that fails becomes an error row, and the rest of the sweep goes on.
The worker also renders each cell's journal record, so the driver only appends bytes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ctxbench.cell.runner import KeepFiles
from ctxbench.cell.spec import RunSpec
from ctxbench.engine.caches import Caches
from ctxbench.engine.result import Prices, RunResult
from ctxbench.results.journal import record_line

if TYPE_CHECKING:
    from ctxbench.answering.client import AnswererSettings


@dataclass(frozen=True)
class Task:
    """Cells that share one trace (``cells[i].trace_source`` is the same address)."""

    cells: tuple[RunSpec, ...]
    prices: Mapping[str, Prices] = field(default_factory=dict)
    #: which of the files a cell wrote come back (the others never leave the worker)
    keep_files: KeepFiles = "all"
    #: the endpoint cells naming an answerer model ask (each worker builds its client)
    answerer: AnswererSettings | None = None


@dataclass(frozen=True)
class CellOutcome:
    """One finished cell: its journal record (a JSON line) and the files it wrote."""

    run_id: str
    record: str
    files: Mapping[str, bytes]
    failed: bool
    #: USD the cell's answerer requests cost (sent, not cached; 0 without ``--answerer``)
    answer_cost: float = 0.0


def run_task(task: Task) -> tuple[CellOutcome, ...]:
    """Run every cell of ``task`` in this process; failures become error rows."""
    from ctxbench.cell.runner import (
        TRACEBACK_FILE,
        error_result,
        fault_report,
        kept_files,
        mined_probes,
        run_spec,
    )
    from ctxbench.cell.traces import load_trace

    first = task.cells[0]
    try:
        trace = load_trace(first.trace_source, first.trace_id, first.trace_hash)
    except Exception as exc:  # the source changed or vanished: every cell records why
        return tuple(_failed(error_result(spec, exc)) for spec in task.cells)
    mined = functools.cache(lambda: mined_probes(trace))  # once per trace, if asked
    caches = trace_caches(f"{first.trace_source}#{first.trace_id}#{first.trace_hash}")
    client = None
    if task.answerer is not None:
        from ctxbench.answering.client import answerer_for

        client = answerer_for(task.answerer)
    out = []
    for spec in task.cells:
        spent = client.meter.cost_usd if client is not None else 0.0
        try:
            output = run_spec(
                spec,
                trace,
                prices=task.prices.get(spec.counter),
                mined=mined,
                answerer=client,
                caches=caches,
                keep_files=task.keep_files,
            )
        except Exception as exc:  # a strategy or plug-in raised: the row carries the error,
            # its folder the traceback and the command that re-runs the cell alone
            report = fault_report(spec, exc).encode("utf-8", "backslashreplace")
            out.append(_failed(error_result(spec, exc), {TRACEBACK_FILE: report}))
            continue
        finally:
            caches.end_cell()
        out.append(
            CellOutcome(
                spec.run_id,
                record_line(output.result, output.events),
                kept_files(output, task.keep_files),
                False,
                client.meter.cost_usd - spent if client is not None else 0.0,
            )
        )
    return tuple(out)


#: the caches of the trace this process replays last: (its key, the caches)
_TRACE_CACHES: list[tuple[str, Caches]] = []


def trace_caches(key: str) -> Caches:
    """The caches the cells of the trace ``key`` share in this process: the same object for
    every task of that trace, a new one (the old ones dropped) when a task of another trace
    comes. A worker's memory then holds one trace's caches, however many it ran; a sweep's
    tasks come trace by trace (:meth:`ctxbench.sweep.execution.Plan.tasks`)."""
    if not _TRACE_CACHES or _TRACE_CACHES[0][0] != key:
        _TRACE_CACHES[:] = [(key, Caches())]
    return _TRACE_CACHES[0][1]


def forget_trace_caches() -> None:
    """Drop the caches :func:`trace_caches` holds (a sweep run in this process has ended)."""
    _TRACE_CACHES.clear()


def _failed(result: RunResult, files: Mapping[str, bytes] | None = None) -> CellOutcome:
    return CellOutcome(result.run_id, record_line(result, []), dict(files or {}), True)
