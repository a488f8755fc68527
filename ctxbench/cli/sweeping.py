"""``ctxbench sweep``: run a sweep file into a resumable results directory."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import click

from ctxbench.cli.answering import answerer_options, answerer_settings, next_action_of
from ctxbench.cli.options import dir_option, quiet_option, workers_option
from ctxbench.counting.auto import AUTO
from ctxbench.sweep.execution import DEFAULT_BATCH, WHOLE_TRACE_BATCH, Progress


@click.command("sweep")
@click.argument("sweep_file", type=click.Path(dir_okay=False))
@dir_option(
    "--out",
    "-o",
    "out_dir",
    help="Results directory (created; see ctxbench.results.layout for its layout).",
)
@workers_option("Local worker processes (default: one per CPU; 1 runs in this process).")
@click.option("--scheduler", metavar="ADDRESS", help="Run on a Dask cluster (tcp://host:8786).")
@click.option(
    "--dask-local",
    type=click.IntRange(min=1),
    metavar="N",
    help="Run on a Dask LocalCluster of N worker processes.",
)
@click.option("--resume", is_flag=True, help="Continue a sweep in DIR; finished cells are kept.")
@click.option(
    "--reset",
    is_flag=True,
    help="With --resume: adopt a changed sweep file (finished cells it still has are kept).",
)
@click.option(
    "--retry-failed/--no-retry-failed",
    default=True,
    show_default=True,
    help="With --resume: run failed cells (error rows) again.",
)
@click.option("--csv", "with_csv", is_flag=True, help="Also write DIR/results.csv.")
@quiet_option("No progress bar (for CI logs).")
@click.option(
    "--dry-run", is_flag=True, help="Print the number of cells and the axes; run nothing."
)
@click.option(
    "--summarizer-set",
    "summarizer_sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="The summarizer endpoint: base_url=URL and api_key_env=VARIABLE (a sweep file that "
    "names them itself runs only when they are given here, the same).",
)
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=None,
    help=f"Cells of one trace per task (default: {WHOLE_TRACE_BATCH} when every worker has two "
    f"traces or more, so each trace is tokenized by one worker; else {DEFAULT_BATCH}).",
)
@answerer_options
def sweep(
    sweep_file: str,
    out_dir: str | None,
    workers: int | None,
    scheduler: str | None,
    dask_local: int | None,
    resume: bool,
    reset: bool,
    retry_failed: bool,
    with_csv: bool,
    quiet: bool,
    dry_run: bool,
    summarizer_sets: tuple[str, ...],
    batch: int | None,
) -> None:
    """Replay every cell of SWEEP_FILE: traces x strategies (x parameter grids) x windows x
    reserved x counters x estimators.

    Every finished cell is saved as it completes; --resume continues an interrupted sweep
    (and runs failed cells again). At the end DIR holds results.parquet (one row per cell,
    sorted by run_id; results.jsonl where the parquet extra is not installed), events.jsonl
    and sweep.json. Results are the same whatever the executor
    or worker count. Exits 1 when a cell failed (its row holds the error).

    \b
    Examples:
      ctxbench sweep scenarios/quickstart.toml --dry-run
      ctxbench sweep scenarios/quickstart.toml -o reports/quickstart
      ctxbench sweep big.toml -o out/ --workers 8 --resume --csv
      ctxbench sweep big.toml -o out/ --scheduler tcp://10.0.0.5:8786
      ctxbench sweep big.toml -o out/ --dask-local 4 --quiet
      ctxbench sweep s.toml -o out/ --answerer qwen2.5:0.5b@http://127.0.0.1:11434/v1 --next-action
    """
    from pathlib import Path

    from ctxbench.config import parse_set
    from ctxbench.sweep import load_sweep, plan
    from ctxbench.sweep.spec import with_endpoint

    spec = with_endpoint(
        load_sweep(sweep_file), parse_set(summarizer_sets), source=Path(sweep_file)
    )
    if dry_run:
        planned = plan(spec)
        say_auto(spec, planned.entries)
        print_plan(spec, planned)
        return
    if not out_dir:
        raise click.UsageError("give the results directory with -o DIR (or use --dry-run)")
    if scheduler and dask_local:
        raise click.UsageError("give --scheduler or --dask-local, not both")
    if workers and (scheduler or dask_local):
        raise click.UsageError("--workers is for local processes; Dask sizes its own workers")
    if reset and not resume:
        raise click.UsageError("--reset adopts a changed sweep file when resuming: add --resume")
    if AUTO in spec.counters:  # say what auto picked before the cells run (one more read)
        entries = plan(spec).entries
        say_auto(spec, entries)
        if not quiet:
            say_usage(spec, entries)
    executor = make_executor(workers, scheduler, dask_local)
    summary = execute(
        spec,
        out_dir,
        executor,
        resume=resume,
        reset=reset,
        retry_failed=retry_failed,
        with_csv=with_csv,
        batch=batch,
        quiet=quiet,
        answerer=answerer_settings(),
        next_action=next_action_of(),
    )
    if summary.failed:
        click.echo(
            f"{summary.failed} cells failed (their rows hold the error); "
            "fix the cause and rerun with --resume to run them again",
            err=True,
        )
        raise click.exceptions.Exit(1)


def execute(
    spec: Any,
    out_dir: str,
    executor: Any,
    *,
    resume: bool,
    quiet: bool,
    reset: bool = False,
    retry_failed: bool = True,
    with_csv: bool = False,
    batch: int | None = None,
    answerer: Any = None,
    next_action: tuple[bool, int] = (False, 0),
) -> Any:
    """Run the sweep with a progress bar (unless ``quiet``) and print its summary."""
    from ctxbench.sweep import run_sweep

    bar = None
    if not quiet:
        from ctxbench.cli.progress import ProgressBar

        bar = ProgressBar("sweep")

    def show(progress: Progress) -> None:
        if bar is not None:
            final = progress.done == progress.total
            bar.update(progress.done, progress.total, progress.failed, final=final)

    if answerer is not None:
        from ctxbench.answering.client import forget_client

        forget_client(answerer)  # this sweep's meter starts at zero
    from ctxbench.decisions.outcomes import outcome_of_record
    from ctxbench.engine.result import RunResult

    decided: list[Any] = []  # each cell's RunOutcome, for the closing recommendation
    started = time.monotonic()
    try:
        summary = run_sweep(
            spec,
            out_dir,
            executor=executor,
            resume=resume,
            reset=reset,
            retry_failed=retry_failed,
            with_csv=with_csv,
            batch=batch,
            on_progress=show,
            answerer=answerer,
            next_action=next_action[0],
            next_action_every=next_action[1],
            on_cell=lambda row, events: decided.append(
                outcome_of_record(RunResult.from_row(row), events)
            ),
        )
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        click.echo(f"interrupted; finished cells are saved in {out_dir}", err=True)
        click.echo("  hint: rerun the same command with --resume to continue", err=True)
        sys.exit(130)
    if bar is not None:
        bar.close()
    elapsed = time.monotonic() - started
    for lineno, problem in summary.skipped_lines:
        click.echo(
            f"warning: {os.path.join(out_dir, 'cells.jsonl')}:{lineno}: damaged journal line "
            f"skipped ({problem}); its cell ran again",
            err=True,
        )
    if summary.dropped:
        click.echo(f"--reset dropped {summary.dropped} cells the new spec no longer has", err=True)
    if summary.plugins_changed:
        click.echo(
            f"{summary.rerun_for_plugins} cells re-run: their plug-in's code changed since the "
            f"last run ({'; '.join(summary.plugins_changed)}); the old results were dropped",
            err=True,
        )
    click.echo(
        f"{summary.cells} cells: {summary.ran} ran, {summary.skipped} already done, "
        f"{summary.failed} failed"
    )
    from ctxbench.results.layout import RESULTS

    table = summary.table
    if table != RESULTS:
        click.echo(
            f"note: {table}: pyarrow is not installed (`pip install 'ctxbench[parquet]'` "
            f"writes {RESULTS})",
            err=True,
        )
    click.echo(f"results: {os.path.join(out_dir, table)}")
    click.echo(f"events:  {os.path.join(out_dir, 'events.jsonl')}")
    for run_id, error in summary.failed_examples:
        click.echo(f"  failed {run_id}: {error}", err=True)
        folder = os.path.join(out_dir, "files", run_id)
        click.echo(
            f"    traceback: {os.path.join(folder, 'traceback.txt')}; run it alone: "
            f"ctxbench run --from-row {out_dir} --run-id {run_id}"
            + (" --allow-plugins" if error.startswith("PluginError") else ""),
            err=True,
        )
    if answerer is not None:
        say_meter(answerer)
    if not quiet:
        rate = summary.ran / elapsed if elapsed > 0 else 0.0
        click.echo(f"took {elapsed:.1f} s ({rate:.1f} cells/s)", err=True)
    warn_split_pairs(out_dir)
    print_recommendation(out_dir, decided)
    return summary


def say_meter(settings: Any) -> None:
    """What the answerer cost, when its client ran in this process (``--workers 1``)."""
    from ctxbench.answering.client import client_of

    client = client_of(settings)
    if client is not None:
        click.echo(f"answerer {settings.model}: {client.meter.describe()}", err=True)
    else:
        click.echo(f"answerer {settings.model}: requests counted in the worker processes", err=True)


def warn_split_pairs(out_dir: str) -> None:
    """A warning per strategy whose cells split tool calls from their results: a provider
    rejects such prompts, whatever the cells' retention says."""
    from ctxbench.results import ResultsDir

    split: dict[str, list[int]] = {}
    for row in ResultsDir(out_dir).results():
        counts = split.setdefault(row.strategy, [0, 0, 0])
        counts[0] += 1
        if row.pairing_violations:
            counts[1] += 1
            counts[2] += row.pairing_violations
    for strategy, (cells, broken, violations) in sorted(split.items()):
        if broken:
            click.echo(
                f"warning: {broken} of {cells} cells of {strategy} split tool calls from their "
                f"results ({violations} pairing violations): a provider rejects such prompts "
                "and `ctxbench check` fails on them",
                err=True,
            )


