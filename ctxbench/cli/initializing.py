"""``ctxbench init``: write a commented starter sweep for your own traces, or (``--strategy``)
the files that test your own compactor in CI."""

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
@click.option(
    "--strategy",
    "strategy",
    metavar="NAME",
    help="Instead: scaffold a compactor plug-in NAME.py, its probes (ctxbench/probes.jsonl), "
    "a pytest test through the ctxbench_retention fixture and a CI workflow, under --dir.",
)
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False),
    default=".",
    show_default=True,
    help="Where --strategy writes its files.",
)
def init(
    traces: tuple[str, ...], out_file: str, force: bool, strategy: str | None, folder: str
) -> None:
    """Write a commented starter sweep over TRACES (canonical or recorded files; each one's
    format is detected and written down), comparing the no-compaction baseline, a sliding
    window, DB-GPT and OpenHands at 32k and 128k. Without TRACES, an embedded scenario.

    With --strategy NAME: a plain compactor NAME.py (system prompt, user messages and the
    last messages kept), the probes its test asks, tests/test_NAME.py (per-kind retention
    through the pytest plugin: a failure names each probe lost and the call) and
    .github/workflows/ctxbench.yml. The compactor passes its test as written.

    \b
    Examples:
      ctxbench init runs/*.json -o sweep.toml
      ctxbench sweep sweep.toml -o results/ && ctxbench report results/ -o report.html
      ctxbench init --strategy my_compactor && python -m pytest tests/test_my_compactor.py
    """
    if strategy is not None:
        if traces:
            raise click.UsageError("--strategy scaffolds a plug-in and its test: give no TRACES")
        from ctxbench.gate.scaffold import write_scaffold

        for path in write_scaffold(strategy, folder, force=force):
            click.echo(f"wrote {path}")
        click.echo(f"run `python -m pytest tests/test_{strategy}.py` (in {folder})")
        return
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
