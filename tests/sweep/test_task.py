"""A task: the cells of one trace a worker runs together, under one set of caches; what each
cell records does not depend on what those caches kept from the cells before it."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from ctxbench.cell.runner import run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.cell.traces import load_trace
from ctxbench.engine.caches import Caches
from ctxbench.engine.prompt import REF_BYTES
from ctxbench.formats.canonical import write_traces
from ctxbench.sweep import task as task_module
from ctxbench.sweep.task import Task, forget_trace_caches, run_task, trace_caches
from tests.factories import tool_trace

#: (warning threshold, rounds kept, observation age) of the cells: the first and the last
#: are the same configuration, so the last finds the prompts the first shared
CONFIGS = ((0.5, 1, 3), (0.6, 2, 5), (0.7, 1, 2), (0.5, 1, 3))


def _task(path: Path) -> Task:
    trace = tool_trace(30, output="a long tool output line\n" * 80)
    write_traces(path, [trace])
    return Task(
        tuple(
            RunSpec(
                trace_source=str(path),
                trace_id=trace.id,
                trace_hash=trace.content_hash,
                strategy="dbgpt",
                params={
                    "warning_threshold": warning,
                    "min_keep_recent_rounds": keep,
                    "max_observation_age_rounds": age,
                },
                window=8192,
                reserved=512,
                counter="chars4",
            )
            for warning, keep, age in CONFIGS
        )
    )


def _events(task: Task) -> list[list[str]]:
    forget_trace_caches()
    try:
        outcomes = run_task(task)
    finally:
        forget_trace_caches()
    assert not any(o.failed for o in outcomes)
    return [[json.dumps(e) for e in json.loads(o.record)["events"]] for o in outcomes]


def test_each_cell_records_the_same_under_a_prompt_table_that_forgets_at_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = _task(tmp_path / "trace.jsonl")
    unbounded = _events(task)
    assert any('"type": "compaction"' in e for e in unbounded[0])
    tiny = functools.partial(Caches, prompt_limit=REF_BYTES * 40)  # a prompt or two at most
    monkeypatch.setattr(task_module, "Caches", tiny)
    assert _events(task) == unbounded


def test_a_task_ends_each_cell_so_the_prompts_no_cell_uses_any_more_go(tmp_path: Path) -> None:
    task = _task(tmp_path / "trace.jsonl")
    first = task.cells[0]
    forget_trace_caches()
    try:
        run_task(task)
        caches = trace_caches(f"{first.trace_source}#{first.trace_id}#{first.trace_hash}")
        ended = len(caches.prompts)
    finally:
        forget_trace_caches()
    trace = load_trace(first.trace_source, first.trace_id, first.trace_hash)
    whole = Caches()
    for spec in task.cells:  # the same cells, no cell ended
        run_spec(spec, trace, caches=whole)
    assert 0 < ended < len(whole.prompts)
