"""``ctxbench run``: replay traces through one strategy and print a result row per trace."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ctxbench import config as configuration
from ctxbench.atomic_file import AtomicFile
from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.cell.traces import open_traces
from ctxbench.cli.answering import answerer_options, answerer_settings, next_action_of
from ctxbench.cli.options import (
    counter_option,
    dir_option,
    file_option,
    json_option,
    quiet_option,
    reasoning_option,
    reserved_option,
    sets_option,
    traces_argument,
)
from ctxbench.cli.output import print_table
from ctxbench.cli.progress import terminal_bar
from ctxbench.cli.sizes import TOKENS
from ctxbench.engine.events import event_line
from ctxbench.engine.provider import ERROR_STYLES
from ctxbench.engine.replay import ReplayOutput
from ctxbench.engine.result import RunResult
from ctxbench.errors import ConfigError
from ctxbench.results import write_files, write_rows
from ctxbench.trace_defaults import describe as describe_taken
from ctxbench.trace_defaults import trace_params

if TYPE_CHECKING:
    from ctxbench.counting.auto import Choice

ROW_COLUMNS = (
    "trace_id",
    "strategy",
    "window",
    "calls",
    "failed_calls",
    "overflow_errors",
    "reactive_retries",
    "compactions",
    "input_tokens_total",
    "peak_ratio",
    "pairing_violations",
    "retention",
    "recoverability",
    "first_failed_call",
    "open_loop_breaks",
)
#: shown beside them when a model was asked (--answerer)
ANSWER_COLUMNS = ("answered_retention", "next_action_agreement")


def strategy_params(strategy: str, config_file: str | None, sets: Sequence[str]) -> dict[str, Any]:
    """Knobs from ``--config`` (the strategy's keys at top level, or the real system's own
    section: :func:`ctxbench.strategies.config_file_params`) overridden by ``--set
    KEY=VALUE``. Both are checked here, so a bad knob names the file (or ``--set``) it came
    from."""
    from ctxbench.strategies import config_file_params, strategy_class

    config_cls = strategy_class(strategy).Config
    params: dict[str, Any] = {}
    if config_file:
        data = configuration.load_toml(config_file)
        params.update(config_file_params(strategy, data, config_file))
        configuration.build(config_cls, params, source=config_file)
    params.update(configuration.parse_set(sets))
    configuration.build(config_cls, params, source="--set")
    return params


@click.command("run")
@traces_argument()
@click.option(
    "--strategy",
    "-s",
    help="Strategy name (see `ctxbench strategies`), a plug-in module:Class, or a plain "
    "module:function compact(messages, budget, **knobs) on OpenAI-style dicts.",
)
@file_option("--config", "config_file", help="TOML file with the strategy's knobs.")
@sets_option()
@click.option(
    "--window",
    "-w",
    type=TOKENS,
    help="The model's context window in true tokens (32k = 32,768), or a model name "
    "(claude-sonnet-4-5, gpt-4o: `ctxbench windows`); default: the window of each trace's "
    "recorded model, where the table has it.",
)
@reserved_option(RunSpec.reserved)
@counter_option(
    default=RunSpec.counter,
    show_default=True,
    help="The provider's TRUE counter (`auto`: picked from each trace's meta.model).",
)
@reasoning_option(
    "the rule each trace's billed usage supports, else the family's of its meta.model"
)
@click.option("--estimator", "-e", default="", help="Override the strategy's own estimator.")
@click.option(
    "--summarizer",
    default=RunSpec.summarizer,
    show_default=True,
    help="Summarizer for strategies that summarise.",
)
@click.option(
    "--summarizer-set",
    "summarizer_sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="A summarizer parameter (repeatable), e.g. --summarizer-set model=gpt-4o-mini.",
)
@click.option(
    "--error-style",
    type=click.Choice(ERROR_STYLES),
    default=RunSpec.error_style,
    show_default=True,
    help="Provider error wording.",
)
@click.option(
    "--seed",
    type=int,
    default=RunSpec.seed,
    show_default=True,
    help="Seed for randomised summarizers.",
)
@file_option("--probes", "probes_file", help="JSONL of {trace_id, probes} for recorded traces.")
@click.option("--mine-probes", is_flag=True, help="Mine probes for traces that have none.")
@file_option("--events", "events_file", help="Write every event as JSON lines.")
@file_option("--out", "out_file", help="Write the rows (.jsonl, .csv or .parquet).")
@dir_option(
    "--files-dir",
    default=None,
    help="Write the snapshot / offload files strategies produce here (one folder per run "
    "id); without it none are written (probes are scored during the replay either way).",
)
@json_option("Print rows as JSON lines.")
@click.option(
    "--from-row",
    "from_row",
    type=click.Path(exists=True),
    help="Re-run one result row: a JSON(L) file of rows, or a sweep results dir (+ --run-id).",
)
@click.option("--run-id", help="Which row of --from-row to re-run.")
@click.option(
    "--losses",
    "show_losses",
    is_flag=True,
    help="After the rows, the loss table of each run: every probe not kept, where it was "
    "stated, the call it was lost at, the missing answer, and each kind's cliff "
    "(as `ctxbench losses`; on stderr with --json).",
)
@quiet_option("No progress bar (one per trace, by model call, on a terminal).")
@answerer_options
def run(
    traces: tuple[str, ...],
    strategy: str | None,
    config_file: str | None,
    sets: tuple[str, ...],
    window: int | None,
    reserved: int,
    counter: str,
    reasoning: str | None,
    estimator: str,
    summarizer: str,
    summarizer_sets: tuple[str, ...],
    error_style: str,
    seed: int,
    probes_file: str | None,
    mine_probes: bool,
    events_file: str | None,
    out_file: str | None,
    files_dir: str | None,
    as_json: bool,
    from_row: str | None,
    run_id: str | None,
    show_losses: bool,
    quiet: bool,
) -> None:
    """Replay TRACES through one compaction strategy against a simulated provider.

    The provider enforces WINDOW - RESERVED with the true COUNTER; the strategy decides with
    its own estimator (or --estimator). Prints one result row per trace.

    \b
    Examples:
      ctxbench run traces.jsonl --strategy dbgpt --window 32768 --counter tiktoken:o200k_base
      ctxbench run t.jsonl -s dbgpt --set warning_threshold=0.6 --set min_keep_recent_rounds=2 -w 16000
      ctxbench run t.jsonl -s dbgpt --config dbgpt.toml -w 32768 --estimator chars4 --events ev.jsonl
      ctxbench run --from-row reports/quickstart --run-id 0a1b2c3d4e5f6a7b --events ev.jsonl
      ctxbench run t.jsonl -s dbgpt -w 16k --answerer qwen2.5:0.5b@http://127.0.0.1:11434/v1 --next-action
      ctxbench run t.jsonl -s sliding_window -w 16k --losses
    """
    if from_row:
        given = configuration.parse_set(summarizer_sets)
        rerun_row(from_row, run_id, events_file, files_dir, as_json, summarizer_params=given)
        return
    if not traces or not strategy:
        raise click.UsageError("give TRACES and --strategy (or --from-row)")
    params = strategy_params(strategy, config_file, sets)
    if out_file and out_file.endswith(".parquet"):  # before the replays, not after
        from ctxbench.extras import require

        require("pyarrow.parquet", what="--out FILE.parquet")
    from ctxbench.summarizers import summarizer_params as typed_params

    summarizer_params = typed_params(
        summarizer, configuration.parse_set(summarizer_sets), source="--summarizer-set"
    )
    external = {}
    if probes_file:
        from ctxbench.probes.probe_file import load_probes

        external = load_probes(probes_file)
    from ctxbench.counting.auto import AUTO

    settings = answerer_settings()
    answerer = None
    if settings is not None:
        from ctxbench.answering.client import Answerer

        answerer = Answerer(settings)
    next_action, every = next_action_of()
    rows: list[dict[str, Any]] = []
    results: list[RunResult] = []
    failures: list[str] = []  # why each run's calls failed, one warning per such run
    unwritten = 0
    parities = []
    tables = []
    with contextlib.ExitStack() as stack:
        events_out = stack.enter_context(AtomicFile(events_file)) if events_file else None
        auto_choices: dict[str, Choice] = {}
        noted: set[str] = set()
        for path in traces:
            source = open_traces(path)
            for trace in source.traces():
                if trace.id in external:
                    trace = dataclasses.replace(trace, probes=external[trace.id])
                true_counter = (
                    _auto_counter(trace, auto_choices, reasoning) if counter == AUTO else counter
                )
                if not quiet and not reasoning:
                    _say_billing(trace, true_counter, noted)
                given, taken = trace_params(trace.meta, strategy, params)
                if taken and not quiet:
                    click.echo(f"{strategy}: {describe_taken(taken, trace.id)}", err=True)
                spec = resolve_spec(
                    RunSpec(
                        trace_id=trace.id,
                        trace_hash=trace.content_hash,
                        strategy=strategy,
                        params=given,
                        window=window if window is not None else _trace_window(trace, quiet),
                        reserved=reserved,
                        counter=true_counter,
                        reasoning=reasoning or RunSpec.reasoning,
                        estimator=estimator,
                        summarizer=summarizer,
                        summarizer_params=summarizer_params,
                        error_style=error_style,
                        seed=seed,
                        mine_probes=mine_probes,
                        trace_source=str(path) if source.canonical else source.address,
                        answerer=settings.model if settings else "",
                        next_action=next_action,
                        next_action_every=every if next_action else 0,
                    )
                )
                bar = terminal_bar(f"run {trace.id}", quiet=quiet)
                asking = terminal_bar(f"ask {trace.id}", quiet=quiet)
                output = run_spec(
                    spec,
                    trace,
                    on_call=bar.update,
                    answerer=answerer,
                    on_ask=asking.update,
                    keep_files="none" if files_dir is None else "all",
                )
                bar.close()
                asking.close()
                row, missed = _emit(output, spec.run_id, events_out, files_dir, as_json)
                rows.append(row)
                results.append(output.result)
                failures.append(_failure_line(strategy, output))
                if show_losses:
                    from ctxbench.gate.loss_table import run_losses

                    label = f"{strategy} w={spec.window}"
                    tables.append(
                        run_losses(
                            output.events, trace, run_id=spec.run_id, trace_id=trace.id, label=label
                        )
                    )
                unwritten += missed
                if trace.recorded_compactions:
                    from ctxbench.recorded import compare_recorded

                    parities.append(compare_recorded(trace, output.events, strategy=strategy))
    if out_file:
        write_rows(out_file, rows)
    if not as_json:
        print_table(rows, ROW_COLUMNS + (ANSWER_COLUMNS if answerer else ()))
    if tables:
        from ctxbench.gate.loss_table import render as render_losses

        click.echo("\n" + render_losses(tables), nl=False, err=as_json)
    if answerer is not None:
        click.echo(f"answerer {settings.model}: {answerer.meter.describe()}", err=True)
    _note_unwritten(unwritten)
    _warn_pairing(results)
    for line in filter(None, failures):
        click.echo(f"warning: {line}", err=True)
    if parities:  # recorded compactions next to the strategy's own (stderr under --json)
        from ctxbench.recorded import render

        click.echo(render(parities), err=as_json)


def _failure_line(strategy: str, output: ReplayOutput) -> str:
    """Why the replay's calls failed ("" when none did), with the strategy's hint."""
    from ctxbench.results.failures import failure_story
    from ctxbench.strategies import strategy_class

    result = output.result
    if not result.failed_calls:
        return ""
    story = failure_story(result.calls, output.events)
    return story.describe(result.trace_id, strategy_class(strategy).failure_hints)


def _warn_pairing(results: list[RunResult]) -> None:
    """A warning per run whose compactions split tool calls from their results: a provider
    rejects such a prompt, whatever the run's retention says."""
    for result in results:
        broken = result.pairing_violations
        if broken:
            click.echo(
                f"warning: {result.trace_id}: the strategy split tool calls from their results "
                f"({broken} pairing violations over {result.calls} calls): a provider "
                "rejects such prompts; keep every call with its results (ctxbench.rounds)",
                err=True,
            )


