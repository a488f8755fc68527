"""``ctxbench report`` and ``ctxbench drift``: self-contained HTML reports."""

from __future__ import annotations

import click

from ctxbench.cell.spec import RunSpec
from ctxbench.cell.traces import AUTO
from ctxbench.cli.options import (
    at_least_option,
    counter_option,
    file_option,
    quiet_option,
    traces_argument,
)
from ctxbench.cli.sizes import TOKENS
from ctxbench.report.write import DEFAULT_WINDOWS, ESTIMATORS, Written


def _done(written: Written) -> None:
    for note in written.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"wrote {written.path} ({written.bytes / 1024:,.0f} KB in {written.seconds:.1f} s)")


@click.command("report")
@click.argument("results_dir", type=click.Path(file_okay=False))
@file_option("--out", "-o", required=True, help="The HTML file to write.")
@file_option(
    "--prices",
    "prices_file",
    help='TOML of USD per million tokens by true counter ([prices."tiktoken:o200k_base"]).',
)
@click.option("--title", default="", help="Page title (default: from the sweep's name).")
@quiet_option()
def report(results_dir: str, out: str, prices_file: str | None, title: str, quiet: bool) -> None:
    """Write the HTML report of RESULTS_DIR: one self-contained file, no network needed to
    open it (inline CSS, JS and SVG charts).

    Sections: the verdict (`ctxbench recommend`), how to read it, leaderboard per window
    (with bootstrap intervals), Pareto charts, threshold maps, per-trace timelines of the
    recommended and the default configs, reproduction vs release (when the results hold a
    reproduction and its shipped:NAME@VERSION), lost facts, token counting by content class,
    decision drift, accuracy against provider usage, and the exact spec of every row.

    \b
    Examples:
      ctxbench sweep scenarios/quickstart.toml -o reports/quickstart
      ctxbench report reports/quickstart -o reports/quickstart/report.html
      ctxbench report results/ -o report.html --prices prices.toml --title "Nightly sweep"
    """
    from ctxbench.cli.progress import StageBar
    from ctxbench.decisions.verdict import Verdict
    from ctxbench.report.write import write_report
    from ctxbench.results.own_files import refuse_own_files

    refuse_own_files(out)  # never over a results directory's journal, spec or table
    bar = StageBar("report", quiet=quiet)
    written = write_report(
        results_dir,
        out,
        prices_file=prices_file,
        title=title,
        progress=bar.stage,
        tick=bar.update,
        **Verdict().report_args(),
    )
    bar.close()
    _done(written)
    for strategy, runs in refused_plugins(results_dir).items():
        click.echo(
            f"note: the timelines leave out the {runs} runs of plug-in {strategy}: ctxbench "
            "does not import code a results folder names (its knobs' defaults are unknown); "
            "add --allow-plugins to include them",
            err=True,
        )


def refused_plugins(results_dir: str) -> dict[str, int]:
    """The plug-in strategies of RESULTS_DIR's rows that the plug-in policy keeps out (the
    report reads their rows, but builds nothing of theirs), with how many runs each has."""
    from collections import Counter

    from ctxbench.registry import is_plugin_path, plugin_permitted
    from ctxbench.results import ResultsDir
    from ctxbench.strategies import SHIPPED_STRATEGIES, STRATEGIES

    counts = Counter(str(row.strategy) for row in ResultsDir(results_dir).results())
    return {
        name: n
        for name, n in sorted(counts.items())
        if is_plugin_path(name, (STRATEGIES, SHIPPED_STRATEGIES)) and not plugin_permitted(name)
    }


@click.command("drift")
@traces_argument(required=True)
@counter_option(
    "counters",
    multiple=True,
    default=(RunSpec.counter,),
    show_default=True,
    help="A true counter (repeatable; see `ctxbench counters`); `auto`: the counter of each "
    "recorded model of the traces.",
)
@click.option(
    "--window",
    "-w",
    "windows",
    multiple=True,
    type=TOKENS,
    help=f"Window for decision drift (repeatable; default {', '.join(map(str, DEFAULT_WINDOWS))}).",
)
@at_least_option(
    "--reserved",
    minimum=0,
    default=RunSpec.reserved,
    help="Output reservation: the limit is window - reserved.",
)
@click.option(
    "--estimator",
    "-e",
    "estimators",
    multiple=True,
    help=f"Estimator to compare (repeatable; default {', '.join(ESTIMATORS)}).",
)
@click.option(
    "--format",
    "format_",
    default=AUTO,
    show_default=True,
    help="Trace format (auto detects; canonical, or a recorded format such as tau2_bench).",
)
@file_option("--out", "-o", required=True, help="The HTML file to write.")
@click.option("--title", default="", help="Page title.")
@quiet_option()
def drift(
    traces: tuple[str, ...],
    counters: tuple[str, ...],
    windows: tuple[int, ...],
    reserved: int,
    estimators: tuple[str, ...],
    format_: str,
    out: str,
    title: str,
    quiet: bool,
) -> None:
    """Write the token-counting report of TRACES: chars per token and the chars/4 error by
    content class and role, per counter; where each estimator's state (DB-GPT's thresholds)
    differs from the true counter's call by call, replaying without compaction; and accuracy
    against provider-reported usage where the traces recorded it. No sweep needed.

    \b
    Examples:
      ctxbench drift traces.jsonl --counter tiktoken:o200k_base --counter hf:qwen2.5 -o drift.html
      ctxbench drift run.traj.json --format mini_swe_agent -c hf:deepseek-v3 -w 65536 -o drift.html
    """
    from ctxbench.report.write import write_drift_report

    for window in windows or DEFAULT_WINDOWS:
        if reserved >= window:
            raise click.BadParameter(
                f"--reserved {reserved} leaves nothing of window {window}", param_hint="--reserved"
            )
    from ctxbench.cli.progress import StageBar

    bar = StageBar("drift", quiet=quiet)
    written = write_drift_report(
        traces,
        out,
        counters=counters,
        windows=windows or DEFAULT_WINDOWS,
        reserved=reserved,
        estimators=estimators or ESTIMATORS,
        format=format_,
        title=title,
        progress=bar.stage,
        tick=bar.update,
    )
    bar.close()
    _done(written)
