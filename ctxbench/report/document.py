"""The two pages ctxbench writes: the report of a results directory, and the drift report of
a set of traces. Pure: results, traces and counters come in, a :class:`Page` goes out;
:mod:`ctxbench.report.write` does the reading and writing around it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxbench.counting.base import TokenCounter
from ctxbench.engine.result import RunResult
from ctxbench.report import counting_sections, run_sections, sections
from ctxbench.report.decisions import CallRecord, DriftCell, usage_ratios
from ctxbench.report.density import measure
from ctxbench.report.leaderboard import ConfigKey, config_labels, leaderboard
from ctxbench.report.lost import lost_facts
from ctxbench.report.page import Block, Bullets, Page, Paragraph, Section
from ctxbench.report.prices import PriceTable
from ctxbench.report.reproduction import PairParity, reproduction_section
from ctxbench.report.results import Results
from ctxbench.report.summaries import summaries_section
from ctxbench.report.thresholds import threshold_maps
from ctxbench.report.timeline import pick_timelines
from ctxbench.trace import Trace

Row = RunResult
Classify = Callable[[str], str]
#: Characters per (role, content class) the report's token-counting tables count (the drift
#: report counts everything): the ratios settle well before, and the report stays quick.
DENSITY_BUDGET = 400_000


def _version() -> str:
    from ctxbench.version import __version__

    return __version__


def has_usage(trace: Trace) -> bool:
    return any(m.usage is not None and m.usage.prompt_tokens for m in trace.messages)


def recorded_model(trace: Trace) -> str:
    """The model a trace was recorded with (``meta.model``), for grouping accuracy."""
    model = trace.meta.get("model")
    return str(model) if model else "(model not recorded)"


def accuracy_results(
    traces: Sequence[Trace], counters: Sequence[TokenCounter], baselines: Sequence[TokenCounter]
) -> tuple[list[tuple[str, str, str, Any, list[Any]]], int, int]:
    """Per recorded model, each counter's (and each baseline estimator's) accuracy on the
    recorded calls: ``([(model, counter name, role, Accuracy)], traces with usage, calls)``.
    Models are kept apart: a tokenizer can only match the model it belongs to."""
    from ctxbench.calibration import Accuracy, samples

    recorded = [t for t in traces if has_usage(t)]
    by_model: dict[str, list[Trace]] = {}
    for trace in recorded:
        by_model.setdefault(recorded_model(trace), []).append(trace)
    measured = [
        (c, "true counter (fitted to usage, not exact)" if c.kind == "fitted" else "true counter")
        for c in counters
    ] + [(b, "estimator") for b in baselines if b.name not in {c.name for c in counters}]
    out: list[tuple[str, str, str, Any, list[Any]]] = []
    for model, group in sorted(by_model.items()):
        for counter, role in measured:
            found = [s for t in group for s in samples(t, counter)]
            out.append((model, counter.name, role, Accuracy.of(counter.name, found), found))
    calls = sum(
        1
        for t in recorded
        for m in t.messages
        if m.role == "assistant" and m.usage is not None and m.usage.prompt_tokens
    )
    return out, len(recorded), calls


@dataclass(frozen=True)
class ReportInputs:
    """Everything the results report is made from (loaded by the edge)."""

    results: Results
    traces: Mapping[str, Trace]
    missing_traces: tuple[str, ...]
    counters: tuple[TokenCounter, ...]
    missing_counters: tuple[str, ...]
    baselines: tuple[TokenCounter, ...]
    classify: Classify
    prices: PriceTable | None = None
    title: str = ""
    #: The section shown as the verdict strip above everything (the recommendation of
    #: :mod:`ctxbench.decisions`, which sits above the report in the layers, so it is handed in
    #: rather than imported).
    lead: Callable[[Results], Section] | None = None
    #: The config to deploy per (window, true counter), by the same recommendation (handed in
    #: like ``lead``): the timelines draw it. None: the leaderboard's top stands in.
    picks: Callable[[Results], Mapping[tuple[int, str], ConfigKey]] | None = None
    #: reproduction / release pairs compared call by call (none: no section)
    release_parity: tuple[PairParity, ...] = ()


def _cost_function(inputs: ReportInputs) -> Callable[[Row], float | None] | None:
    prices = inputs.prices
    if prices is None:
        return None

    def cost(row: Row) -> float | None:
        events = inputs.results.run_events(row.run_id)
        if events.summary_input_tokens or events.summary_output_tokens:
            summary_in, summary_out = events.summary_input_tokens, events.summary_output_tokens
        else:
            summary_in, summary_out = row.summary_tokens, 0
        return prices.cost(
            row.counter,
            row.input_tokens_total,
            row.cached_input_tokens,
            summary_in,
            summary_out,
        )

    return cost


def _cost_section(
    rows: Sequence[Row],
    results: Results,
    traces: Mapping[str, Trace],
    run_labels: Mapping[str, str],
) -> Section:
    """The cost section (:mod:`ctxbench.report.cost_section`); a row's cost without compaction
    is its ``none`` counterpart's in the same results (same trace, counter, window, reserve)."""
    from ctxbench.report.cost_section import cost_section
    from ctxbench.strategies import BASELINE

    nones = {
        (r.trace_id, r.counter, r.window, r.reserved): r
        for r in rows
        if r.strategy == BASELINE and not r.error
    }

    def baseline(row: Row) -> Any:
        none = nones.get((row.trace_id, row.counter, row.window, row.reserved))
        if none is None:
            return None
        return results.run_events(none.run_id).tokens, none.failed_calls

    return cost_section(
        rows, results.events, traces, run_labels, baseline, has_events=results.has_events
    )


