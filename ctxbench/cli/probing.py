"""``ctxbench probes mine``: probes for recorded traces, mined from the traces themselves."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator

import click

from ctxbench.cell.traces import AUTO, open_traces
from ctxbench.cli.options import at_least_option, file_option, json_option, traces_argument
from ctxbench.cli.progress import ProgressBar
from ctxbench.formats.canonical import write_traces
from ctxbench.probes.mining import DEFAULT_MAX_PER_TRACE
from ctxbench.probes.mining import mine as mine_trace
from ctxbench.probes.probe_file import with_probes, write_probes
from ctxbench.trace import Trace


@click.group("probes")
def probes() -> None:
    """Probes for recorded traces (planted probes come with `ctxbench gen`)."""


@probes.command("mine")
@traces_argument(required=True)
@file_option(
    "--output",
    "-o",
    required=True,
    help="Where to write the traces (canonical .jsonl) or, with --probes-only, the probe file.",
)
@at_least_option(
    "--max-per-trace",
    minimum=1,
    default=DEFAULT_MAX_PER_TRACE,
    help="At most this many probes per trace, spread over its early, middle and late thirds.",
)
@click.option(
    "--max-others",
    type=click.IntRange(min=0),
    default=None,
    help="At most this many probes of the other kinds (default: as many as the needed probes"
    " took, so at least half of what is asked is what the agent used).",
)
@click.option(
    "--format",
    "fmt",
    default=AUTO,
    show_default=True,
    help="Format of the input files (see `ctxbench import --help`).",
)
@click.option(
    "--replace",
    "replace_existing",
    is_flag=True,
    help="Drop probes the traces already have instead of adding to them.",
)
@click.option(
    "--probes-only",
    is_flag=True,
    help="Write a probe file ({trace_id, probes} per line) instead of whole traces.",
)
@json_option("Print the counts per file as JSON.")
@click.option(
    "--why",
    "why",
    is_flag=True,
    help="Also print every candidate left out and why (trivia, not local, over the cap, ...).",
)
def mine(
    traces: tuple[str, ...],
    output: str,
    max_per_trace: int,
    max_others: int | None,
    fmt: str,
    replace_existing: bool,
    probes_only: bool,
    as_json: bool,
    why: bool,
) -> None:
    """Mine probes from TRACES, recorded in any importable format.

    First the facts the agent needed (kind ``needed``): a value the agent wrote in a later
    action (a tool call's arguments, its answer) after learning it from the user or a tool
    result, asked at the call that uses it. Then, in at most as many places, canaries of the
    other kinds (paths, commands, ids, numbers with units, error lines, tool-call arguments),
    each local to its evidence and asked at the end of the trace; trivia is skipped (--why
    says why).

    \b
    Examples:
      ctxbench probes mine run.traj -o run.jsonl
      ctxbench probes mine tau-bench/gpt-4o-airline.json -o airline.probes.jsonl --probes-only
      ctxbench probes mine run.traj -o run.jsonl --why
    """
    counts: dict[str, Counter[str]] = {}
    bar = ProgressBar("mining")

    def mined() -> Iterator[Trace]:
        for done, path in enumerate(traces, start=1):
            tally: Counter[str] = counts.setdefault(path, Counter())
            for trace in open_traces(path, fmt, strict=True).traces():
                result = mine_trace(trace, max_per_trace, max_others=max_others)
                found = result.probes
                for skipped in result.skipped if why else ():
                    click.echo(
                        f"skipped {trace.id} message {skipped.index} {skipped.category} "
                        f"{skipped.answer!r}: {skipped.reason}"
                    )
                tally["traces"] += 1
                tally["probes"] += len(found)
                tally.update(f"kind:{p.kind}" for p in found)
                yield with_probes(trace, found, keep_existing=not replace_existing)
            bar.update(done, len(traces))

    written = write_probes(output, mined()) if probes_only else write_traces(output, mined())
    bar.close()
    if as_json:
        click.echo(
            json.dumps({path: dict(sorted(c.items())) for path, c in counts.items()}, indent=2)
        )
    for path, tally in counts.items():
        kinds = ", ".join(
            f"{k.removeprefix('kind:')} {v}"
            for k, v in sorted(tally.items())
            if k.startswith("kind:")
        )
        click.echo(
            f"{path}: {tally['traces']} trace(s), {tally['probes']} probe(s) ({kinds or 'none'})",
            err=True,
        )
    if max_others is None and any(t["traces"] and not t["kind:needed"] for t in counts.values()):
        click.echo(
            "note: where the agent reused no value it had learned (no needed facts), no other"
            " kind is asked; --max-others N asks about up to N other facts",
            err=True,
        )
    click.echo(
        f"wrote {written} {'probe line' if probes_only else 'trace'}(s) to {output}", err=True
    )
