"""Running a sweep: plan the cells, run the unfinished ones, persist each, write the table.

The plan reads every trace source once (to hash the traces) and keeps a small entry per
trace; configurations are a product computed on the fly, so memory grows with the number of
traces and cells as ids, never with the traces themselves. Tasks hold the cells of one trace
(at most ``batch`` of them), longest traces first when their sources allow random access, so
two workers finish together instead of one waiting on the longest trace at the end.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxbench.cell.runner import KeepFiles
from ctxbench.cell.spec import RunSpec
from ctxbench.collector import paced
from ctxbench.engine.result import Prices
from ctxbench.results.layout import RESULTS, final_table
from ctxbench.sweep.executors import Executor, InlineExecutor
from ctxbench.sweep.sources import TraceEntry, catalogue
from ctxbench.sweep.spec import SweepSpec
from ctxbench.sweep.store import ResultsWriter
from ctxbench.sweep.task import Task, forget_trace_caches, run_task

if TYPE_CHECKING:
    from ctxbench.answering.client import AnswererSettings

SCHEMA = "ctxbench.sweep/1"
#: Cells per task: small enough to spread a long trace over workers, large enough that a
#: worker loads and tokenizes a trace once for many configurations.
DEFAULT_BATCH = 16
#: Cells per task when several workers have two traces each or more to share: a trace's cells
#: (up to this many) go to one worker, which loads, tokenizes and caches the trace once
#: instead of each worker doing it for a part of its configurations.
WHOLE_TRACE_BATCH = 64


def batch_for(batch: int | None, traces: int, workers: int) -> int:
    """The cells per task: ``batch`` when given; else :data:`WHOLE_TRACE_BATCH` when more
    than one worker shares two traces each or more, :data:`DEFAULT_BATCH` otherwise."""
    if batch is not None:
        return batch
    return WHOLE_TRACE_BATCH if workers > 1 and traces >= 2 * workers else DEFAULT_BATCH


@dataclass(frozen=True)
class Plan:
    """The cells of a sweep: every trace entry times every configuration."""

    entries: tuple[TraceEntry, ...]
    configs: tuple[RunSpec, ...]

    @property
    def cells(self) -> int:
        return len(self.entries) * len(self.configs)

    def run_ids(self) -> Iterator[str]:
        for entry in self.entries:
            for config in self.configs:
                yield entry.cell(config).run_id

    def cells_with_configs(self) -> Iterator[tuple[str, RunSpec]]:
        """``(run id, configuration)`` of every cell."""
        for entry in self.entries:
            for config in self.configs:
                yield entry.cell(config).run_id, config

    def tasks(
        self,
        *,
        skip: set[str],
        batch: int,
        prices: Mapping[str, Prices],
        keep_files: KeepFiles = "all",
        answerer: AnswererSettings | None = None,
    ) -> Iterator[Task]:
        """Tasks for the cells not in ``skip``: one trace and one true counter each (so a
        worker tokenizes a trace with the counters it needs, not all of them), at most
        ``batch`` cells; longest random-access traces first."""
        order = sorted(
            range(len(self.entries)),
            key=lambda i: (
                (0, -self.entries[i].messages, i) if self.entries[i].random_access else (1, 0, i)
            ),
        )
        counters = sorted({c.counter for c in self.configs})
        for i in order:
            for counter in counters:
                cells = [self.entries[i].cell(c) for c in self.configs if c.counter == counter]
                cells = [c for c in cells if c.run_id not in skip]
                for start in range(0, len(cells), batch):
                    chunk = tuple(cells[start : start + batch])
                    # by the cells' counter: ``auto`` resolves per trace (TraceEntry.cell)
                    yield Task(
                        chunk,
                        {k: v for k, v in prices.items() if k == chunk[0].counter},
                        keep_files,
                        answerer,
                    )


def plan(spec: SweepSpec) -> Plan:
    """Read the sources once and list the cells (nothing runs). A sweep replaying more than
    :data:`~ctxbench.limits.MAX_SWEEP_MESSAGES` messages (cells x trace length) is refused."""
    from ctxbench.errors import ConfigError
    from ctxbench.limits import MAX_SWEEP_MESSAGES

    configs = tuple(spec.configs())
    entries = []
    messages = 0
    for entry in catalogue(spec.traces):
        entries.append(entry)
        messages += entry.messages * len(configs)
        if messages > MAX_SWEEP_MESSAGES:
            raise ConfigError(
                f"the sweep would replay over {MAX_SWEEP_MESSAGES:,} messages ({len(entries)}+ "
                f"traces x {len(configs)} configurations), the limit of one sweep "
                "(ctxbench.limits.MAX_SWEEP_MESSAGES)",
                key="traces",
                hint="split it into several sweeps (fewer traces or fewer axis values each)",
            )
    return Plan(tuple(entries), configs)


@dataclass(frozen=True)
class Progress:
    """Where a sweep is: cells ``done`` of ``total`` (``skipped`` were finished before)."""

    done: int
    total: int
    failed: int
    skipped: int


@dataclass(frozen=True)
class SweepSummary:
    """How a sweep went: ``failed`` counts the error rows of the final table (earlier runs'
    included); ``failed_examples`` are (run_id, error) of this run's first failures."""

    cells: int
    ran: int
    skipped: int
    failed: int
    failed_examples: tuple[tuple[str, str], ...]
    out: Path
    #: damaged journal lines skipped on resume: (line number, problem); their cells ran again
    skipped_lines: tuple[tuple[int, str], ...] = ()
    #: finished cells of an earlier spec that ``reset`` dropped
    dropped: int = 0
    #: plug-ins whose code changed since the directory's last run ("path: old -> new"), and
    #: how many of their cells were run again for it (their old results were dropped)
    plugins_changed: tuple[str, ...] = ()
    rerun_for_plugins: int = 0
    #: the final table's file name: results.parquet, or results.jsonl without pyarrow
    table: str = RESULTS