def _strategy_defaults(strategy: str) -> Mapping[str, Any] | None:
    from ctxbench import config as configuration
    from ctxbench.errors import CtxbenchError
    from ctxbench.strategies import strategy_class

    try:
        return configuration.to_params(strategy_class(strategy).Config())
    except (CtxbenchError, TypeError):
        return None


def _at_defaults(row: Row) -> bool:
    """Whether a row's strategy ran with every knob at its default."""
    defaults = _strategy_defaults(row.strategy)
    return defaults is not None and ConfigKey.of_result(row).param_values == json.loads(
        json.dumps(dict(defaults), sort_keys=True, default=str)
    )


#: How the timelines name the recommended run: the recommendation's pick, or its stand-in.
PICKED, TOP = "recommended", "leaderboard top"


def _recommended(
    board: Mapping[int, Sequence[Any]], picks: Mapping[tuple[int, str], ConfigKey] | None
) -> Callable[[int, str], Callable[[Row], bool] | None]:
    """The recommended configuration at a window and true counter: the recommendation's pick
    when one was handed in (none there: no config qualified), else the leaderboard's top
    (fewest failed calls, then retention, then tokens)."""

    def at(window: int, counter: str) -> Callable[[Row], bool] | None:
        if picks is not None:
            best = picks.get((window, counter))
        else:
            best = next((s.key for s in board.get(window, ()) if s.key.counter == counter), None)
        return None if best is None else (lambda row: ConfigKey.of_result(row) == best)

    return at


def _answered(rows: Sequence[Row], results: Results, labels: Mapping[str, str]) -> list[Section]:
    """The "presence vs answers" section when a model answered probes (``--answerer``)."""
    from ctxbench.report.answered import answered_section, calibrations

    found = calibrations(rows, lambda run_id: results.run_events(run_id).answers, labels)
    section = answered_section(found)
    return [] if section is None else [section]


