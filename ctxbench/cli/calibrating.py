"""``ctxbench calibrate``: a counter's prompt counts against provider-reported usage."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ctxbench.calibration import (
    BASELINES,
    Accuracy,
    Calibration,
    CrossValidation,
    cross_validate,
    fit_framing,
)
from ctxbench.calibration import calibrate as measure
from ctxbench.cell.traces import open_traces
from ctxbench.cli.options import (
    counter_option,
    file_option,
    json_option,
    quiet_option,
    reasoning_option,
    traces_argument,
)
from ctxbench.cli.output import print_table
from ctxbench.counting import get_counter
from ctxbench.counting.auto import AUTO, Choice, call_models, choose, choose_for, stand_in
from ctxbench.counting.base import TokenCounter
from ctxbench.counting.billing import FROM_FAMILY, GIVEN, BilledRule, billed_rule
from ctxbench.counting.profile import PREFIX, Profile, save_profile
from ctxbench.counting.reasoning import check_rule, with_reasoning
from ctxbench.errors import ConfigError, CtxbenchError
from ctxbench.trace import Trace


def _pct(value: float) -> str:
    return f"{value:+.2%}" if value < 0 else f"{value:.2%}"


def _row(acc: Accuracy) -> dict[str, str]:
    raw, fit = acc.raw, acc.with_constant
    helps = acc.constant_helps
    return {
        "counter": acc.name,
        "median_abs": _pct(raw.median_abs_rel_error),
        "p90_abs": _pct(raw.p90_abs_rel_error),
        "bias": f"{raw.bias:+.2%}",
        "|": "|",
        "median_abs+c": _pct(fit.median_abs_rel_error) if helps else "-",
        "p90_abs+c": _pct(fit.p90_abs_rel_error) if helps else "-",
        "bias+c": f"{fit.bias:+.2%}" if helps else "-",
    }


@dataclass(frozen=True)
class Group:
    """The calibration of one set of traces (one model with ``--by-model``)."""

    model: str
    counter_spec: str
    reasoning: str | None
    result: Calibration
    traces: int
    cv: CrossValidation | None
    fit_scale: bool
    #: how the reasoning rule was chosen (None: a profile, which holds its own)
    billed: BilledRule | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model,
            "counter_spec": self.counter_spec,
            "reasoning": self.reasoning,
            **self.result.to_dict(),
        }
        if self.billed is not None:
            out["reasoning_check"] = self.billed.to_dict()
        if self.cv is not None:
            out["cv"] = self.cv.to_dict()
        return out


def _print(group: Group) -> None:
    result = group.result
    click.echo(
        f"{result.calls} calls with recorded prompt tokens in {len(result.per_trace)} of {group.traces} traces"
    )
    click.echo(
        "errors are (counted - recorded) / recorded; +c: after the per-trace constant, shown "
        "only where it lowers p90\n"
    )
    rows = [_row(result.counter)] + [_row(acc) for acc in result.baselines.values()]
    print_table(rows, rows[0].keys())
    if group.cv is not None:
        cv = group.cv
        click.echo(
            f"\ncross-validated profile ({cv.k} folds by {cv.by}; fitted and scored on disjoint "
            f"calls): median |err| {cv.errors.median_abs_rel_error:.2%}, "
            f"p90 {cv.errors.p90_abs_rel_error:.2%}, bias {cv.errors.bias:+.2%} on {cv.errors.calls} calls"
        )
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


def _progress(quiet: bool, label: str) -> Callable[[int, int], None] | None:
    """A progress bar on a terminal; nothing under --quiet or when stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        return None
    from ctxbench.cli.progress import ProgressBar

    bar = ProgressBar(label)

    def update(done: int, total: int) -> None:
        bar.update(done, total, final=done == total)
        if done == total:
            sys.stderr.write("\n")

    return update


def _counter_for(
    spec: str, choice: Choice, reasoning: str | None, traces: list[Trace], model: str | None
) -> tuple[str, BilledRule | None, TokenCounter]:
    """(counter spec, how its reasoning rule was chosen, counter) for one group of traces:
    ``--reasoning`` when given, else the rule the group's billed usage supports
    (:mod:`ctxbench.counting.billing`), else the family's documented rule."""
    if spec.startswith(PREFIX):
        if reasoning is not None:
            raise ConfigError(
                "a profile holds its own reasoning rule",
                key="--reasoning",
                hint="drop --reasoning, or refit the profile with it",
            )
        return spec, None, get_counter(spec)
    name = choice.counter if spec == AUTO else spec
    base = get_counter(name)
    if reasoning is not None:
        rule = check_rule(reasoning)
        billed = BilledRule(model or "", rule, GIVEN, choice.reasoning)
    elif base.kind == "estimator":  # a framework's estimator counts as its release does
        billed = BilledRule(model or "", choice.reasoning, FROM_FAMILY, choice.reasoning)
    else:
        billed = billed_rule(
            traces, base, model or "", choice.reasoning, fit_scale=stand_in(choice, name)
        )
    return name, billed, with_reasoning(base, billed.rule)