def _emit(
    output: ReplayOutput,
    run_id: str,
    events: AtomicFile | None,
    files_dir: str | None,
    as_json: bool,
) -> tuple[dict[str, Any], int]:
    """Write one replay's files (only with --files-dir) and events (echo its row as JSON
    when asked); its row, and how many of its files were left unwritten."""
    missed = keep_files(output, files_dir, run_id)
    if events is not None:
        events.write("".join(event_line(e, run_id=run_id) + "\n" for e in output.events))
    row = output.result.to_row()
    if as_json:
        click.echo(json.dumps(row, ensure_ascii=False))
    return row, missed


def keep_files(output: ReplayOutput, files_dir: str | None, run_id: str) -> int:
    """Write a replay's files under ``files_dir``/RUN_ID when given; returns how many were
    left unwritten (``run`` writes files only where told: without ``files_dir`` the replay
    kept most by path and hash alone, ``output.written``)."""
    if files_dir is None:
        return len(output.files.keys() | output.written.keys())
    if output.files:
        write_files(Path(files_dir) / run_id, output.files)
    return 0


def _note_unwritten(count: int) -> None:
    if count:
        click.echo(
            f"note: {count} snapshot / offload file(s) not written; add --files-dir DIR to keep them",
            err=True,
        )


def _say_billing(trace: Any, counter: str, noted: set[str]) -> None:
    """Where the trace records billed usage: the reasoning rule it supports (when it tells
    the rules apart) and, once per model, how far the counter is from it and how to fit a
    profile (nothing for a profile or a framework estimator)."""
    from ctxbench.counting.auto import billed_for, trace_model

    model = trace_model(trace) or ""
    billed = billed_for(trace, model, counter)
    if billed is None or not billed.fits:
        return
    if billed.from_usage:
        click.echo(f"reasoning: trace {trace.id}: {billed.describe()}", err=True)
    distance = billed.distance(counter)
    if distance and model not in noted:
        noted.add(model)
        click.echo(f"note: {distance}", err=True)


