"""``ctxbench parity``: a reproduction against the released framework, call by call."""

from __future__ import annotations

import json

import click

from ctxbench import parity as comparison
from ctxbench.cell.spec import RunSpec
from ctxbench.cli.options import at_least_option, counter_option, json_option, traces_argument
from ctxbench.parity import DEFAULT_TOLERANCE, TraceParity

#: The SHIPPED argument that compares with the compactions the trace recorded.
RECORDED = "recorded"


@click.command("parity")
@click.argument("reproduction")
@click.argument("shipped")
@traces_argument(exists=True, required=True)
@click.option(
    "-w",
    "--window",
    type=click.IntRange(min=1),
    default=None,
    help="Model window (required, except against `recorded`: Claude Code's 200,000).",
)
@click.option(
    "--reserved",
    type=click.IntRange(min=0),
    default=None,
    help="Reserved output tokens [default: 4096; against `recorded`: 32,000].",
)
@counter_option(default=RunSpec.counter, show_default=True)
@click.option(
    "--summarizer",
    default="extractive",  # parity tables stay on the summarizer they were measured with
    show_default=True,
)
@at_least_option(
    "--tolerance",
    minimum=0,
    default=DEFAULT_TOLERANCE,
    help="Relative token difference under which two prompts count as the same size.",
)
@click.option("--format", "fmt", default="auto", show_default=True, help="Format of TRACES.")
@json_option("Print the per-trace results as JSON.")
def parity_command(
    reproduction: str,
    shipped: str,
    traces: tuple[str, ...],
    window: int | None,
    reserved: int | None,
    counter: str,
    summarizer: str,
    tolerance: float,
    fmt: str,
    as_json: bool,
) -> None:
    """Replay TRACES through REPRODUCTION and SHIPPED and compare them call by call.

    Two calls agree when both compacted (or neither), their prompts hold the same trace
    messages, their true tokens are within --tolerance and both failed (or neither). Prints
    the agreement per trace and overall, and each trace's first divergence.

    SHIPPED may be `recorded`: the compactions the real agent made, as the trace recorded them
    (Claude Code `compact_boundary`, Codex `compacted`). Then each recorded compaction is
    paired with the call at which REPRODUCTION compacts, and its count there is set against
    the recorded pre-compaction count (Claude Code's preTokens).

    \b
    Examples:
      ctxbench parity dbgpt shipped:dbgpt@0.8.2 traces.jsonl -w 16384
      ctxbench parity hermes shipped:hermes@0.19.0 run.traj -w 32768 --json
      ctxbench parity claude_code recorded ~/.claude/projects/my-proj/SESSION.jsonl
    """
    from ctxbench.cell.traces import open_traces
    from ctxbench.strategies import strategy_class

    if shipped == RECORDED:
        _against_recorded(reproduction, traces, fmt, window, reserved, counter, summarizer, as_json)
        return
    if window is None:
        raise click.UsageError("give the model window with -w/--window (e.g. -w 32768)")
    strategy_class(reproduction), strategy_class(shipped)  # unknown names fail before replaying
    loaded = [t for path in traces for t in open_traces(path, fmt).traces()]
    results = comparison.parity(
        loaded,
        reproduction,
        shipped,
        window=window,
        reserved=4096 if reserved is None else reserved,
        counter=counter,
        summarizer=summarizer,
        tolerance=tolerance,
    )
    summary = comparison.overall(results)
    if as_json:
        click.echo(
            json.dumps({"traces": [r.to_dict() for r in results], "overall": summary}, indent=2)
        )
        return
    for result in results:
        click.echo(_line(result))
    click.echo(
        f"overall: {summary['agreement']} of {summary['calls']} calls agree "
        f"(compacted {summary['same_compacted']}, kept {summary['same_kept']}, tokens "
        f"{summary['tokens_within']}, failed {summary['same_failed']}); "
        f"{summary['identical_traces']} of {summary['traces']} traces identical; first "
        f"compaction the same on {summary['same_first_compaction']} of traces; failed calls "
        f"{summary['failed_calls'][0]} vs {summary['failed_calls'][1]}"
    )


def _against_recorded(
    reproduction: str,
    paths: tuple[str, ...],
    fmt: str,
    window: int | None,
    reserved: int | None,
    counter: str,
    summarizer: str,
    as_json: bool,
) -> None:
    """The ``recorded`` side: every trace must hold the compactions its agent recorded."""
    from ctxbench.cell.traces import open_traces
    from ctxbench.errors import ConfigError
    from ctxbench.recorded import (
        CLAUDE_CODE_MAX_OUTPUT,
        CLAUDE_CODE_WINDOW,
        render,
        replay_recorded,
    )
    from ctxbench.strategies import strategy_class

    strategy_class(reproduction)
    parities = []
    for path in paths:
        for trace in open_traces(path, fmt).traces():
            if not trace.recorded_compactions:
                raise ConfigError(
                    f"trace {trace.id!r} holds no recorded compaction to compare with",
                    path=path,
                    hint="`recorded` needs a session whose agent compacted (a Claude Code "
                    "compact_boundary or a Codex compacted record)",
                )
            parities.append(
                replay_recorded(
                    trace,
                    reproduction,
                    window=CLAUDE_CODE_WINDOW if window is None else window,
                    reserved=CLAUDE_CODE_MAX_OUTPUT if reserved is None else reserved,
                    counter=counter,
                    summarizer=summarizer,
                )
            )
    click.echo(render(parities, as_json=as_json))


def _line(result: TraceParity) -> str:
    if result.error:
        return f"{result.trace_id}: error: {result.error.splitlines()[0]}"
    text = (
        f"{result.trace_id}: {result.agreeing}/{result.calls} calls agree "
        f"(compacted {result.same_compacted}, kept {result.same_kept}, "
        f"tokens {result.tokens_within}, failed {result.same_failed})"
    )
    first = result.first_divergence
    if first is not None:
        a, b = first["reproduction"], first["shipped"]
        text += (
            f"\n  first divergence at call {first['call']} ({', '.join(first['differs'])}):"
            f"\n    {result.reproduction}: state {a['state']} used {a['used']}/{a['budget']}, "
            f"layers {list(a['layers'])}, {a['true_tokens']} tokens, failed {a['failed']}, "
            f"kept only here {first['only_reproduction_kept']}"
            f"\n    {result.shipped}: state {b['state']} used {b['used']}/{b['budget']}, "
            f"layers {list(b['layers'])}, {b['true_tokens']} tokens, failed {b['failed']}, "
            f"kept only here {first['only_shipped_kept']}"
        )
    return text


parity = parity_command  # the name ctxbench.cli's COMMANDS table imports
