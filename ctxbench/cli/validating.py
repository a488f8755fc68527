"""``ctxbench validate``: structural problems of canonical traces, one line each."""

from __future__ import annotations

import json
import sys

import click

from ctxbench.cell.traces import open_traces
from ctxbench.cli.options import json_option, traces_argument
from ctxbench.validation import validate as validate_trace


@click.command("validate")
@traces_argument(required=True)
@json_option("One JSON object per problem.")
def validate(traces: tuple[str, ...], as_json: bool) -> None:
    """Check TRACES (canonical .jsonl/.json) for structural problems.

    Exit 0 when every trace is clean; exit 1 with one line per problem
    (file, trace id, message index, problem, hint). A malformed file reports its
    file and line and exits 2.

    \b
    Example:
      ctxbench validate traces.jsonl
    """
    problems = 0
    checked = 0
    for path in traces:
        for trace in open_traces(path).traces():
            checked += 1
            for problem in validate_trace(trace):
                problems += 1
                if as_json:
                    click.echo(
                        json.dumps({"file": path, "trace_id": trace.id, **problem.to_dict()})
                    )
                else:
                    where = f"message {problem.index}" if problem.index is not None else "trace"
                    click.echo(
                        f"{path}: {trace.id}: {where}: {problem.code}: {problem.message} (hint: {problem.hint})"
                    )
    if not as_json:
        click.echo(f"{checked} trace(s) checked, {problems} problem(s)", err=True)
    if problems:
        sys.exit(1)
