"""``ctxbench init``: write a commented starter sweep for your own traces."""

from __future__ import annotations

from pathlib import Path

import click

from ctxbench.cli.options import file_option, traces_argument
from ctxbench.errors import ConfigError


@click.command("init")
@traces_argument(exists=True)
@file_option(
    "--out",
    "-o",
    "out_file",
    default="sweep.toml",
    show_default=True,
    help="The sweep file to write.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def init(traces: tuple[str, ...], out_file: str, force: bool) -> None:
    """Write a commented starter sweep over TRACES (canonical or recorded files; each one's
    format is detected and written down), comparing the no-compaction baseline, a sliding
    window, DB-GPT and OpenHands at 32k and 128k. Without TRACES, an embedded scenario.

    \b
    Examples:
      ctxbench init runs/*.json -o sweep.toml
      ctxbench sweep sweep.toml -o results/ && ctxbench report results/ -o report.html
    """
    from ctxbench.sweep.spec import load_sweep
    from ctxbench.sweep.starter import starter_sweep

    out = Path(out_file)
    if out.exists() and not force:
        raise ConfigError("already exists", path=out, hint="add --force to overwrite it")
    out.write_text(starter_sweep(traces, base=out.parent), "utf-8")
    spec = load_sweep(out)  # what we wrote must be a valid sweep
    cells = len(spec.configs())
    click.echo(
        f"wrote {out}: {cells} configurations per trace; run `ctxbench sweep {out} -o results/`"
    )