def report_page(inputs: ReportInputs) -> Page:
    """The results report: every section, in reading order."""
    results = inputs.results
    rows = list(results.rows)
    keys = {r.run_id: ConfigKey.of_result(r) for r in rows}
    labels = config_labels(keys.values())
    run_labels = {run_id: labels[key] for run_id, key in keys.items()}
    cost_of = _cost_function(inputs)
    board = leaderboard(rows, cost_of)
    picks = None if inputs.picks is None else inputs.picks(results)
    priced = inputs.prices is not None or any(r.cost_usd is not None for r in rows)

    outcomes = [
        (r.trace_id, f"{run_labels[r.run_id]} @{r.window:,}", o)
        for r in rows
        for o in results.run_events(r.run_id).probes
    ]
    loaded = [inputs.traces[t] for t in sorted(inputs.traces)]
    samples = measure(loaded, inputs.counters, inputs.classify, budget=DENSITY_BUDGET)
    accuracy, n_traces, n_calls = accuracy_results(loaded, inputs.counters, inputs.baselines)

    page_sections: list[Section] = [
        sections.how_to_read(),
        sections.leaderboard_section(board, labels, priced=priced),
        *filter(None, [summaries_section(rows, labels)]),
        sections.pareto_section(board, labels),
        sections.thresholds_section(threshold_maps(rows)),
        _cost_section(rows, results, inputs.traces, run_labels),
        run_sections.timelines_section(
            pick_timelines(
                rows,
                recommended=_recommended(board, picks),
                role=TOP if picks is None else PICKED,
                is_default=_at_defaults,
            ),
            results.events,
            run_labels,
            has_events=results.has_events,
            picked=picks is not None,
        ),
        *([reproduction_section(inputs.release_parity)] if inputs.release_parity else []),
        run_sections.lost_section(
            lost_facts(outcomes, inputs.traces),
            has_probes=bool(outcomes),
            missing_traces=inputs.missing_traces,
        ),
        run_sections.cliff_section(rows, run_labels),
        *_answered(rows, results, run_labels),
        counting_sections.counting_section(
            samples,
            [c.name for c in inputs.counters],
            missing=inputs.missing_counters,
            budget=DENSITY_BUDGET,
        ),
        counting_sections.drift_section(
            counting_sections.drift_from_events(rows, results.events),
            "Pooled over every run of these results, by the estimator the strategy decided "
            "with and the provider's true counter; the prompts are the strategies' own.",
        ),
        counting_sections.accuracy_section(accuracy, traces_with_usage=n_traces, calls=n_calls),
        run_sections.specs_section(rows, run_labels, _strategy_defaults, str(results.path)),
    ]
    errors = sum(1 for r in rows if r.error)
    facts = (
        ("runs", f"{len(rows):,}"),
        ("traces", f"{len({r.trace_id for r in rows}):,}"),
        ("configurations", f"{len(labels):,}"),
        ("windows", ", ".join(f"{w:,}" for w in sorted({r.window for r in rows}))),
        ("true counters", ", ".join(sorted({r.counter for r in rows}))),
        ("probes scored", f"{len(outcomes):,}"),
        ("cells that raised", f"{errors:,}"),
    )
    name = str(results.sweep.get("name") or "") if results.sweep else ""
    title = inputs.title or (f"ctxbench report: {name}" if name else "ctxbench report")
    return Page(
        title=title,
        subtitle=f"Results {results.path} · offline open-loop replay · ctxbench {_version()}",
        facts=facts,
        sections=tuple(page_sections),
        generator=f"ctxbench {_version()}",
        verdict=verdict_blocks(inputs),
    )


def verdict_blocks(inputs: ReportInputs) -> tuple[Block, ...]:
    """The strip at the top of the report: the blocks of the ``lead`` section the caller hands
    in (the command line passes :class:`ctxbench.decisions.verdict.Verdict`'s). None
    handed in: no strip."""
    return () if inputs.lead is None else inputs.lead(inputs.results).blocks


