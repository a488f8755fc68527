"""``ctxbench parity``: a reproduction against the released framework, call by call."""

from __future__ import annotations

import json

import click

from ctxbench import parity as comparison
from ctxbench.parity import DEFAULT_TOLERANCE, TraceParity


@click.command("parity")
@click.argument("reproduction")
@click.argument("shipped")
@click.argument("traces", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-w", "--window", type=click.IntRange(min=1), required=True, help="Model window.")
@click.option("--reserved", type=click.IntRange(min=0), default=4096, show_default=True)
@click.option("-c", "--counter", default="tiktoken:o200k_base", show_default=True)
@click.option("--summarizer", default="extractive", show_default=True)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0),
    default=DEFAULT_TOLERANCE,
    show_default=True,
    help="Relative token difference under which two prompts count as the same size.",
)
@click.option("--format", "fmt", default="auto", show_default=True, help="Format of TRACES.")
@click.option("--json", "as_json", is_flag=True, help="Print the per-trace results as JSON.")
def parity_command(
    reproduction: str,
    shipped: str,
    traces: tuple[str, ...],
    window: int,
    reserved: int,
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

    \b
    Examples:
      ctxbench parity dbgpt shipped:dbgpt@0.8.2 traces.jsonl -w 16384
      ctxbench parity hermes shipped:hermes@0.19.0 run.traj -w 32768 --json
    """
    from ctxbench.cell.traces import open_traces
    from ctxbench.strategies import strategy_class

    strategy_class(reproduction), strategy_class(shipped)  # unknown names fail before replaying
    loaded = [t for path in traces for t in open_traces(path, fmt).traces()]
    results = comparison.parity(
        loaded,
        reproduction,
        shipped,
        window=window,
        reserved=reserved,
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
        f"{summary['identical_traces']} of {summary['traces']} traces identical"
    )


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