def sweep_record(spec: SweepSpec, planned: Plan) -> dict[str, Any]:
    """What ``sweep.json`` holds: the resolved spec, its axes and the size of the plan."""
    from ctxbench.version import __version__

    return {
        "schema": SCHEMA,
        "ctxbench_version": __version__,
        "name": spec.name,
        "description": spec.description,
        "spec": spec.to_dict(),
        "axes": [{"name": name, "values": values} for name, values in spec.axes()],
        "traces": len(planned.entries),
        "configs": len(planned.configs),
        "cells": planned.cells,
        "plugins": plugin_versions(planned.configs),
    }


def plugin_versions(configs: Iterable[RunSpec]) -> dict[str, str]:
    """Each plug-in the configurations run -> the version of its code (``RunSpec.plugin``)."""
    out: dict[str, str] = {}
    for config in configs:
        for item in config.plugin.split():
            path, _, version = item.rpartition("@")
            out[path] = version
    return dict(sorted(out.items()))


def changed_plugins(previous: Mapping[str, Any] | None, record: Mapping[str, Any]) -> list[str]:
    """The plug-ins whose code differs from what ``sweep.json`` recorded ("path: old -> new");
    a directory written before plug-ins were recorded changed none."""
    if previous is None or not isinstance(previous.get("plugins"), Mapping):
        return []
    before, after = previous["plugins"], record["plugins"]
    return [
        f"{path}: {before[path]} -> {version}"
        for path, version in after.items()
        if path in before and before[path] != version
    ]


def run_sweep(
    spec: SweepSpec,
    out: str | Path,
    *,
    executor: Executor | None = None,
    resume: bool = False,
    reset: bool = False,
    retry_failed: bool = True,
    with_csv: bool = False,
    batch: int | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    answerer: AnswererSettings | None = None,
    next_action: bool = False,
    next_action_every: int = 0,
    on_cell: Callable[[dict[str, Any], Sequence[str | Mapping[str, Any]]], None] | None = None,
) -> SweepSummary:
    """Run every cell of ``spec`` not yet in ``out`` and write the final table there.

    Each finished cell is persisted as it completes, so an interrupted sweep resumes
    (``resume=True``) where it stopped; failed cells run again unless ``retry_failed`` is
    False. A resumed directory whose ``sweep.json`` holds another spec is refused unless
    ``reset``, which keeps the finished cells the new spec still has. The executor is closed
    when the sweep ends. With ``answerer``, every cell also asks that model about its
    prompts (and its next steps with ``next_action``): the cells are new ones (the model is in
    their ids), and the answers come from the cache when a sweep asked them before.
    ``batch`` cells of a trace go in one task (None: :func:`batch_for`).
    ``on_cell(row, events)`` sees every cell of the final table as it is written, in run-id
    order (its events as JSON texts or dicts): what the caller reports is worked out without
    reading the files back.
    """
    import json

    executor = executor or InlineExecutor()
    table_name = final_table()  # parquet, or JSON Lines where pyarrow is not installed
    dropped = 0
    try:
        # the collector paced for the whole sweep: its caches grow from cell to cell
        with paced(), ResultsWriter(out, resume=resume, retry_failed=retry_failed) as writer:
            planned = plan(spec)
            if answerer is not None:
                planned = Plan(
                    planned.entries,
                    tuple(
                        c.with_(
                            answerer=answerer.model,
                            next_action=next_action,
                            next_action_every=next_action_every if next_action else 0,
                        )
                        for c in planned.configs
                    ),
                )
            record = sweep_record(spec, planned)
            if answerer is not None:
                record["answerer"] = {
                    "model": answerer.model,
                    "next_action": next_action,
                    "next_action_every": next_action_every if next_action else 0,
                }
            wanted = set(planned.run_ids())
            previous = writer.previous_spec()
            if previous is not None and not reset:
                refuse_changed_spec(previous, record, Path(out))
            changed = changed_plugins(previous, record)
            if reset:
                dropped = writer.keep_only(wanted)
            elif changed:  # the old versions' cells: their results must not be read again
                writer.keep_only(wanted)
            writer.write_spec(record)
            skipped = len(wanted & writer.finished)
            changed_paths = {c.partition(": ")[0] for c in changed}
            rerun = sum(  # the changed plug-ins' cells: none of them is finished
                1
                for rid, config in planned.cells_with_configs()
                if rid not in writer.finished
                and any(i.rpartition("@")[0] in changed_paths for i in config.plugin.split())
            )
            executor.prepare(functools.partial(load_counters, sweep_counters(planned)))
            done = failed = 0
            examples: list[tuple[str, str]] = []
            report = on_progress or (lambda _: None)
            report(Progress(skipped, planned.cells, 0, skipped))
            tasks = planned.tasks(
                skip=writer.finished,
                batch=batch_for(batch, len(planned.entries), executor.workers),
                prices=spec.prices,
                keep_files=spec.keep_files,
                answerer=answerer,
            )
            spent = 0.0
            for outcomes in executor.imap_unordered(run_task, tasks):
                writer.append([(o.run_id, o.record, o.files) for o in outcomes])
                spent += sum(o.answer_cost for o in outcomes)
                _within_budget(answerer, spent)
                for outcome in outcomes:
                    done += 1
                    if outcome.failed:
                        failed += 1
                        if len(examples) < 5:
                            error = json.loads(outcome.record)["row"]["error"]
                            examples.append((outcome.run_id, error))
                report(Progress(skipped + done, planned.cells, failed, skipped))
                del outcomes  # not held while the next task runs (its records, its files)
            failed = writer.finalize(
                wanted, with_csv=with_csv, on_cell=on_cell, table_name=table_name
            )
    finally:
        executor.close()
        forget_trace_caches()  # the tasks an inline executor ran left theirs in this process
    return SweepSummary(
        planned.cells,
        done,
        skipped,
        failed,
        tuple(examples),
        Path(out),
        tuple(writer.skipped_lines),
        dropped,
        tuple(changed),
        rerun,
        table_name,
    )