def drift_page(
    traces: Sequence[Trace],
    counters: Sequence[TokenCounter],
    baselines: Sequence[TokenCounter],
    drift: Sequence[DriftCell],
    classify: Classify,
    *,
    sources: Sequence[str],
    reserved: int,
    title: str = "",
) -> Page:
    """The token-counting report of traces: density, decision drift by replay, accuracy."""
    samples = measure(traces, counters, classify)
    accuracy, n_traces, n_calls = accuracy_results(traces, counters, baselines)
    headline = counting_sections.headline_section(drift)
    intro = Section(
        "how-to-read",
        "How to read this report",
        (
            Paragraph(
                "How far token estimates drift from real tokenizers on these traces, and where "
                "that drift changes a compaction decision. Counts are offline: true counters are "
                "vendored tokenizers with their chat framing; estimators are the rules agent "
                "frameworks use to decide when to compact."
            ),
            Bullets(
                (
                    "Token counting: characters per token and the chars/4 estimate over true "
                    "tokens, by content class and by role.",
                    "Decision drift: each trace is replayed without compaction (strategy none), "
                    "and at every model call the state by each estimator is compared with the "
                    "state by each true counter (DB-GPT's thresholds over window − reserved "
                    f"= window − {reserved:,}).",
                    "Accuracy: where traces recorded the provider's prompt tokens, how close each "
                    "counter comes.",
                )
            ),
            Paragraph("Traces: " + "; ".join(sources), "note"),
        ),
    )
    return Page(
        title=title or "ctxbench drift report",
        subtitle=(
            f"{len(traces):,} traces · counters {', '.join(c.name for c in counters)} · "
            f"ctxbench {_version()}"
        ),
        facts=(
            ("traces", f"{len(traces):,}"),
            ("messages", f"{sum(len(t.messages) for t in traces):,}"),
            ("model calls", f"{sum(len(t.call_indices) for t in traces):,}"),
            ("calls with recorded usage", f"{n_calls:,}"),
        ),
        sections=(
            *([headline] if headline is not None else []),
            intro,
            counting_sections.counting_section(samples, [c.name for c in counters]),
            counting_sections.drift_section(
                drift,
                "Replays with strategy none (the prompt is the whole history), one per trace, "
                "window, true counter and estimator. Calls with recorded usage are judged by the "
                "provider's recorded prompt tokens; the true counter stands in only for calls "
                "without usage (column 'truth').",
                usage_ratios(traces, [*counters, *baselines], classify),
            ),
            counting_sections.accuracy_section(accuracy, traces_with_usage=n_traces, calls=n_calls),
        ),
        generator=f"ctxbench {_version()}",
    )


def replay_drift(
    traces: Sequence[Trace],
    counters: Sequence[str],
    estimators: Sequence[str],
    windows: Sequence[int],
    reserved: int,
    *,
    sources: Mapping[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[DriftCell]:
    """Replay every trace with strategy ``none`` for each window x counter x estimator, and
    compare estimated and true states call by call (pooled over traces). The true state is
    the provider's recorded prompt tokens where the trace has them, else the true counter's;
    ``progress(done, total)`` hears of every replay."""
    from ctxbench.cell.runner import resolve_spec, run_spec
    from ctxbench.cell.spec import RunSpec
    from ctxbench.report.decisions import decision_drift, recorded_prompts, with_recorded_truth
    from ctxbench.report.results import digest_events
    from ctxbench.strategies import BASELINE

    # Probes play no part in drift: scoring them would only cost time.
    bare = [dataclasses.replace(t, probes=()) for t in traces]
    billed = {t.id: recorded_prompts(t) for t in bare}
    cells = []
    total, done = len(estimators) * len(counters) * len(windows) * len(bare), 0
    for estimator in estimators:
        for counter in counters:
            for window in windows:
                calls: list[CallRecord] = []
                recorded_calls = 0
                for trace in bare:
                    spec = resolve_spec(
                        RunSpec(
                            trace_id=trace.id,
                            trace_hash=trace.content_hash,
                            strategy=BASELINE,
                            window=window,
                            reserved=reserved,
                            counter=counter,
                            estimator=estimator,
                            trace_source=(sources or {}).get(trace.id, ""),
                        )
                    )
                    output = run_spec(spec, trace)
                    digest = digest_events(("", e) for e in output.events)
                    judged, used = with_recorded_truth(
                        (c for d in digest.values() for c in d.calls), billed[trace.id]
                    )
                    calls.extend(judged)
                    recorded_calls += used
                    done += 1
                    if progress is not None:
                        progress(done, total)
                cells.append(
                    DriftCell(
                        estimator,
                        counter,
                        window,
                        len(traces),
                        decision_drift(calls),
                        recorded_calls,
                        tuple(calls),
                    )
                )
    return cells
