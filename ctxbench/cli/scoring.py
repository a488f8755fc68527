"""``ctxbench score``: grade a compaction saved to a file against a trace's probes."""

from __future__ import annotations

import json

import click

from ctxbench.cli.options import counter_option, file_option, json_option
from ctxbench.cli.output import print_table
from ctxbench.errors import TraceFormatError
from ctxbench.probes.compacted import OUTCOMES, Cut, Grade, default_cut
from ctxbench.trace import Trace

#: The longest answer a text table shows (the JSON has them whole).
ANSWER_WIDTH = 70


@click.command("score")
@file_option(
    "--compacted",
    "compacted_file",
    required=True,
    help="The saved compaction: a transcript (.json / .jsonl: chat messages, a canonical trace, "
    "a session log) or summary text (any other file).",
)
@file_option(
    "--probes",
    "probes_file",
    help="A probe file (`ctxbench probes mine --probes-only`) with the probes to grade.",
)
@file_option(
    "--trace",
    "trace_file",
    help="The trace whose history the compaction replaced: its probes (mined when it has "
    "none) and the history's size.",
)
@click.option("--trace-id", help="The trace of TRACE (or of PROBES) meant, when it holds several.")
@click.option(
    "--at",
    "at_call",
    type=click.IntRange(min=0),
    help="The model call before which the history was replaced (default: the trace's first "
    "recorded compaction, else the whole trace).",
)
@counter_option(default="tiktoken:o200k_base", show_default=True, help="Counts both sizes.")
@json_option("Print the grade as one JSON object (per probe, per kind, sizes).")
def score(
    compacted_file: str,
    probes_file: str | None,
    trace_file: str | None,
    trace_id: str | None,
    at_call: int | None,
    counter: str,
    as_json: bool,
) -> None:
    """Grade a compaction your agent saved to a file against a trace's probes.

    Each probe is scored as a replay scores a prompt (ctxbench.probes.scoring: case, quotes
    and whitespace folded; a path as absolute, cwd- or repo-relative; a command without its
    `cd X &&`): in_context, stale (only a superseded value) or lost. With a trace, the probes
    graded are those asked at or after the cut whose fact was stated before it, and the
    compaction's size is given as a share of the history it replaced (with --counter).

    \b
    Examples:
      ctxbench score --compacted summary.md --trace session.jsonl
      ctxbench score --compacted compacted.json --trace traces.jsonl --at 40 --json
      ctxbench score --compacted summary.txt --probes probes.jsonl
    """
    from ctxbench.counting import get_counter
    from ctxbench.probes.compacted import grade, probes_for, read_compacted

    if not probes_file and not trace_file:
        raise click.UsageError("give --probes PROBES or --trace TRACE (or both)")
    if at_call is not None and not trace_file:
        raise click.UsageError("--at needs --trace (the history the compaction replaced)")
    trace = _trace(trace_file, trace_id) if trace_file else None
    probe_sets = None
    if probes_file:
        from ctxbench.probes.probe_file import load_probes

        probe_sets = load_probes(probes_file)
        if trace is None and trace_id is not None:
            if trace_id not in probe_sets:
                raise TraceFormatError(
                    f"has no probes for trace {trace_id!r}",
                    path=probes_file,
                    hint=f"its traces: {', '.join(sorted(probe_sets)) or 'none'}",
                )
            probe_sets = {trace_id: probe_sets[trace_id]}
    compacted = read_compacted(compacted_file)
    probes = probes_for(trace, probe_sets, source=probes_file or str(trace_file))
    cut = None
    if trace is not None:
        n_calls = len(trace.call_indices)
        if at_call is not None and at_call > n_calls:
            raise click.BadParameter(
                f"the trace has {n_calls} model calls (0 to {n_calls}, {n_calls} = the end)",
                param_hint="--at",
            )
        cut = Cut(trace, at_call if at_call is not None else default_cut(trace))
    result = grade(compacted, probes, get_counter(counter), cut=cut)
    if as_json:
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
        return
    _print(result)


def _trace(path: str, trace_id: str | None) -> Trace:
    from ctxbench.cell.traces import open_traces

    traces = list(open_traces(path).traces())
    if trace_id is not None:
        chosen = [t for t in traces if t.id == trace_id]
        if not chosen:
            raise TraceFormatError(
                f"has no trace {trace_id!r}",
                path=path,
                hint=f"its traces: {', '.join(t.id for t in traces[:10]) or 'none'}",
            )
        return chosen[0]
    if len(traces) != 1:
        raise TraceFormatError(
            f"holds {len(traces)} traces",
            path=path,
            hint="say which one the compaction replaced with --trace-id",
        )
    return traces[0]


def _print(result: Grade) -> None:
    compacted, cut = result.compacted, result.cut
    size = f"{result.compacted_tokens:,} tokens ({result.counter})"
    click.echo(
        f"compacted: {compacted.path} ({compacted.read_as}, {len(compacted.messages)} "
        f"message(s)): {size}"
    )
    if cut is not None:
        where = "the whole trace" if cut.call is None else f"messages before call {cut.call}"
        share = "-" if result.share is None else f"{result.share:.1%}"
        click.echo(
            f"replaced: {cut.trace.id}, {where} ({cut.end} messages, "
            f"{result.history_tokens:,} tokens): the compaction is {share} of it"
        )
    if not result.graded:
        click.echo(
            "no probe to grade"
            + (f" ({result.left_out} left out by the cut)" if result.left_out else "")
        )
        return
    click.echo("")
    print_table(
        [
            {
                "probe": g.probe.id,
                "kind": g.probe.kind,
                "outcome": g.outcome + (" (bare)" if g.bare else ""),
                "answer": _short(g.probe.answers[0] if g.probe.answers else ""),
            }
            for g in result.graded
        ],
        ("probe", "kind", "outcome", "answer"),
    )
    click.echo("")
    kinds = result.by_kind()
    rows = [{"kind": kind, **row} for kind, row in kinds.items()]
    kept = sum(g.outcome == "in_context" for g in result.graded)
    total = {o: sum(g.outcome == o for g in result.graded) for o in OUTCOMES}
    rows.append(
        {"kind": "all", "probes": len(result.graded), **total, "retention": result.retention}
    )
    print_table(rows, ("kind", "probes", *OUTCOMES, "retention"))
    click.echo(f"\nretention: {kept}/{len(result.graded)} probes in context")
    if result.left_out:
        click.echo(
            f"left out: {result.left_out} probe(s) asked before the cut or about facts stated "
            "after it (the compaction did not have to carry them)"
        )


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= ANSWER_WIDTH else line[: ANSWER_WIDTH - 3] + "..."