def sweep_counters(planned: Plan) -> tuple[str, ...]:
    """The counters the cells of ``planned`` count with (true counters, ``auto`` resolved per
    recorded model, and estimators), sorted."""
    from ctxbench.counting.auto import AUTO, choose
    from ctxbench.strategies import strategy_class

    names: set[str] = set()
    for config in planned.configs:
        if config.counter == AUTO:
            names.update(choose(model).counter for model in {e.model for e in planned.entries})
        else:
            names.add(config.counter)
        names.add(config.estimator or strategy_class(config.strategy).default_estimator)
    return tuple(sorted(names))


def load_counters(names: tuple[str, ...]) -> None:
    """Load the tokenizers of the counters ``names`` (each counts a word), where the workers
    get them (:meth:`~ctxbench.sweep.executors.Executor.prepare`). A counter that cannot load
    is left to the cells naming it: their rows say why."""
    from ctxbench.counting import get_counter

    for name in names:
        try:
            get_counter(name).count("ctxbench")
        except Exception:  # the cell reports it, with its own context
            continue


def _within_budget(answerer: AnswererSettings | None, spent: float) -> None:
    """Stop the sweep once its answerer requests, over every worker, cost ``max_cost`` (the
    finished cells are saved; their answers are cached)."""
    if answerer is None or answerer.max_cost is None or spent < answerer.max_cost:
        return
    from ctxbench.answering.client import AnswererError

    raise AnswererError(
        f"--max-cost {answerer.max_cost} USD reached: the answerer requests of this sweep cost "
        f"{spent:.4f} USD; finished cells are saved",
        kind="budget",
        hint="rerun with --resume and a higher --max-cost (answers already received are cached)",
    )


def refuse_changed_spec(previous: Mapping[str, Any], record: Mapping[str, Any], out: Path) -> None:
    """An OutputError naming what changed when ``sweep.json`` holds another spec: resuming
    would mix the old spec's cells into the new one's results."""
    import json

    from ctxbench.errors import OutputError
    from ctxbench.sweep.store import SPEC_FILE

    before = previous.get("spec")
    after = json.loads(json.dumps(record["spec"], sort_keys=True, default=str))
    if before == after:
        return
    old = before if isinstance(before, Mapping) else {}
    changed = [k for k in sorted(set(old) | set(after)) if old.get(k) != after.get(k)]

    def short(value: Any) -> str:
        text = json.dumps(value, ensure_ascii=False, default=str)
        return text if len(text) <= 60 else text[:57] + "..."

    described = "; ".join(f"{k}: {short(old.get(k))} -> {short(after.get(k))}" for k in changed[:4])
    raise OutputError(
        f"the sweep spec changed since this directory was started ({described or 'unreadable'})",
        path=out / SPEC_FILE,
        hint="resume with the same sweep file, or add --reset to adopt the new spec "
        "(finished cells it still has are kept, the others dropped)",
    )
