"""``ctxbench import``: recorded traces (files or a Hugging Face dataset) -> canonical JSONL."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import click

from ctxbench.cli.options import file_option, json_option
from ctxbench.errors import ConfigError
from ctxbench.formats import FORMATS
from ctxbench.formats.canonical import write_traces
from ctxbench.formats.hf_dataset import NAME as HF_FORMAT
from ctxbench.formats.hf_dataset import read_hub
from ctxbench.formats.importer import ImportOptions
from ctxbench.formats.importing import AUTO, ImportReport, Tally, open_source, unique_ids
from ctxbench.trace import Trace


def _describe(report: ImportReport) -> str:
    how = "auto-detected" if report.detected else "given"
    problems = ", ".join(f"{code} x{n}" for code, n in report.problems.items()) or "none"
    kinds = ", ".join(f"{kind} x{n}" for kind, n in report.unmapped_entries.items())
    entries = f" ({kinds})" if kinds else ""
    return (
        f"{report.source}: {report.format} ({how}): {report.traces} traces, {report.messages} messages, "
        f"{report.model_calls} model calls, {report.calls_with_usage} with usage, "
        f"{report.tool_calls} tool calls, {report.thinking_blocks} thinking blocks, "
        f"{report.recorded_compactions} recorded compactions, "
        f"{sum(report.unmapped_entries.values())} unmapped entries{entries}; problems: {problems}"
    )


def format_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--format/-f`` of the commands that read recorded files (``what``: their argument)."""
    return click.option(
        "--format",
        "-f",
        "format_name",
        default=AUTO,
        show_default=True,
        help=f"Format of {what}: auto, or one of {', '.join(FORMATS.names())}.",
    )


@click.command("import")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@format_option("FILES")
@click.option(
    "--hf",
    "hub",
    multiple=True,
    metavar="NAME[:SPLIT]",
    help="Also import a Hugging Face hub dataset (needs the network; split defaults to train).",
)
@click.option(
    "--messages-column",
    default=None,
    metavar="COL",
    help="Dataset column holding the messages (default: messages, conversations, ...).",
)
@file_option("--out", "-o", required=True, help="Canonical traces to write (.jsonl).")
@json_option("Print one JSON report per source instead of text.")
def import_(
    files: tuple[str, ...],
    format_name: str,
    hub: tuple[str, ...],
    messages_column: str | None,
    out: str,
    as_json: bool,
) -> None:
    """Import recorded traces from FILES into the canonical format.

    The format of each file is detected (--format auto) or given. Every source key that has no
    canonical field is kept under `meta`; recorded usage and reasoning fields are kept per
    message. The traces are validated as they are written; per source the command prints the
    format, traces, messages, model calls, calls with usage and the problems found
    (`ctxbench validate OUT` lists them one by one).

    \b
    Examples:
      ctxbench import tau2-results.json -o traces.jsonl
      ctxbench import run1.traj run2.traj --format swe_agent -o swe.jsonl
      ctxbench import rows.parquet --messages-column conversation -o ds.jsonl
      ctxbench import --hf org/agent-traces:test -o hub.jsonl
    """
    if not files and not hub:
        raise ConfigError("nothing to import", hint="give FILES or --hf NAME[:SPLIT]")
    if format_name != AUTO and format_name not in FORMATS:
        FORMATS.entry(format_name)  # raises with "did you mean"
    options = ImportOptions(messages_column=messages_column)
    tallies: list[Tally] = []
    renamed: list[tuple[str, str]] = []

    def traces() -> Iterator[Trace]:
        seen: set[str] = set()
        for path in files:
            source = open_source(path, format_name)
            tally = Tally(path, source.importer.name, source.detected)
            tallies.append(tally)
            yield from unique_ids(tally.count(source.traces(options)), seen, renamed)
        for spec in hub:
            tally = Tally(f"hf://{spec}", HF_FORMAT, False)
            tallies.append(tally)
            yield from unique_ids(tally.count(read_hub(spec, options)), seen, renamed)

    written = write_traces(out, traces())
    for tally in tallies:
        report = tally.report()
        click.echo(
            json.dumps(report.to_dict(), ensure_ascii=False) if as_json else _describe(report)
        )
    for old, new in renamed:
        click.echo(f"note: trace id {old!r} was already used; written as {new!r}", err=True)
    if not as_json:
        click.echo(f"wrote {written} traces to {out}")
