"""``ctxbench summaries``: a summarizer beside the summaries the real agent wrote, at each
recorded compaction of recorded sessions (Claude Code, Codex)."""

from __future__ import annotations

import click

from ctxbench import config as configuration
from ctxbench.cell.spec import RunSpec
from ctxbench.cell.traces import AUTO, open_traces
from ctxbench.cli.importing import format_option
from ctxbench.cli.options import counter_option, json_option, traces_argument
from ctxbench.formats import FORMATS


@click.command("summaries")
@traces_argument(required=True)
@click.option(
    "--summarizer",
    default=RunSpec.summarizer,
    show_default=True,
    help="The summarizer to compare with the recorded summaries (a name or module:Class).",
)
@click.option(
    "--summarizer-set",
    "summarizer_sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="A summarizer parameter (repeatable), e.g. --summarizer-set model=gpt-4o-mini.",
)
@format_option("TRACES")
@counter_option(default=RunSpec.counter, show_default=True, help="The counter of the lengths.")
@json_option("Print one JSON document {summarizer, compactions: [...]} instead of tables.")
def summaries(
    traces: tuple[str, ...],
    summarizer: str,
    summarizer_sets: tuple[str, ...],
    format_name: str,
    counter: str,
    as_json: bool,
) -> None:
    """For each recorded compaction in TRACES that kept its summary, run a summarizer on the
    same history with the request the reproducing strategy makes (claude_code for Claude
    Code sessions, codex for Codex rollouts, openhands_summarizing for OpenHands
    condensations) and print it beside the summary the real model wrote: length in tokens, the probes mined on that history kept by category, and the facts
    the agent used after the compaction kept (paths, ids and values its later actions write
    that the history held: the compaction's needed facts). A probe or fact counts as kept when the scorer finds it in the summary.

    \b
    Examples:
      ctxbench summaries ~/.claude/projects/my-proj/SESSION.jsonl
      ctxbench summaries SESSION.jsonl --summarizer extractive
      ctxbench summaries SESSION.jsonl --summarizer openai \\
          --summarizer-set model=gpt-4o-mini --json
    """
    from ctxbench.counting import get_counter
    from ctxbench.summarizers import build_summarizer, summarizer_params
    from ctxbench.summarizers.comparison import compare, render

    if format_name != AUTO and format_name not in FORMATS:
        FORMATS.entry(format_name)  # raises with "did you mean"
    params = summarizer_params(
        summarizer, configuration.parse_set(summarizer_sets), source="--summarizer-set"
    )
    built = build_summarizer(summarizer, params)
    loaded = [t for path in traces for t in open_traces(path, format_name).traces()]
    rows = compare(loaded, built, get_counter(counter))
    click.echo(render(rows, summarizer, as_json=as_json))