def _calibrate_group(
    model: str,
    traces: list[Trace],
    spec: str,
    reasoning: str | None,
    cv: int | None,
    fit_scale: bool | None,
    quiet: bool,
    by_model: bool = False,
) -> Group:
    choice = choose(model or None)
    name, billed, counter = _counter_for(
        spec, choice, reasoning, traces, model if by_model else None
    )
    if not quiet and (spec == AUTO or (billed is not None and billed.from_usage)):
        picked = f"{model or '(no meta.model)'} -> {name}"
        click.echo(
            f"{'auto' if spec == AUTO else 'counter'}: {picked}"
            + (f", {billed.describe()}" if billed is not None else ""),
            err=True,
        )
    result = measure(
        traces,
        counter,
        _baselines(name),
        on_trace=_progress(quiet, "calibrate"),
        model=model if by_model else None,
    )
    if not result.calls:
        raise ConfigError(
            f"no call with recorded prompt tokens in the traces{f' of {model}' if model else ''}",
            hint="calibration needs usage.prompt_tokens on assistant messages (tau2-bench, mini-swe-agent files)",
        )
    # a stand-in tokenizer (not the model's own) needs a scale; the model's own does not
    scale = fit_scale if fit_scale is not None else stand_in(choice, name)
    folds = cross_validate(result.samples, cv, fit_scale=scale) if cv else None
    rule = billed.rule if billed is not None else None
    return Group(model, name, rule, result, len(traces), folds, scale, billed)


def pooled(groups: list[Group]) -> Accuracy:
    """Every group's calls together, each counted with its own model's counter and rule."""
    calls = [s for g in groups for s in g.result.samples]
    return Accuracy.of(f"all {len(groups)} models pooled", calls)


def _save(group: Group, path: Path, family: str | None, all_traces: list[Trace]) -> None:
    result = group.result
    framing = fit_framing(result.samples, fit_scale=group.fit_scale)
    fitted_on: dict[str, Any] = {
        "calls": result.calls,
        "traces": len(result.per_trace),
        **framing.errors.to_dict(),
    }
    if group.cv is not None:
        fitted_on["cv"] = {"k": group.cv.k, "folds_by": group.cv.by, **group.cv.errors.to_dict()}
    profile = Profile(
        base=group.counter_spec,
        family=family if family is not None else (group.model or _family(all_traces)),
        per_message=framing.per_message,
        per_tool_call=framing.per_tool_call,
        constant=framing.constant,
        fitted_on=fitted_on,
        scale=framing.scale,
        reasoning=group.reasoning,
    )
    save_profile(path, profile)
    scale = f", scale {framing.scale:g}" if framing.scale != 1.0 else ""
    click.echo(
        f"wrote {path}: per message {framing.per_message:+d}, per tool call {framing.per_tool_call:+d}, "
        f"constant {framing.constant:+d}{scale}; median |err| {framing.errors.median_abs_rel_error:.2%}, "
        f"p90 {framing.errors.p90_abs_rel_error:.2%} on the {result.calls} calls it was fitted on",
        err=True,
    )
    if framing.at_range_edge:
        click.echo(
            f"note: the fit stopped at the edge of its search range; {group.counter_spec} is far from this "
            "provider's framing, so prefer an exact counter of the model family as the base",
            err=True,
        )


def _profile_path(base: Path, model: str, several: bool) -> Path:
    if not several:
        return base
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model or "unknown")
    return base.with_name(f"{base.stem}.{safe}{base.suffix or '.json'}")


