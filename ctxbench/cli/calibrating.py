"""``ctxbench calibrate``: a counter's prompt counts against provider-reported usage."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ctxbench.calibration import BASELINES, Accuracy, Calibration, fit_framing
from ctxbench.calibration import calibrate as measure
from ctxbench.cell.traces import open_traces
from ctxbench.cli.output import print_table
from ctxbench.counting import get_counter
from ctxbench.counting.base import TokenCounter
from ctxbench.counting.profile import Profile, save_profile
from ctxbench.errors import ConfigError, CtxbenchError
from ctxbench.trace import Trace


def _pct(value: float) -> str:
    return f"{value:+.2%}" if value < 0 else f"{value:.2%}"


def _row(acc: Accuracy) -> dict[str, str]:
    raw, fit = acc.raw, acc.with_constant
    return {
        "counter": acc.name,
        "median_abs": _pct(raw.median_abs_rel_error),
        "p90_abs": _pct(raw.p90_abs_rel_error),
        "bias": f"{raw.bias:+.2%}",
        "|": "|",
        "median_abs+c": _pct(fit.median_abs_rel_error),
        "p90_abs+c": _pct(fit.p90_abs_rel_error),
        "bias+c": f"{fit.bias:+.2%}",
    }


def _print(result: Calibration, traces: int) -> None:
    click.echo(
        f"{result.calls} calls with recorded prompt tokens in {len(result.per_trace)} of {traces} traces"
    )
    click.echo("errors are (counted - recorded) / recorded; +c: after the per-trace constant\n")
    rows = [_row(result.counter)] + [_row(acc) for acc in result.baselines.values()]
    print_table(rows, rows[0].keys())
    click.echo(f"\nper trace ({result.counter.name}; constant = tokens the trace does not show):")
    per_trace = [
        {
            "trace_id": t.trace_id,
            "calls": str(t.accuracy.raw.calls),
            "constant": str(t.constant),
            **{k: v for k, v in _row(t.accuracy).items() if k != "counter"},
        }
        for t in result.per_trace
    ]
    print_table(per_trace, per_trace[0].keys())


def _baselines(counter_spec: str) -> dict[str, TokenCounter]:
    out: dict[str, TokenCounter] = {}
    for name in BASELINES:
        if name == counter_spec:
            continue
        try:
            out[name] = get_counter(name)
        except CtxbenchError as exc:
            click.echo(f"note: baseline {name} is unavailable: {exc}", err=True)
    return out


def _family(traces: list[Trace]) -> str:
    models = sorted({str(t.meta["model"]) for t in traces if t.meta.get("model")})
    return ",".join(models)


@click.command("calibrate")
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--counter",
    "-c",
    "counter_spec",
    required=True,
    help="Counter to measure (see `ctxbench counters`), e.g. tiktoken:o200k_base.",
)
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object.")
@click.option(
    "--save-profile",
    "profile_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Fit the framing the provider adds (per message, per tool call, constant) and write it here.",
)
@click.option(
    "--family",
    default=None,
    help="Model family stored in the profile (default: the traces' meta.model).",
)
def calibrate(
    traces: tuple[str, ...],
    counter_spec: str,
    as_json: bool,
    profile_file: str | None,
    family: str | None,
) -> None:
    """Compare COUNTER's prompt counts with the prompt tokens providers recorded in TRACES.

    Every assistant message with recorded usage is a call: the counter counts the messages
    before it (chat framing, tool schemas when the trace has them, replay fields) and is
    compared with the provider's prompt_tokens. Prints the median and p90 absolute relative
    error and the signed bias, raw and after a per-trace constant (tool schemas or hidden
    framing the trace does not store), for COUNTER and for chars4 and the framework estimators
    on the same calls. TRACES may be canonical or any importable recorded file.

    --save-profile fits the framing for the model family; `--counter profile:FILE` then counts
    with it (e.g. `ctxbench run --counter profile:FILE` for the simulated provider).

    \b
    Examples:
      ctxbench calibrate tau2.json --counter tiktoken:o200k_base
      ctxbench calibrate tau2.json -c tiktoken:o200k_base --json --save-profile gpt-4o.json
      ctxbench run traces.jsonl -s dbgpt -w 32768 --counter profile:gpt-4o.json
    """
    counter = get_counter(counter_spec)
    loaded = [t for path in traces for t in open_traces(path, strict=True).traces()]
    result = measure(loaded, counter, _baselines(counter_spec))
    if not result.calls:
        raise ConfigError(
            "no call with recorded prompt tokens in the traces",
            hint="calibration needs usage.prompt_tokens on assistant messages (tau2-bench, mini-swe-agent files)",
        )
    if as_json:
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        _print(result, len(loaded))
    if profile_file:
        framing = fit_framing(result.samples)
        profile = Profile(
            base=counter_spec,
            family=family if family is not None else _family(loaded),
            per_message=framing.per_message,
            per_tool_call=framing.per_tool_call,
            constant=framing.constant,
            fitted_on={
                "calls": result.calls,
                "traces": len(result.per_trace),
                **framing.errors.to_dict(),
            },
        )
        save_profile(Path(profile_file), profile)
        click.echo(
            f"wrote {profile_file}: per message {framing.per_message:+d}, per tool call {framing.per_tool_call:+d}, "
            f"constant {framing.constant:+d}; median |err| {framing.errors.median_abs_rel_error:.2%}, "
            f"p90 {framing.errors.p90_abs_rel_error:.2%} on {result.calls} calls",
            err=as_json,
        )
        if framing.at_range_edge:
            click.echo(
                f"note: the fit stopped at the edge of its search range; {counter_spec} is far from this "
                "provider's framing, so prefer an exact counter of the model family as the base",
                err=True,
            )