def _trace_window(trace: Any, quiet: bool) -> int:
    """No --window: the documented window of the trace's recorded model (said on stderr)."""
    from ctxbench.counting.auto import trace_model
    from ctxbench.windows import model_window

    model = trace_model(trace)
    found = model_window(model)
    if found is None:
        raise click.UsageError(
            f"give --window: trace {trace.id} records "
            + (f"model {model!r}, which" if model else "no model, so")
            + " the window table (`ctxbench windows`) cannot give its window"
        )
    if not quiet:
        click.echo(
            f"window: {found.window:,} for trace {trace.id}, the documented window of its "
            f"model {found.model} (`ctxbench windows` gives the source)",
            err=True,
        )
    return found.window


def _auto_counter(trace: Any, seen: dict[str, Choice], reasoning: str | None) -> str:
    """``--counter auto``: the counter of the trace's recorded model, and the reasoning rule
    the replay counts under (said once per model; a warning when the run pools models)."""
    from ctxbench.counting.auto import call_models, choose, pooling_warning, trace_model

    model = trace_model(trace) or ""
    mixed = call_models(trace)
    if len(mixed) > 1:
        click.echo(
            f"warning: trace {trace.id} mixes models by call ({', '.join(mixed)}); its replay "
            f"counts every call with the counter of its meta.model ({model or 'none'}); "
            "calibrate --by-model measures each",
            err=True,
        )
    if model not in seen:
        choice = choose(model)
        seen[model] = choice
        click.echo(f"auto: {choice.describe(reasoning or '', '--reasoning')}", err=True)
        warning = pooling_warning(seen) if len(seen) == 2 else None
        if warning:
            click.echo(f"warning: {warning}", err=True)
    return seen[model].counter


