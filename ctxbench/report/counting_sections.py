"""The report's sections about token counting: density by content class and role, decision
drift (estimated vs true state per call) and accuracy against recorded usage. The drift report
of a set of traces is made of these three."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ctxbench.engine.result import RunResult
from ctxbench.report import figures
from ctxbench.report import table as tb
from ctxbench.report.decisions import (
    CallRecord,
    DriftCell,
    Thresholds,
    UsageRatio,
    pooled_drift,
    run_thresholds,
    summarise_ratios,
)
from ctxbench.report.density import Sample, by_content_class, by_role, density_table
from ctxbench.report.page import Block, Chart, Paragraph, Section, TableBlock
from ctxbench.report.results import RunEvents

# -- token counting ----------------------------------------------------------------------------------


def _density_tables(
    samples: Sequence[Sample],
    counters: Sequence[str],
    key: Callable[[Sample], str],
    name: str,
    id_: str,
) -> tb.Table:
    data = density_table(samples, counters, key)
    cols: list[tb.Column] = [tb.Column(name), tb.Column("texts", True), tb.Column("chars", True)]
    for c in counters:
        cols += [
            tb.Column(f"{c} tokens", True),
            tb.Column(f"{c} chars/token", True),
            tb.Column(f"{c} chars/4 ÷ true", True, "below 1: chars/4 undercounts"),
        ]
    rows = []
    for group, per in data.items():
        first = per[counters[0]]
        row = [tb.text(group), tb.count(first.texts), tb.count(first.chars)]
        for c in counters:
            d = per[c]
            row += [
                tb.count(d.tokens),
                tb.number(d.chars_per_token, 2),
                tb.number(d.chars4_ratio, 2),
            ]
        rows.append(row)
    return tb.table(id_, cols, rows, caption=f"By {name}")


def counting_section(
    samples: Sequence[Sample],
    counters: Sequence[str],
    *,
    missing: Sequence[str] = (),
    budget: int | None = None,
) -> Section:
    blocks: list[Block] = [
        Paragraph(
            "Every message's text (content, tool-call names and arguments, no chat framing) "
            "counted by each true counter, grouped by content class and by role. chars/4 ÷ true "
            "is the characters / 4 estimate over the true tokens: below 1 the estimate "
            "undercounts, and a strategy deciding by it compacts too late."
            + (
                f" Each role and content class counts its messages in trace order up to "
                f"{budget:,} characters (`ctxbench drift` counts every message)."
                if budget
                else ""
            )
        )
    ]
    if missing:
        blocks.append(Paragraph("Not measured: " + "; ".join(missing), "note"))
    if not samples or not counters:
        blocks.append(Paragraph("No trace text to count (no trace could be loaded).", "empty"))
        return Section("token-counting", "Token counting by content class", tuple(blocks))
    blocks.append(
        TableBlock(
            _density_tables(samples, counters, by_content_class, "content class", "density-class")
        )
    )
    blocks.append(
        Chart(
            "density-chart",
            figures.density_chart(
                density_table(samples, counters, by_content_class), counters, "dc"
            ),
            "chars/4 estimate over true tokens per content class and counter; the line at 1 is "
            "an exact estimate.",
        )
    )
    blocks.append(TableBlock(_density_tables(samples, counters, by_role, "role", "density-role")))
    return Section("token-counting", "Token counting by content class", tuple(blocks))


# -- decision drift ----------------------------------------------------------------------------------


def drift_rows(cells: Sequence[DriftCell]) -> tb.Table:
    """(estimator, true counter, window, runs, drift) per row; the column 'truth' when some
    calls were judged by recorded usage."""
    with_truth = any(cell.recorded_calls for cell in cells)
    rows = []
    for cell in cells:
        d = cell.drift
        flip = f"{d.flips[0][0]} → {d.flips[0][1]} ({d.flips[0][2]})" if d.flips else "–"
        truth = [tb.text(cell.truth)] if with_truth else []
        rows.append(
            [
                tb.text(cell.estimator),
                tb.text(cell.counter),
                *truth,
                tb.number(cell.window),
                tb.count(cell.runs),
                tb.count(d.calls),
                tb.count(d.differing),
                tb.number(d.differing_share, percent=True),
                tb.count(d.under),
                tb.count(d.over),
                tb.text(flip),
                tb.count(d.overflows),
                tb.count(d.undercount_overflows),
            ]
        )
    truth_column: tuple[tuple[str, bool, str], ...] = (
        (
            "truth",
            False,
            "recorded: the provider's billed prompt tokens; counter: the true counter",
        ),
    )
    return tb.table(
        "decision-drift-table",
        tb.columns(
            tb.Column("estimator", pin=True),
            tb.Column("true counter", pin=True),
            *(truth_column if with_truth else ()),
            tb.Column("window", True, pin=True),
            ("runs", True),
            ("calls", True),
            ("state differs", True, "calls whose estimated state is not the true state"),
            ("share", True),
            ("est. lower", True, "estimate in a lower state: compaction comes late"),
            ("est. higher", True, "estimate in a higher state: compaction comes early"),
            "most common (estimated → true)",
            ("overflows", True, "rejected requests"),
            ("caused by undercount", True, "rejected while the estimate was within the limit"),
        ),
        rows,
        caption="Estimated vs true state per call",
    )


def usage_ratio_rows(ratios: Sequence[UsageRatio]) -> tb.Table:
    """The headline per counter: estimate / recorded over every recorded call."""
    rows = []
    for (counter, _), summary in summarise_ratios(ratios, lambda r: "all").items():
        by_class = summarise_ratios(
            [r for r in ratios if r.counter == counter], lambda r: r.content_class
        )
        classes = ", ".join(f"{cls} {s.median:.3f}" for (_, cls), s in by_class.items())
        rows.append(
            [
                tb.text(counter),
                tb.count(summary.calls),
                tb.number(summary.median),
                tb.number(summary.p10),
                tb.number(summary.p90),
                tb.number(summary.within_3_percent, percent=True),
                tb.text(classes),
            ]
        )
    return tb.table(
        "usage-ratio-table",
        tb.columns(
            "counter",
            ("recorded calls", True),
            ("median estimate ÷ recorded", True),
            ("p10", True),
            ("p90", True),
            ("within 3%", True, "share of calls within 3% of the billed prompt tokens"),
            "median by content class of the added text",
        ),
        rows,
        caption="Each counter against the prompt tokens the provider billed",
    )


def drift_section(
    cells: Sequence[DriftCell], intro: str, ratios: Sequence[UsageRatio] | None = None
) -> Section:
    """``ratios``: estimate / recorded of the traces' recorded calls (the drift report of
    traces; ``None`` for a results directory, whose rows carry no usage)."""
    blocks: list[Block] = [
        Paragraph(
            "A strategy acts on states: DB-GPT's normal, warning (0.70), error (0.90), critical "
            "(0.95) and overflow (1.0) of the limit. For every model call the state by the "
            "estimator's count is compared with the state by the true count (first attempt "
            "of each call, both over the provider limit). Overflows caused by undercounting "
            "are rejected requests whose estimate was within the limit: the strategy had no "
            "reason to compact."
        ),
        Paragraph(intro, "note"),
    ]
    if cells:
        blocks.append(TableBlock(drift_rows(cells)))
        series: dict[str, tuple[list[float], list[float]]] = {}
        for cell in cells:
            xs, ys = series.setdefault(f"{cell.estimator} vs {cell.counter}", ([], []))
            for c in cell.calls:
                if c.attempt == 0 and c.true > 0:
                    xs.append(float(c.true))
                    ys.append(c.estimated / c.true)
        if any(xs for xs, _ in series.values()):
            from ctxbench.report.drift_chart import small_multiples

            blocks.append(
                Chart(
                    "drift-ratio",
                    small_multiples(
                        [(name, xs, ys) for name, (xs, ys) in sorted(series.items()) if xs],
                        xlabel="true tokens of the prompt",
                        ylabel="estimate / true",
                        prefix="dr",
                    ),
                    "One panel per estimator and true counter, on shared axes. Each point is a "
                    "model call (first attempt): the estimator's count of the prompt over the "
                    "true counter's. Below 1 the strategy thinks the prompt is smaller than it "
                    "is (compaction comes late); above 1, early.",
                )
            )
    else:
        blocks.append(Paragraph("No provider calls to compare (no events).", "empty"))
    if ratios:
        from ctxbench.report.drift_chart import usage_ratio_chart

        counters = list(dict.fromkeys(r.counter for r in ratios))
        blocks.append(TableBlock(usage_ratio_rows(ratios)))
        blocks.append(
            Chart(
                "usage-ratio-chart",
                usage_ratio_chart(ratios, counters, "usage-ratio"),
                "Estimate ÷ recorded prompt tokens, per call and by content class",
            )
        )
    elif ratios is not None and cells:
        blocks.append(
            Paragraph(
                "No trace recorded the provider's prompt tokens, so every state above is "
                "judged by the true counter.",
                "note",
            )
        )
    return Section("decision-drift", "Decision drift", tuple(blocks))


def drift_from_events(
    rows: Sequence[RunResult], events: Mapping[str, RunEvents]
) -> list[DriftCell]:
    """Pool every run's calls by (estimator, true counter, window), each run's states by its
    own thresholds."""
    pools: dict[tuple[str, str, int], list[tuple[Sequence[CallRecord], Thresholds]]] = {}
    for r in rows:
        if r.error:
            continue
        key = (r.estimator, r.counter, r.window)
        calls = events.get(r.run_id, RunEvents()).calls
        if not calls:
            continue
        pools.setdefault(key, []).append((calls, run_thresholds(r)))
    return [
        DriftCell(
            e,
            c,
            w,
            len(pools[(e, c, w)]),
            pooled_drift(pools[(e, c, w)]),
            calls=tuple(call for run, _ in pools[(e, c, w)] for call in run),
        )
        for e, c, w in sorted(pools)
    ]


# -- accuracy against recorded usage --------------------------------------------------------------


def accuracy_section(
    results: Sequence[tuple[str, str, str, Any, Sequence[Any]]],
    *,
    traces_with_usage: int,
    calls: int,
) -> Section:
    """``results`` are (recorded model, counter name, role, calibration Accuracy, its
    CallSamples)."""
    blocks: list[Block] = [
        Paragraph(
            "Where traces recorded the provider's prompt tokens, each counter's count of the "
            "same prompt (messages before the call, tool schemas, chat framing) against it: "
            "median and 90th percentile of the absolute relative error, and the mean signed "
            "error (negative: undercount). 'With constant' first removes a per-trace constant "
            "(the median difference: tool schemas or hidden framing the trace did not store), "
            "so it measures how well the counter follows the prompt's growth. Traces are grouped "
            "by the model that recorded them (meta.model): only that model's tokenizer can "
            "match its usage."
        )
    ]
    if not results:
        blocks.append(
            Paragraph(
                "No loaded trace has recorded usage (Message.usage.prompt_tokens), so accuracy "
                "cannot be measured here. Import recorded traces (ctxbench import) to keep it.",
                "empty",
            )
        )
        return Section("usage-accuracy", "Accuracy against provider usage", tuple(blocks))
    blocks.append(Paragraph(f"{calls:,} recorded calls in {traces_with_usage} traces.", "note"))
    if not any(str(name).startswith("profile") for _, name, *_ in results):
        blocks.append(
            Paragraph(
                "No counter here is fitted to this usage. To count as the provider bills, fit "
                "a profile on these traces (ctxbench calibrate TRACES --counter auto "
                "--save-profile p.json) and give --counter profile:p.json to run, sweep or "
                "this report.",
                "note",
            )
        )
    rows = []
    series = []
    for model, name, role, acc, found in results:
        if found:
            series.append(
                (
                    f"{name} ({model})",
                    [float(s.recorded) for s in found],
                    [s.counted / s.recorded for s in found],
                )
            )
        rows.append(
            [
                tb.text(model),
                tb.text(name),
                tb.text(role),
                tb.count(acc.raw.calls),
                tb.number(acc.raw.median_abs_rel_error, percent=True),
                tb.number(acc.raw.p90_abs_rel_error, percent=True),
                tb.number(acc.raw.bias, percent=True),
                tb.number(acc.with_constant.median_abs_rel_error, percent=True),
                tb.number(acc.with_constant.p90_abs_rel_error, percent=True),
            ]
        )
    blocks.append(
        TableBlock(
            tb.table(
                "usage-accuracy-table",
                tb.columns(
                    "recorded model",
                    "counter",
                    "role",
                    ("calls", True),
                    ("median |error|", True),
                    ("p90 |error|", True),
                    ("bias", True),
                    ("median |error| with constant", True),
                    ("p90 |error| with constant", True),
                ),
                rows,
                caption="Counted prompt tokens vs provider-reported prompt tokens",
            )
        )
    )
    if series:
        blocks.append(
            Chart(
                "usage-ratio",
                figures.ratio_chart(
                    "counted / recorded prompt tokens per call",
                    series,
                    xlabel="recorded prompt tokens",
                    ylabel="counted / recorded",
                    prefix="ur",
                ),
                "Each point is a recorded call: a counter's or estimator's count of the prompt "
                "over the prompt tokens the provider reported. 1 is exact; below 1 undercounts.",
            )
        )
    return Section("usage-accuracy", "Accuracy against provider usage", tuple(blocks))


def headline_section(cells: Sequence[DriftCell]) -> Section | None:
    """The drift report's first figures: per window, each estimator's share of calls in
    another state than the true count, and the overflows (rejected requests) of its replays;
    the sentence names the largest share (None: no drift replays)."""
    judged = [c for c in cells if c.drift.calls]
    if not judged:
        return None
    worst = max(judged, key=lambda c: (c.drift.differing_share or 0.0, -c.window))
    share = worst.drift.differing_share or 0.0
    sentence = (
        "No estimator puts a call in another state than the true count at these windows; "
        f"{sum(c.drift.overflows for c in judged):,} requests overflowed in the replays."
        if not share
        else f"{worst.estimator}'s estimate puts {share:.1%} of calls in another state than the "
        f"true count ({worst.counter}) at {worst.window:,} tokens; "
        f"{worst.drift.overflows:,} requests overflowed in its replays, "
        f"{worst.drift.undercount_overflows:,} of them while its estimate was within the limit."
    )
    rows = [
        [
            tb.number(c.window),
            tb.text(c.estimator),
            tb.text(c.counter),
            tb.number(c.drift.differing_share, percent=True),
            tb.count(c.drift.overflows),
            tb.count(c.drift.undercount_overflows),
        ]
        for c in sorted(judged, key=lambda c: (c.window, c.estimator, c.counter))
    ]
    table = tb.table(
        "headline-table",
        tb.columns(
            tb.Column("window", True, pin=True),
            tb.Column("estimator", pin=True),
            "true counter",
            ("calls in another state", True, "share of calls whose estimated state differs"),
            ("overflows", True, "rejected requests in the replays"),
            ("by undercount", True, "rejected while the estimate was within the limit"),
        ),
        rows,
        caption="Per window and estimator",
    )
    return Section("headline", "Headline", (Paragraph(sentence), TableBlock(table)))