def print_recommendation(out_dir: str, outcomes: Sequence[Any] = ()) -> None:
    """The closing verdict: which config to deploy per window and counter (default
    constraints, the sweep file's kind weights), from ``outcomes`` (what the sweep collected
    as it wrote its table: ``run_sweep(on_cell=...)``) or else read from ``out_dir``."""
    from ctxbench.decisions.outcomes import read_outcomes
    from ctxbench.decisions.recommend import recommend
    from ctxbench.decisions.text import closing_text
    from ctxbench.probes.weights import sweep_weights
    from ctxbench.results import ResultsDir

    weights = sweep_weights(ResultsDir(out_dir).spec(), source=out_dir)
    runs = list(outcomes) if outcomes else read_outcomes(out_dir)
    click.echo(closing_text(recommend(runs, weights=weights), out_dir))


def say_auto(spec: Any, entries: Any) -> None:
    """``counters = ["auto"]``: the counter and reasoning rule picked per recorded model,
    and a warning when the sweep pools traces of several models."""
    from ctxbench.counting.auto import choose, pooling_warning

    if AUTO not in spec.counters:
        return
    choices = {e.model: choose(e.model) for e in entries}
    for choice in choices.values():
        click.echo(f"auto: {choice.describe(spec.reasoning, 'sweep file')}", err=True)
    warning = pooling_warning(choices)
    if warning:
        click.echo(f"warning: {warning}", err=True)