def rerun_row(
    source: str,
    run_id: str | None,
    events_file: str | None,
    files_dir: str | None,
    as_json: bool,
    *,
    summarizer_params: Mapping[str, Any] | None = None,
) -> None:
    """Re-run the cell a result row describes (its ``spec`` column) and compare the rows.

    The row is data: its plug-ins are not imported (registry.py), and a summarizer endpoint it
    names is not called: summaries come from the cache only, unless the command line gives
    the endpoint and the key variable (``--summarizer-set base_url=... api_key_env=...``).
    Exits 1 when a metric differs from the recorded row (timing columns aside)."""
    from ctxbench.cell.traces import load_trace
    from ctxbench.engine.result import TIMING_COLUMNS
    from ctxbench.results import read_result, spec_of_row
    from ctxbench.summarizers.openai_compat import ENDPOINT_KEYS, cached_only

    row = read_result(source, run_id)
    spec = spec_of_row(row)
    given = dict(summarizer_params or {})
    live = set(ENDPOINT_KEYS) <= given.keys()
    if given:
        from ctxbench.summarizers import summarizer_params as typed_params

        typed = typed_params(spec.summarizer, given, source="--summarizer-set")
        spec = spec.with_(summarizer_params={**spec.summarizer_params, **typed})
    prices = recorded_prices(source, spec.counter)
    trace = load_trace(spec.trace_source, spec.trace_id, spec.trace_hash)
    answerer = _rerun_answerer(spec.answerer, source) if spec.answerer else None
    with contextlib.nullcontext(None) if live else cached_only() as offline:
        output = run_spec(
            spec,
            trace,
            prices=prices,
            answerer=answerer,
            keep_files="none" if files_dir is None else "all",
        )
    if offline is not None and offline.refused:
        raise ConfigError(
            f"the row's summarizer calls {offline.refused[0]}, named by the row; "
            f"{len(offline.refused)} summaries are not in the cache, and ctxbench does not "
            "send an API key to an address a file chose",
            path=source,
            key="summarizer_params",
            hint="to call it, give the endpoint and the key variable on the command line: "
            "--summarizer-set base_url=URL --summarizer-set api_key_env=VARIABLE",
        )
    with contextlib.ExitStack() as stack:
        events_out = stack.enter_context(AtomicFile(events_file)) if events_file else None
        new, missed = _emit(output, spec.run_id, events_out, files_dir, as_json)
    _note_unwritten(missed)
    if not as_json:
        print_table([new], ROW_COLUMNS)
    if spec.plugin:
        from ctxbench.cell.runner import plugins_of

        now = plugins_of(spec)
        if now != spec.plugin:
            click.echo(
                f"note: the plug-in's code changed since this row was recorded ({spec.plugin} "
                f"-> {now}): a difference may come from that",
                err=True,
            )
    recorded = row.to_row()
    differ = [k for k in new if k not in TIMING_COLUMNS and recorded[k] != new[k]]
    if differ:
        click.echo(
            f"run {spec.run_id} differs from the recorded row in: {', '.join(differ)}", err=True
        )
        raise click.exceptions.Exit(1)
    click.echo(f"run {spec.run_id} reproduces the recorded row", err=True)


