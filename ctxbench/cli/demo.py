"""``ctxbench demo``: the quickstart sweep over the embedded scenarios, then its report."""

from __future__ import annotations

from pathlib import Path

import click

from ctxbench.cli.options import dir_option, quiet_option, workers_option

QUICKSTART = "quickstart.toml"


@click.command("demo")
@dir_option(
    "--out",
    "-o",
    "out_dir",
    default="reports/quickstart",
    show_default=True,
    help="Results directory; the report is written inside it.",
)
@workers_option("Local worker processes (default: one per CPU).")
@quiet_option()
def demo(out_dir: str, workers: int | None, quiet: bool) -> None:
    """Run scenarios/quickstart.toml (every embedded scenario x 3 strategies x 3 windows x
    2 tokenizers) into OUT, then write OUT/report.html. Running it again continues an
    interrupted run and rewrites the report.

    \b
    Example:
      ctxbench demo -o reports/quickstart
    """
    from ctxbench.cli.sweeping import execute, make_executor
    from ctxbench.resources import resource_dir
    from ctxbench.sweep import load_sweep

    spec = load_sweep(resource_dir("scenarios") / QUICKSTART)
    resume = (Path(out_dir) / "cells.jsonl").exists()
    execute(spec, out_dir, make_executor(workers, None, None), resume=resume, quiet=quiet)
    try:
        from ctxbench.decisions.verdict import Verdict
        from ctxbench.report.write import write_report
    except ImportError:  # the report is an optional part of a partial install
        return
    written = write_report(out_dir, Path(out_dir) / "report.html", **Verdict().report_args())
    click.echo(f"report:  {written.path}")
