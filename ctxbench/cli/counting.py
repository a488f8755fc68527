"""``ctxbench counters`` and ``ctxbench count``: which counters exist, and what they count."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ctxbench.cell.spec import RunSpec
from ctxbench.cli.options import json_option, quiet_option, reasoning_option, traces_argument
from ctxbench.cli.output import print_table
from ctxbench.cli.progress import terminal_bar
from ctxbench.counting.auto import AUTO

if TYPE_CHECKING:
    from ctxbench.trace import Trace

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_COUNTERS = (RunSpec.counter,)


@click.command("counters")
@json_option("One JSON object per counter.")
def counters(as_json: bool) -> None:
    """List every token counter with its kind (exact / estimator) and source.

    Exact counters load vendored tokenizer files from tokenizers/ (no network); estimators
    reproduce the rules agent frameworks use. Listing loads no tokenizer.

    \b
    Example:
      ctxbench counters
      ctxbench count --text "hello world" --counter tiktoken:o200k_base
    """
    from ctxbench.counting import COUNTERS, counter_kind

    rows = [
        {"name": e.name, "kind": counter_kind(e.name), "summary": e.summary, "source": e.source}
        for e in COUNTERS.entries()
    ]
    if as_json:
        for row in rows:
            click.echo(json.dumps(row, ensure_ascii=False))
    else:
        print_table(rows, ["name", "kind", "summary", "source"])


@click.command("count")
@traces_argument()
@click.option(
    "--counter",
    "specs",
    multiple=True,
    metavar="SPEC",
    help=f"Counter name (see `ctxbench counters`; `auto`: the traces' recorded model's); "
    f"repeat for several. Default: {DEFAULT_COUNTERS[0]}.",
)
@click.option("--text", "text", default=None, help="Count this text instead of trace files.")
@reasoning_option("as each counter renders it; with `auto`, the model family's rule")
@json_option("Print JSON instead of a table.")
@quiet_option()
def count(
    traces: tuple[str, ...],
    specs: tuple[str, ...],
    text: str | None,
    reasoning: str | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Count tokens of TEXT or of canonical TRACES with one or more counters.

    With --text, prints the count (one number for one counter, a table for several). With
    trace files, prints per trace and counter: the total as one request, the request overhead,
    tokens per role, per content class of the text (prose, code, json, logs, tables, cjk) and
    the framing around the text (negative when a chat template drops text, as DeepSeek V3's
    drops reasoning); several traces end with an "all" block.

    \b
    Examples:
      ctxbench count --text "hello world" --counter tiktoken:o200k_base
      ctxbench count traces.jsonl --counter tiktoken:o200k_base --counter chars4
      ctxbench count traces.jsonl --counter hf:qwen2.5 --json
    """
    if (text is None) == (not traces):
        raise click.UsageError("give either --text TEXT or one or more TRACE files")
    from ctxbench.counting import get_counter
    from ctxbench.counting.reasoning import with_reasoning

    names = list(dict.fromkeys(specs or DEFAULT_COUNTERS))
    rules: dict[str, str | None] = dict.fromkeys(names, reasoning)
    if AUTO in names:
        if text is not None:
            raise click.UsageError("--counter auto picks from traces' meta.model, not from --text")
        rules = _auto(names, rules, traces, reasoning)
        names = list(rules)
    counters_ = [with_reasoning(get_counter(name), rules[name]) for name in names]
    if text is not None:
        _count_text(text, names, [c.count(text) for c in counters_], as_json)
    else:
        _count_traces(traces, names, counters_, as_json, quiet)


def _auto(
    names: Sequence[str],
    rules: dict[str, str | None],
    paths: Sequence[str],
    reasoning: str | None,
) -> dict[str, str | None]:
    """``auto`` replaced by the counter (and reasoning rule) of the traces' recorded models."""
    from ctxbench.cell.traces import open_traces
    from ctxbench.counting.auto import choose_for, pooling_warning

    choices = choose_for(t for path in paths for t in open_traces(path).traces())
    for choice in choices.values():
        click.echo(f"auto: {choice.describe()}", err=True)
    warning = pooling_warning(choices)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    out: dict[str, str | None] = {}
    for name in names:
        if name != AUTO:
            out[name] = rules[name]
            continue
        for choice in choices.values():
            out.setdefault(choice.counter, reasoning or choice.reasoning)
    return out


def _count_text(text: str, names: Sequence[str], counts: Sequence[int], as_json: bool) -> None:
    from ctxbench.counting.content_class import classify

    if as_json:
        payload = {"chars": len(text), "class": classify(text), "counts": dict(zip(names, counts))}
        click.echo(json.dumps(payload, ensure_ascii=False))
    elif len(names) == 1:
        click.echo(str(counts[0]))
    else:
        print_table(
            [{"counter": n, "tokens": c} for n, c in zip(names, counts)], ["counter", "tokens"]
        )


def _count_traces(
    paths: Sequence[str],
    names: Sequence[str],
    counters_: Sequence[Any],
    as_json: bool,
    quiet: bool,
) -> None:
    from ctxbench.cell.traces import open_traces
    from ctxbench.counting.breakdown import Breakdown, breakdown, chars_by_class, classes_of

    def count_one(path: str, trace: Trace) -> tuple[dict[str, Any], dict[str, Breakdown]]:
        segments = classes_of(trace)
        per_counter = {name: breakdown(trace, c, segments) for name, c in zip(names, counters_)}
        result = {
            "file": path,
            "trace_id": trace.id,
            "messages": len(trace.messages),
            "chars_by_class": chars_by_class(segments),
            "counters": {name: b.to_dict() for name, b in per_counter.items()},
        }
        return result, per_counter

    traces = [(path, trace) for path in paths for trace in open_traces(path).traces()]
    bar = terminal_bar("count", quiet=quiet)
    counted = []
    for done, (path, trace) in enumerate(traces, start=1):
        counted.append(count_one(path, trace))
        bar.update(done, len(traces))
    bar.close()
    results = [result for result, _ in counted]
    totals = (
        {name: sum((b[name] for _, b in counted[1:]), counted[0][1][name]) for name in names}
        if counted
        else {}
    )
    if as_json:
        payload: dict[str, Any] = {"traces": results}
        if len(results) > 1:
            payload["all"] = {name: b.to_dict() for name, b in totals.items()}
        click.echo(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    for i, result in enumerate(results):
        if i:
            click.echo()
        click.echo(f"{result['file']}  {result['trace_id']}  ({result['messages']} messages)")
        _print_breakdowns(names, result["counters"])
    if len(results) > 1:
        click.echo()
        click.echo(f"all {len(results)} traces")
        _print_breakdowns(names, {name: b.to_dict() for name, b in totals.items()})


def _print_breakdowns(names: Sequence[str], per_counter: dict[str, dict[str, Any]]) -> None:
    row_keys: list[str] = ["total", "overhead"]
    for section in ("by_role", "by_class"):
        for key in per_counter[names[0]][section]:
            row_keys.append(f"{section.removeprefix('by_')}:{key}")
    row_keys.append("framing")
    rows = []
    for key in row_keys:
        row: dict[str, Any] = {"tokens": key}
        for name in names:
            data = per_counter[name]
            if ":" in key:
                section, _, sub = key.partition(":")
                row[name] = data[f"by_{section}"].get(sub, 0)
            else:
                row[name] = data[key]
        rows.append(row)
    print_table(rows, ["tokens", *names])