def _rerun_answerer(model: str, source: str) -> Any:
    """The answerer of a re-run row: the command line's (``--answerer``, the same model), or
    the cache alone (the row names a model, never where it is served)."""
    from ctxbench.answering.client import Answerer, AnswererSettings

    settings = answerer_settings()
    if settings is None:
        return Answerer(AnswererSettings(model=model, offline=True))
    if settings.model != model:
        raise ConfigError(
            f"the row asked the model {model!r}, not {settings.model!r}",
            path=source,
            key="spec.answerer",
            hint=f"give --answerer {model}@URL, or no --answerer to answer from the cache",
        )
    return Answerer(settings)


def recorded_prices(source: str, counter: str) -> Any:
    """The prices ``sweep.json`` recorded for ``counter`` (None when it holds none); a value
    that is not a table is an error naming its key."""
    from ctxbench.engine.result import Prices
    from ctxbench.results import ResultsDir
    from ctxbench.results.layout import SPEC_FILE

    path = Path(source) / SPEC_FILE
    if not Path(source).is_dir() or not path.exists():
        return None
    recorded = ResultsDir(source).spec().get("spec")
    table: Any = recorded
    for key in ("prices", counter):  # spec.prices.COUNTER: tables, or absent
        table = table.get(key) if isinstance(table, Mapping) else None
        if table is None:
            return None
        if not isinstance(table, Mapping):
            raise ConfigError(
                f"expected a table, got {table!r}"[:200],
                path=path,
                key="spec.prices" + ("" if key == "prices" else f".{counter}"),
                hint="the sweep file was edited: restore it, or remove spec.prices",
            )
    return configuration.build(Prices, table, source=str(path))
