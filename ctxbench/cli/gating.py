"""``ctxbench baseline``, ``check``, ``diff`` and ``losses``: the CI regression gate.

Exit codes of ``check``: 0 nothing regressed, 1 a regression (or a missing cell), 2 a usage or
input error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ctxbench.atomic_file import AtomicFile
from ctxbench.cli.options import dir_option, file_option
from ctxbench.errors import ConfigError
from ctxbench.gate import check as gate
from ctxbench.gate import check_report
from ctxbench.gate.baseline import load_baseline, make_baseline
from ctxbench.probes.kind_limits import KindLimits
from ctxbench.results.own_files import refuse_own_files

if TYPE_CHECKING:
    from ctxbench.engine.result import RunResult


def _results(results_dir: str) -> list[RunResult]:
    from ctxbench.results import ResultsDir

    results = ResultsDir(results_dir).results()
    if not results:
        raise ConfigError("holds no result rows", path=results_dir, hint="run the sweep first")
    return results


def _write(path: str, text: str) -> None:
    refuse_own_files(path)  # never over a results directory's journal, spec or table
    with AtomicFile(path) as out:
        out.write(text)


@click.command("baseline")
@click.argument("results_dir", type=click.Path(file_okay=False))
@file_option("-o", "--out", required=True, help="Baseline JSON to write.")
def baseline(results_dir: str, out: str) -> None:
    """Record the metrics of every cell of RESULTS_DIR as a baseline.

    Cells are recorded by run id and by a readable spec key, with the ctxbench and result
    schema versions and the version of each plug-in's code, so `ctxbench check` can compare
    later runs with them. The cells' events are stored beside it (BASELINE.events.jsonl.gz;
    commit it with the baseline), so the `ctxbench diff` commands `check` prints work in CI,
    where the baseline's results folder does not exist.

    \b
    Example:
      ctxbench sweep ci.toml -o results && ctxbench baseline results -o baseline.json
    """
    from ctxbench.gate.baseline import events_path, store_events

    results = _results(results_dir)
    events = events_path(out)
    n = store_events(results_dir, [r.run_id for r in results], events)
    doc = make_baseline(results, results_dir, events.name)
    _write(out, doc.text())
    click.echo(f"wrote {out}: {len(doc.cells)} cells")
    click.echo(f"wrote {events}: {n} events (what `ctxbench diff` reads when the results are gone)")
    from ctxbench.decisions.changes import baseline_warnings

    for warning in baseline_warnings(doc.cells):
        click.echo(f"warning: {warning}", err=True)


@click.command("check")
@click.argument("results_dir", type=click.Path(file_okay=False))
@file_option("--baseline", "baseline_file", required=True, help="From `ctxbench baseline`.")
@click.option(
    "--max-retention-drop",
    type=float,
    default=0.0,
    show_default=True,
    help="Allowed absolute drop of retention per cell and of the mean.",
)
@click.option(
    "--max-cost-increase",
    type=float,
    default=0.0,
    show_default=True,
    help="Allowed relative rise of cost (USD, else input tokens), e.g. 0.05 = 5%.",
)
@click.option(
    "--fail-on-new-overflow", is_flag=True, help="Fail when failed calls or overflow errors rise."
)
@click.option(
    "--allow-missing", is_flag=True, help="Do not fail on baseline cells missing from the results."
)
@click.option(
    "--match-by",
    metavar="FIELDS",
    help="Pair cells left unmatched by run id and key when they agree on these fields "
    "(any of trace,strategy,window,counter): a changed knob is compared with its old value.",
)
@click.option(
    "--rename",
    "renames",
    multiple=True,
    metavar="OLD=NEW",
    help="A baseline strategy that was renamed or moved (a plug-in in another module): its "
    "cells are compared with NEW's (repeatable).",
)
@dir_option(
    "--baseline-results",
    help="The baseline's results directory, for the printed `ctxbench diff` commands "
    "(default: the one `ctxbench baseline` recorded).",
)
@click.option(
    "--min-kind",
    "min_kind",
    multiple=True,
    metavar="KIND=SHARE",
    help="Fail a cell whose retention of a probe kind is under SHARE, e.g. safety=1.0 "
    "(repeatable; also `min_kind_retention = { safety = 1.0 }` in the sweep file).",
)
@click.option(
    "--max-kind-drop",
    "max_kind_drop",
    multiple=True,
    metavar="KIND=SHARE",
    help="Fail a cell whose retention of a probe kind dropped more than SHARE from the "
    "baseline, e.g. constraint=0 (repeatable; also `max_kind_drop` in the sweep file).",
)
@file_option("--junit", help="Write JUnit XML (one test case per cell).")
@file_option("--markdown", help="Write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY).")
def check(
    results_dir: str,
    baseline_file: str,
    max_retention_drop: float,
    max_cost_increase: float,
    fail_on_new_overflow: bool,
    allow_missing: bool,
    match_by: str | None,
    renames: tuple[str, ...],
    baseline_results: str | None,
    min_kind: tuple[str, ...],
    max_kind_drop: tuple[str, ...],
    junit: str | None,
    markdown: str | None,
) -> None:
    """Compare RESULTS_DIR with a baseline; exit 1 on a regression.

    A cell regresses when its retention drops more than --max-retention-drop, its cost rises
    more than --max-cost-increase, it splits tool pairs or raises, or (with
    --fail-on-new-overflow) it has more overflows. Improvements, new and missing cells are
    reported; each regressed cell comes with the `ctxbench diff` command that shows where it
    diverged. Per probe kind, --min-kind fails a cell under a floor (new cells too) and
    --max-kind-drop one that lost more than allowed; each such failure names the probes lost,
    the answer missing and the call where each was lost. The sweep file's
    min_kind_retention / max_kind_drop tables apply too (the command line wins per kind).
    Exit 0: nothing regressed; 1: a regression; 2: a usage or input error.

    \b
    Examples:
      ctxbench check results --baseline baseline.json --max-retention-drop 0.02 \\
          --max-cost-increase 0.05 --fail-on-new-overflow --junit junit.xml --markdown summary.md
      ctxbench check results --baseline baseline.json --match-by trace,strategy,window,counter
      ctxbench check results --baseline baseline.json --rename mypkg.old:compact=mypkg.new:compact
      ctxbench check results --baseline baseline.json --min-kind safety=1.0 --max-kind-drop constraint=0
    """
    from ctxbench.decisions.matching import parse_match_by, parse_renames
    from ctxbench.gate.loss_table import EventsLosses, ResultsLosses
    from ctxbench.probes.kind_limits import from_options

    fields = parse_match_by(match_by)
    mapping = parse_renames(renames)
    kinds = _sweep_limits(results_dir).over(from_options(min_kind, max_kind_drop))
    tol = gate.Tolerances(
        max_retention_drop, max_cost_increase, fail_on_new_overflow, allow_missing, kinds
    )
    doc = load_baseline(baseline_file)
    rows = _results(results_dir)
    from ctxbench.gate.baseline import events_path

    stored = events_path(baseline_file)
    before = EventsLosses(stored) if doc.events and stored.is_file() else None
    lost = ResultsLosses(results_dir, rows)
    report = gate.check(rows, doc, tol, fields, mapping, lost, before)
    report.results_dir = results_dir
    if baseline_results:
        report.baseline_results = baseline_results
    elif before is not None:
        report.baseline_results = str(stored)
    click.echo(check_report.text_report(report))
    if junit:
        _write(junit, check_report.junit_report(report))
    if markdown:
        _write(markdown, check_report.markdown_report(report))
    sys.exit(1 if report.failed else 0)


def _sweep_limits(results_dir: str) -> KindLimits:
    """The per-kind limits the sweep file gave (recorded in the results' ``sweep.json``)."""
    from ctxbench.probes.kind_limits import limits_table
    from ctxbench.results import ResultsDir
    from ctxbench.results.layout import SPEC_FILE

    store = ResultsDir(results_dir)
    if not (store.path / SPEC_FILE).is_file():  # rows written by `run`, or an older sweep
        return KindLimits()
    spec = store.spec().get("spec")
    return limits_table(spec if isinstance(spec, dict) else {}, source=store.path / SPEC_FILE)


@click.command("losses")
@click.argument("source", metavar="RESULTS|ROWS", type=click.Path(exists=True))
@file_option("--events", "events_file", help="The events file of ROWS (`run --events`).")
@click.option("--run-id", "run_ids", multiple=True, help="Only this run (repeatable).")
@click.option("--kind", "kinds", multiple=True, help="Only probes of this kind (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per run.")
@click.option(
    "--watch",
    is_flag=True,
    help="Replay each run whose loss call was inferred once more, asking its lost probes at "
    "every call: the exact call each left the prompt (`seen`).",
)
def losses(
    source: str,
    events_file: str | None,
    run_ids: tuple[str, ...],
    kinds: tuple[str, ...],
    as_json: bool,
    watch: bool,
) -> None:
    """List, per run, the probes it did not keep: probe, kind, outcome, where it was stated
    (trace message / the first call that sent it), the call it was lost at (and which
    compaction: the one that dropped its last message, or the last one before it was asked
    when it was rewritten away), the missing answer and a superseded value present. Then per
    kind: kept, asked, and the cliff: the first compaction after which the kind's probes keep
    under half.

    RESULTS is a results directory; ROWS a file of rows (`run --out`), replayed from each
    row's spec unless --events gives the run's events file. A loss rewritten away (or dropped
    in a run whose summaries may have carried it) has its call inferred from the events;
    --watch replays those runs once more to name the exact call.

    \b
    Examples:
      ctxbench losses results
      ctxbench losses results --kind safety --kind constraint --run-id 0a1b2c3d4e5f6a7b
      ctxbench losses results --run-id 0a1b2c3d4e5f6a7b --watch
      ctxbench run t.jsonl -s sliding_window -w 16k --out rows.jsonl && ctxbench losses rows.jsonl
    """
    from dataclasses import replace

    from ctxbench.gate.loss_table import render, results_losses
    from ctxbench.probes.model import PROBE_KINDS

    unknown = [k for k in kinds if k not in PROBE_KINDS]
    if unknown:
        raise ConfigError(
            f"unknown probe kind {unknown[0]!r}",
            key="--kind",
            hint=f"known kinds: {', '.join(PROBE_KINDS)}",
        )
    tables = results_losses(source, events_file, run_ids=run_ids, watch=watch)
    known = {t.run_id for t in tables}
    for run_id in run_ids:
        if run_id not in known:
            raise ConfigError(
                f"no run {run_id!r}", path=source, hint="run ids are in the run_id column"
            )
    if kinds:
        tables = [replace(t, losses=tuple(x for x in t.losses if x.kind in kinds)) for t in tables]
    if as_json:
        for table in tables:
            click.echo(json.dumps(table.to_dict(), ensure_ascii=False))
    else:
        click.echo(render(tables), nl=False)


@click.command("diff")
@click.argument("a")
@click.argument("b")
@dir_option("--results", "results_dir", help="A results directory: A and B are then run ids in it.")
@click.option(
    "--run-a",
    help="Run id to take from A (an events file of several runs, or a results directory).",
)
@click.option("--run-b", help="Run id to take from B (default for two directories: --run-a).")
def diff(a: str, b: str, results_dir: str | None, run_a: str | None, run_b: str | None) -> None:
    """Show where two replays of the same trace diverge.

    A and B are events files (`ctxbench run --events`) or results directories (a baseline's
    and the current one, with --run-a / --run-b), or two run ids with --results DIR.
    Prints the first call whose events differ, what each replay did there (layer, messages
    dropped, provider verdicts) and which probes changed outcome.

    \b
    Examples:
      ctxbench diff before.jsonl after.jsonl
      ctxbench diff 0a1b2c3d4e5f6a7b 7f6e5d4c3b2a1f0e --results reports/quickstart
      ctxbench diff baseline-results results --run-a 0a1b2c3d4e5f6a7b --run-b 7f6e5d4c3b2a1f0e
    """
    from ctxbench.divergence import first_divergence, render, run_events

    if results_dir:
        from ctxbench.results import ResultsDir

        store = ResultsDir(results_dir)
        events_a = [e for _, e in store.typed_events(a)]
        events_b = [e for _, e in store.typed_events(b)]
        for run_id, events in ((a, events_a), (b, events_b)):
            if not events:
                raise ConfigError(f"no events of run {run_id!r}", path=results_dir)
        label_a, label_b = a, b
    else:
        if run_b is None and Path(a).is_dir() and Path(b).is_dir():
            run_b = run_a
        label_a, events_a = run_events(a, run_a)
        label_b, events_b = run_events(b, run_b)
        label_a, label_b = f"A ({label_a or a})", f"B ({label_b or b})"
    click.echo(render(first_divergence(events_a, events_b), label_a, label_b))