@click.command("calibrate")
@traces_argument(required=True)
@counter_option(
    "counter_spec",
    required=True,
    help="Counter to measure (see `ctxbench counters`), e.g. tiktoken:o200k_base; "
    "`auto` picks it from each trace's meta.model.",
)
@reasoning_option("the rule the billed usage supports, else the model family's")
@click.option(
    "--by-model",
    is_flag=True,
    help="Report per model even for one model (the default whenever the traces hold several: "
    "usage.model of the call where the trace records one, else the trace's meta.model; the "
    "pooled figure follows as one line).",
)
@click.option(
    "--cv",
    "cv",
    type=click.IntRange(min=2),
    default=None,
    help="Cross-validate a fitted profile in K folds (fit and score on disjoint calls).",
)
@click.option(
    "--fit-scale/--no-fit-scale",
    default=None,
    help="Fit a scale on the base count (default: only for a stand-in tokenizer, e.g. Claude).",
)
@json_option("Print exactly one JSON object.")
@file_option(
    "--save-profile",
    "profile_file",
    default=None,
    help="Fit the framing the provider adds (per message, per tool call, constant) and write it "
    "here (with --by-model: one file per model, FILE.<model>.json).",
)
@click.option(
    "--family",
    default=None,
    help="Model family stored in the profile (default: the traces' meta.model).",
)
@click.option(
    "--cache",
    is_flag=True,
    help="Also compare the prompt-cache model with the recorded cache reads (after the rest; "
    "under --json, one more JSON line).",
)
@quiet_option("No progress bar or notes on stderr.")
def calibrate(
    traces: tuple[str, ...],
    counter_spec: str,
    reasoning: str | None,
    by_model: bool,
    cv: int | None,
    fit_scale: bool | None,
    as_json: bool,
    profile_file: str | None,
    family: str | None,
    cache: bool,
    quiet: bool,
) -> None:
    """Compare COUNTER's prompt counts with the prompt tokens providers recorded in TRACES.

    Every assistant message with recorded usage is a call: the counter counts the messages
    before it (chat framing, tool schemas when the trace has them, replay fields under the
    provider's reasoning rule) and is compared with the provider's prompt_tokens. Prints the
    median and p90 absolute relative error and the signed bias for COUNTER and for chars4 and
    the framework estimators on the same calls, and, where it lowers p90, the figures after a
    per-trace constant (tool schemas or hidden framing the trace does not store).

    Calls are grouped per model (the call's usage.model, else the trace's meta.model) when
    the traces hold several; the pooled figure follows as one line. Without --reasoning each
    model's reasoning rule is the one its billed usage supports (each rule's counts checked
    against the recorded prompt_tokens after the framing a profile would fit), else the
    family's documented rule; stderr says which and why.

    --cv K fits a profile on K-1 folds and scores it on the held-back one (whole traces per
    fold, or blocks of calls when there are fewer than K traces). --save-profile fits the
    framing for the model family; `--counter profile:FILE` then counts with it.

    \b
    Examples:
      ctxbench calibrate tau2.json --counter tiktoken:o200k_base
      ctxbench calibrate *.json --counter auto --by-model --cv 5
      ctxbench calibrate tau2.json -c tiktoken:o200k_base --json --save-profile gpt-4o.json
      ctxbench calibrate session.jsonl mini.traj.json --counter auto --cache
      ctxbench run traces.jsonl -s dbgpt -w 32768 --counter profile:gpt-4o.json
    """
    loaded = [t for path in traces for t in open_traces(path, strict=True).traces()]
    choices = choose_for(loaded)
    # per model by default: one number over several models hides a group that is far off
    split = by_model or len(choices) > 1
    groups_in: list[tuple[str, list[Trace]]]
    if split:  # by the model of each call (usage.model), else of the trace
        groups_in = [(model, [t for t in loaded if model in call_models(t)]) for model in choices]
    else:
        groups_in = [(next(iter(choices), ""), loaded)]
    groups = [
        _calibrate_group(model, group, counter_spec, reasoning, cv, fit_scale, quiet, split)
        for model, group in groups_in
    ]
    together = pooled(groups) if len(groups) > 1 else None
    if as_json:
        payload: dict[str, Any] = (
            {"models": [g.to_dict() for g in groups]} if split else groups[0].to_dict()
        )
        if together is not None:
            payload["pooled"] = together.to_dict()
        click.echo(json.dumps(payload, ensure_ascii=False))
    else:
        for i, group in enumerate(groups):
            if split:
                click.echo(("\n" if i else "") + f"== {group.model or '(no meta.model)'}")
            _print(group)
        if together is not None:
            raw = together.raw
            click.echo(
                f"\n{together.name} (each counted with its own counter and rule; read the "
                f"tables above): median |err| {raw.median_abs_rel_error:.2%}, "
                f"p90 {raw.p90_abs_rel_error:.2%}, bias {raw.bias:+.2%} on {raw.calls} calls"
            )
    if profile_file:
        for group in groups:
            _save(group, _profile_path(Path(profile_file), group.model, split), family, loaded)
    if cache:
        from ctxbench.cli.cache_calibrating import report_cache

        report_cache(loaded, None if counter_spec == AUTO else counter_spec, as_json=as_json)