def say_usage(spec: Any, entries: Any) -> None:
    """Where the traces carry billed usage and no profile is given: how far each counter is
    from it (on the first trace of each recorded model) and how to fit a profile."""
    from ctxbench.cell.traces import load_trace
    from ctxbench.counting.auto import billed_for, choose

    first: dict[str, Any] = {}
    for entry in entries:
        first.setdefault(entry.model, entry)
    for model, entry in first.items():
        trace = None
        for spec_counter in spec.counters:
            counter = choose(model or None).counter if spec_counter == AUTO else spec_counter
            if counter.startswith("profile:") or spec.reasoning:
                continue
            trace = trace or load_trace(entry.address, entry.trace_id, entry.trace_hash)
            billed = billed_for(trace, model, counter, entry.trace_hash)
            distance = billed.distance(counter) if billed is not None else None
            if distance:
                click.echo(f"note: on trace {entry.trace_id}: {distance}", err=True)


def make_executor(workers: int | None, scheduler: str | None, dask_local: int | None) -> Any:
    """The executor the options ask for (local processes by default)."""
    from ctxbench.sweep import DaskExecutor, InlineExecutor, ProcessExecutor

    if scheduler:
        return DaskExecutor(address=scheduler)
    if dask_local:
        return DaskExecutor(local=dask_local)
    count = workers or os.cpu_count() or 1
    return InlineExecutor() if count == 1 else ProcessExecutor(count)


def print_plan(spec: Any, planned: Any) -> None:
    """The ``--dry-run`` listing: cell count, sources and axes."""
    name = spec.name or "sweep"
    click.echo(
        f"{name}: {len(planned.entries)} traces x {len(planned.configs)} configs "
        f"= {planned.cells} cells"
    )
    click.echo("traces:")
    for source in spec.traces:
        click.echo(f"  {source.label}")
    click.echo("axes:")
    axes = spec.axes()
    width = max(len(n) for n, _ in axes)
    for axis, values in axes:
        click.echo(f"  {axis.ljust(width)}  {', '.join(str(v) for v in values)}")


def _with_reference(command: click.Command) -> click.Command:
    """Append the generated sweep-file reference to ``--help`` (it cannot drift)."""
    from ctxbench.sweep.reference import plain

    command.help = (command.help or "") + "\n\n" + plain()
    return command


sweep = _with_reference(sweep)
