"""The report's sections: each builder turns analysis results into a :class:`Section`.

Builders are pure (no files, no clock): the rows, reduced events and loaded traces come in,
a section of paragraphs, tables and charts goes out. What a section cannot show (no events
file, a trace that could not be loaded, no recorded usage) it says in a sentence instead of
leaving a hole.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ctxbench.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, Interval
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
from ctxbench.report.leaderboard import ConfigKey, Standing, compaction_layers
from ctxbench.report.lost import LostFact
from ctxbench.report.page import (
    Block,
    Bullets,
    Chart,
    Heading,
    Paragraph,
    Section,
    TableBlock,
)
from ctxbench.report.pareto import pareto_front
from ctxbench.report.results import RunEvents
from ctxbench.report.thresholds import ThresholdMap
from ctxbench.report.timeline import TimelineGroup, timeline

Row = RunResult

#: Lost facts listed at most (the most-lost first); the rest are counted.
MAX_LOST_FACTS = 300
#: Rows whose spec is printed at most (~1.5 KB each); every row stays in the results table.
MAX_SPEC_ROWS = 2000
#: Configurations drawn in the by-kind small multiples (the leaderboard's best).
MAX_KIND_CONFIGS = 12


def _window(window: int) -> str:
    return f"{window:,}"


# -- how to read -------------------------------------------------------------------------------------


def how_to_read() -> Section:
    """What the numbers mean and what an offline open-loop replay can and cannot tell."""
    blocks: list[Block] = [
        Paragraph(
            "Each result row is one replay: one recorded or synthetic trace, replayed call by "
            "call through one compaction strategy with one set of parameters, against a "
            "simulated provider that has a context window and a true token counter. The "
            "strategy decides when to compact by its own estimate (often characters / 4); the "
            "provider rejects any prompt whose true count exceeds the window minus the output "
            "reservation, exactly as a real endpoint would."
        ),
        Bullets(
            (
                "Retention: the share of probes (questions about facts in the trace) whose "
                "accepted answer is in the prompt the model would see at the probe's ask point. "
                "Recoverability adds probes whose answer is only in a snapshot or offload file "
                "that the prompt points to.",
                "Input tokens: the true count of every accepted prompt, summed over the run's "
                "calls (what a provider bills as input). Failed calls: calls still over the "
                "window after the strategy's reaction; the real agent would have crashed there. "
                "Overflow errors count every rejected request, retries included.",
                "Leaderboard and charts aggregate over traces: ratios are the mean over traces "
                "(each trace counts once), counts are summed. Configurations drawn hollow in "
                "the Pareto charts had failed calls.",
            )
        ),
        Heading("What an offline open-loop replay can tell"),
        Bullets(
            (
                "When each strategy compacts, by how much, and which layer acted.",
                "How many tokens each call sends, and what that costs with a price table.",
                "Whether a prompt would overflow the real window, and whether the strategy's "
                "token estimate (not the thresholds) is what let it through.",
                "Which facts are still in the prompt at each ask point, and whether tool calls "
                "stay paired with their results after compaction.",
            )
        ),
        Heading("What it cannot tell"),
        Bullets(
            (
                "The recorded assistant turns do not react to compaction. A real model that "
                "lost a fact might re-read a file, ask again or go astray; the replay keeps "
                "following the recording, and keeps going after a call that failed.",
                "Probes are deterministic string checks: an answer present in the prompt counts "
                "as kept even if a model would overlook it, and a fact kept only in paraphrase "
                "(as an LLM summary may write it) counts as lost.",
                "via_reference means recoverable through a file, not seen: the model would "
                "have to open the file the prompt points to.",
                "Summaries come from the configured summarizer (an offline, deterministic one "
                "by default); an LLM summarizer keeps different facts.",
                "The true counter approximates the provider's tokenizer and chat framing; the "
                "accuracy section shows how close it is where traces recorded usage.",
            )
        ),
    ]
    return Section("how-to-read", "How to read this report", tuple(blocks))


# -- leaderboard -------------------------------------------------------------------------------------


def interval_cell(interval: Interval | None, *, whole: bool = False) -> tb.Cell:
    """``[low, high]`` of a bootstrap interval (sorted by its low end); ``-`` when none."""
    if interval is None or not math.isfinite(interval.low):
        return tb.Cell("–")
    if whole:
        return tb.Cell(f"[{interval.low:,.0f}, {interval.high:,.0f}]", interval.low)
    return tb.Cell(f"[{interval.low:.3f}, {interval.high:.3f}]", interval.low)


#: What the interval columns say in their header tooltip.
INTERVAL_HELP = (
    f"{DEFAULT_LEVEL:.0%} bootstrap interval over traces (over probes for a lone trace), "
    f"{DEFAULT_RESAMPLES:,} resamples, seed {DEFAULT_SEED}"
)


def _leaderboard_columns(
    labels: Mapping[ConfigKey, str], kinds: Sequence[str], *, priced: bool
) -> list[tuple[tb.Column, Callable[[Standing], tb.Cell]]]:
    """The leaderboard's columns, what decides first on the left."""

    def cached(s: Standing) -> tb.Cell:
        share = s.cached_input_tokens / s.input_tokens if s.input_tokens else None
        return tb.number(share, percent=True)

    def kind(name: str) -> Callable[[Standing], tb.Cell]:
        return lambda s: tb.number(s.retention_by_kind.get(name))

    columns: list[tuple[tb.Column, Callable[[Standing], tb.Cell]]] = [
        (tb.Column("configuration", wide=True, pin=True), lambda s: tb.text(labels[s.key])),
        (
            tb.Column(
                "failed calls", True, "calls still over the window after the strategy reacted"
            ),
            lambda s: tb.count(s.failed_calls),
        ),
        (
            tb.Column("retention", True, "mean over traces of in_context / probes"),
            lambda s: tb.number(s.retention),
        ),
        (
            tb.Column(f"retention {DEFAULT_LEVEL:.0%} CI", True, INTERVAL_HELP),
            lambda s: interval_cell(s.retention_interval),
        ),
        (
            tb.Column(
                "recoverability", True, "mean over traces of (in_context + via_reference) / probes"
            ),
            lambda s: tb.number(s.recoverability),
        ),
        (
            tb.Column("input tokens / trace", True, "mean over traces of the run's input tokens"),
            lambda s: tb.number(round(s.input_tokens_mean)),
        ),
        (
            tb.Column(f"input tokens {DEFAULT_LEVEL:.0%} CI", True, INTERVAL_HELP),
            lambda s: interval_cell(s.tokens_interval, whole=True),
        ),
    ]
    if priced:
        columns.append(
            (
                tb.Column("cost USD", True, "summed over traces, with the price table"),
                lambda s: tb.money(s.cost_usd),
            )
        )
    columns += [
        (
            tb.Column("overflow errors", True, "rejected requests, retries included"),
            lambda s: tb.count(s.overflow_errors),
        ),
        (tb.Column("summary calls", True), lambda s: tb.count(s.summary_calls)),
        (tb.Column("compactions", True), lambda s: tb.count(s.compactions)),
        (
            tb.Column("pairing violations", True, "tool calls split from their results"),
            lambda s: tb.count(s.pairing_violations),
        ),
        *((tb.Column(f"ret. {k}", True, f"retention of {k} probes"), kind(k)) for k in kinds),
        (
            tb.Column(
                "cached", True, "share of input tokens in a prefix cached from the previous call"
            ),
            cached,
        ),
        (tb.Column("traces", True, "traces replayed without error"), lambda s: tb.count(s.traces)),
        (tb.Column("probes", True), lambda s: tb.count(s.probes)),
        (
            tb.Column("system lost", True, "runs that dropped an original system message"),
            lambda s: tb.count(s.system_lost),
        ),
        (
            tb.Column("errors", True, "cells whose replay raised (excluded from the means)"),
            lambda s: tb.count(s.errors),
        ),
    ]
    return columns


def leaderboard_section(
    board: Mapping[int, Sequence[Standing]], labels: Mapping[ConfigKey, str], *, priced: bool
) -> Section:
    blocks: list[Block] = [
        Paragraph(
            "One table per window, best first: fewest failed calls, then highest mean "
            "retention, then fewest input tokens. A failed call is one the real agent would "
            "have crashed on, so a strategy that never compacts keeps every fact yet ranks "
            "low. Click a header to sort; type in the box to filter."
        )
    ]
    for window, standings in board.items():
        kinds = sorted({k for s in standings for k in s.retention_by_kind})
        spec = _leaderboard_columns(labels, kinds, priced=priced)
        rows = [
            [tb.count(rank)] + [cell(s) for _, cell in spec] for rank, s in enumerate(standings, 1)
        ]
        blocks.append(
            TableBlock(
                tb.table(
                    f"leaderboard-{window}",
                    [tb.Column("#", True, pin=True)] + [column for column, _ in spec],
                    rows,
                    caption=f"Window {_window(window)} tokens",
                )
            )
        )
        if kinds:
            shown = [s for s in standings if s.retention_by_kind][:MAX_KIND_CONFIGS]
            blocks.append(
                Chart(
                    f"kinds-{window}",
                    figures.kind_multiples(
                        f"window {_window(window)}: retention by probe kind",
                        kinds,
                        [(labels[s.key], s.retention_by_kind) for s in shown],
                        f"kd{window}",
                    ),
                    f"Retention by probe kind, window {_window(window)}: the "
                    f"{len(shown)} best configurations of the table above, in its order "
                    "(hover a bar for its value).",
                )
            )
    if not board:
        blocks.append(Paragraph("No result rows.", "empty"))
    return Section("leaderboard", "Leaderboard per window", tuple(blocks))


# -- Pareto ------------------------------------------------------------------------------------------


def pareto_section(
    board: Mapping[int, Sequence[Standing]], labels: Mapping[ConfigKey, str]
) -> Section:
    blocks: list[Block] = [
        Paragraph(
            "Each point is a configuration: mean retention against mean input tokens per "
            "trace, one panel per true counter (different tokenizers count the same prompt "
            "differently, so their tokens are not comparable). The dashed line joins the frontier: configurations that no other one beats "
            "on both axes. Pick from the frontier; everything below it keeps fewer facts for "
            "as many tokens. Hollow points had failed calls: their retention was measured on "
            "prompts the provider rejected, in a run the real agent would not have finished, so "
            "they never join the frontier. Hover a point for its configuration; `none` (never "
            "compacts) sits on its own narrow axis at the right, so its token count does not "
            "squash the others."
        )
    ]
    for window, standings in board.items():
        scored = [s for s in standings if s.retention is not None]
        if not scored:
            blocks.append(
                Paragraph(f"Window {_window(window)}: no configuration had probes.", "empty")
            )
            continue
        panels = []
        frontier_rows = []
        all_failed = []
        for counter in sorted({s.key.counter for s in scored}):
            mine = [s for s in scored if s.key.counter == counter]
            front = frontier(mine)
            all_failed.append(all(s.failed_calls for s in mine))
            panels.append(
                (
                    counter,
                    [
                        figures.ParetoPoint(
                            s.key.strategy,
                            s.input_tokens_mean,
                            s.retention or 0.0,
                            i in front,
                            s.failed_calls > 0,
                            labels[s.key],
                        )
                        for i, s in enumerate(mine)
                    ],
                )
            )
            ordered = sorted(
                (mine[i] for i in front), key=lambda s: (s.input_tokens_mean, -(s.retention or 0))
            )
            frontier_rows += [
                [
                    tb.text(counter),
                    tb.count(n),
                    tb.text(labels[s.key]),
                    tb.number(s.retention),
                    interval_cell(s.retention_interval),
                    tb.number(round(s.input_tokens_mean)),
                    interval_cell(s.tokens_interval, whole=True),
                    tb.count(s.failed_calls),
                ]
                for n, s in enumerate(ordered, 1)
            ]
        caption = f"Window {_window(window)}: {len(scored)} configurations"
        if all(all_failed):
            caption += (
                ", every one with failed calls: no frontier (the window is too small for these "
                "traces, whatever the strategy)."
            )
        else:
            caption += "; the frontier is numbered from the cheapest" + (
                "; panels without one: every configuration had failed calls."
                if any(all_failed)
                else "."
            )
        blocks.append(
            Chart(f"pareto-{window}", figures.pareto_chart(window, panels, f"pf{window}"), caption)
        )
        if frontier_rows:
            blocks.append(
                TableBlock(
                    tb.table(
                        f"frontier-{window}",
                        tb.columns(
                            "true counter",
                            ("#", True),
                            tb.Column("configuration", wide=True),
                            ("retention", True),
                            (f"retention {DEFAULT_LEVEL:.0%} CI", True, INTERVAL_HELP),
                            ("input tokens / trace", True),
                            (f"input tokens {DEFAULT_LEVEL:.0%} CI", True, INTERVAL_HELP),
                            ("failed calls", True),
                        ),
                        frontier_rows,
                        caption=f"Frontier, window {_window(window)}",
                    )
                )
            )
    return Section("pareto", "Pareto: retention vs input tokens", tuple(blocks))


def frontier(standings: Sequence[Standing]) -> set[int]:
    """Indices of the frontier among the configurations without failed calls (none when
    every configuration failed: the window is too small for the traces)."""
    finished = [i for i, s in enumerate(standings) if s.failed_calls == 0]
    found = pareto_front(
        [standings[i].input_tokens_mean for i in finished],
        [standings[i].retention or 0.0 for i in finished],
    )
    return {finished[j] for j in found}


# -- threshold maps ----------------------------------------------------------------------------------


def thresholds_section(maps: Sequence[ThresholdMap]) -> Section:
    blocks: list[Block] = [
        Paragraph(
            "For each strategy whose numeric parameters the sweep varied: mean retention and "
            "failed calls per run over the swept values, per window. Two varied parameters give "
            "heatmaps (the first two, threshold names first); one gives lines."
        )
    ]
    if not maps:
        blocks.append(
            Paragraph(
                "No numeric strategy parameter took more than one value in these results, so "
                "there is no map to draw. Sweep a threshold (a list in the sweep file's params) "
                "to get one.",
                "empty",
            )
        )
    lines: dict[tuple[str, str], list[ThresholdMap]] = {}
    for m in maps:
        if m.y_param is None:
            lines.setdefault((m.strategy, m.x_param), []).append(m)
    for i, ((strategy, param), group) in enumerate(sorted(lines.items())):
        blocks.append(
            Chart(
                f"threshold-lines-{i}",
                figures.threshold_lines(group, f"thl{i}"),
                f"{strategy}: {param}, one line per window; averaged over "
                f"{', '.join(group[0].averaged_over)}; {_runs_per_cell(group)} runs per point.",
            )
        )
    grids = [m for m in maps if m.y_param is not None]
    for i, m in enumerate(grids):
        blocks.append(
            Chart(
                f"threshold-map-{i}",
                figures.threshold_heatmap(m, f"thm{i}"),
                f"{m.strategy}, window {_window(m.window)}: {m.y_param} x {m.x_param}; averaged "
                f"over {', '.join(m.averaged_over)}; {_runs_per_cell([m])} runs per cell.",
            )
        )
    return Section("thresholds", "Threshold maps", tuple(blocks))


def _runs_per_cell(maps: Sequence[ThresholdMap]) -> str:
    runs = sorted({n for m in maps for row in m.runs for n in row if n})
    if not runs:
        return "0"
    return str(runs[0]) if runs[0] == runs[-1] else f"{runs[0]}-{runs[-1]}"


# -- timelines ---------------------------------------------------------------------------------------


def timelines_section(
    groups: Sequence[TimelineGroup],
    events: Mapping[str, RunEvents],
    labels: Mapping[str, str],
    *,
    has_events: bool,
    picked: bool = False,
) -> Section:
    """``picked``: the recommended runs are the recommendation's pick (drawn as
    "recommended"), else the leaderboard's top stands in (drawn as "leaderboard top")."""
    which = (
        "the recommended one (the verdict's pick for that window and true counter)"
        if picked
        else "the top of that window's leaderboard (no recommendation was made)"
    )
    blocks: list[Block] = [
        Paragraph(
            "Usage per model call as a share of the provider limit (window minus reserved): "
            "the true count (solid) and the strategy's estimate (dashed), with ticks under the "
            "axis where a compaction layer acted and crosses where the provider rejected a "
            "prompt. Dotted lines mark the run's own warning and error thresholds (DB-GPT's 0.70 "
            "and 0.90 unless the run set others) and the limit; values above 1.6 are drawn at "
            "1.6."
        ),
        Paragraph(
            "Shown: the traces with the most model calls (up to 3), each at its smallest "
            "window and most used true counter, with the configurations one would deploy: "
            f"{which}, and each strategy at its default knobs. Every run is listed in the specs "
            "section.",
            "note",
        ),
    ]
    if not has_events:
        blocks.append(
            Paragraph("These results have no events file, so there are no timelines.", "empty")
        )
        return Section("timelines", "Per-trace timelines", tuple(blocks))
    shown = []
    for i, group in enumerate(groups):
        roles = group.roles or ("",) * len(group.rows)
        lines = [
            timeline(
                r.run_id,
                f"{labels[r.run_id]} ({role})" if role else labels[r.run_id],
                events.get(r.run_id, RunEvents()),
                run_thresholds(r),
            )
            for r, role in zip(group.rows, roles)
        ]
        title = (
            f"trace {group.trace_id}, window {_window(group.window)}, true counter {group.counter}"
        )
        blocks.append(
            Chart(
                f"timeline-{i}",
                figures.timeline_chart(title, lines, f"tl{i}"),
                f"{title}: runs " + ", ".join(r.run_id for r in group.rows) + ".",
            )
        )
        for r, role in zip(group.rows, roles):
            layers = compaction_layers(r)
            shown.append(
                [
                    tb.text(group.trace_id),
                    tb.number(group.window),
                    tb.text(role),
                    tb.text(labels[r.run_id]),
                    tb.code(r.run_id),
                    tb.count(r.calls),
                    tb.count(r.overflow_errors),
                    tb.count(r.failed_calls),
                    tb.text(", ".join(f"{k} x{v}" for k, v in layers.items()) or "none"),
                ]
            )
    if shown:
        blocks.append(
            TableBlock(
                tb.table(
                    "timeline-runs",
                    tb.columns(
                        "trace",
                        ("window", True),
                        "drawn as",
                        tb.Column("configuration", wide=True),
                        "run id",
                        ("calls", True),
                        ("overflow errors", True),
                        ("failed calls", True),
                        "compactions by layer",
                    ),
                    shown,
                    caption="Runs drawn above",
                )
            )
        )
    else:
        blocks.append(Paragraph("No run finished without error.", "empty"))
    return Section("timelines", "Per-trace timelines", tuple(blocks))


# -- lost facts --------------------------------------------------------------------------------------


def lost_section(
    facts: Sequence[LostFact], *, has_probes: bool, missing_traces: Sequence[str]
) -> Section:
    blocks: list[Block] = [
        Paragraph(
            "Every probe that at least one run lost (or found only in a superseded value), with "
            "where the fact entered the trace (message index and round, 0-based) and which "
            "configurations lost it (runs that lost it / runs that asked it)."
        )
    ]
    if missing_traces:
        blocks.append(
            Paragraph(
                "Questions and evidence are missing for traces that could not be loaded: "
                + "; ".join(missing_traces),
                "note",
            )
        )
    if not has_probes:
        blocks.append(Paragraph("No run scored any probe.", "empty"))
        return Section("lost-facts", "Lost facts", tuple(blocks))
    if not facts:
        blocks.append(Paragraph("No probe was lost by any run.", "empty"))
        return Section("lost-facts", "Lost facts", tuple(blocks))
    rows = []
    for f in facts[:MAX_LOST_FACTS]:
        where = ", ".join(
            f"msg {i}" + (f" (round {r})" if r is not None else "")
            for i, r in zip(f.evidence, f.evidence_rounds)
        )
        rows.append(
            [
                tb.text(f.trace_id),
                tb.code(f.probe_id),
                tb.text(f.kind),
                tb.text(f.question if f.question is not None else "(trace not loaded)"),
                tb.text(" | ".join(f.answers)),
                tb.text(where or "–"),
                tb.text(
                    "end"
                    if f.ask_at is None and f.question is not None
                    else ("–" if f.ask_at is None else f"call {f.ask_at}")
                ),
                tb.Cell(f"{f.lost} of {f.runs}", float(f.lost)),
                tb.count(f.stale),
                _lost_by(f.lost_by),
            ]
        )
    note = (
        f"Showing the {MAX_LOST_FACTS} most-lost of {len(facts)} probes."
        if len(facts) > MAX_LOST_FACTS
        else ""
    )
    blocks.append(
        TableBlock(
            tb.table(
                "lost-facts-table",
                tb.columns(
                    "trace",
                    "probe",
                    "kind",
                    "question",
                    "answers",
                    "introduced",
                    "asked at",
                    ("lost", True),
                    ("stale", True),
                    "lost by",
                ),
                rows,
                caption="Probes lost by at least one run",
                note=note,
            )
        )
    )
    return Section("lost-facts", "Lost facts", tuple(blocks))


def _lost_by(lost_by: Sequence[tuple[str, int, int]]) -> tb.Cell:
    if not lost_by:
        return tb.text("–")
    lines = "\n".join(f"{label} ({n}/{of})" for label, n, of in lost_by)
    if len(lost_by) == 1:
        return tb.text(lines)
    return tb.details(f"{len(lost_by)} configurations", lines)


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
            blocks.append(
                Chart(
                    "drift-ratio",
                    figures.ratio_chart(
                        "estimate / true tokens per call",
                        [(name, xs, ys) for name, (xs, ys) in sorted(series.items()) if xs],
                        xlabel="true tokens of the prompt",
                        ylabel="estimate / true",
                        prefix="dr",
                    ),
                    "Each point is a model call (first attempt): the estimator's count of the "
                    "prompt over the true counter's. Below 1 the strategy thinks the prompt is "
                    "smaller than it is (compaction comes late); above 1, early.",
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


def drift_from_events(rows: Sequence[Row], events: Mapping[str, RunEvents]) -> list[DriftCell]:
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


# -- specs -------------------------------------------------------------------------------------------


def rerun_command(spec: Mapping[str, Any], defaults: Mapping[str, Any] | None) -> str:
    """A ``ctxbench run`` command line that replays the cell (params equal to the strategy's
    defaults are left out: resolving the spec fills them in again, giving the same run id)."""
    source = str(spec.get("trace_source") or "TRACE_FILE")
    args = ["ctxbench", "run", source, "--strategy", str(spec.get("strategy", ""))]
    for name, value in sorted(dict(spec.get("params") or {}).items()):
        if defaults is not None and name in defaults and defaults[name] == value:
            continue
        text = (
            "none"
            if value is None
            else (json.dumps(value) if isinstance(value, (list, dict, bool)) else str(value))
        )
        args += ["--set", f"{name}={text}"]
    args += ["--window", str(spec.get("window")), "--reserved", str(spec.get("reserved"))]
    args += ["--counter", str(spec.get("counter")), "--estimator", str(spec.get("estimator"))]
    args += [
        "--summarizer",
        str(spec.get("summarizer")),
        "--error-style",
        str(spec.get("error_style", "openai")),
    ]
    if spec.get("seed"):
        args += ["--seed", str(spec["seed"])]
    if spec.get("mine_probes"):
        args.append("--mine-probes")
    return " ".join(shlex.quote(a) for a in args)


def specs_section(
    rows: Sequence[Row],
    labels: Mapping[str, str],
    defaults_of: Callable[[str], Mapping[str, Any] | None],
    results_path: str,
) -> Section:
    blocks: list[Block] = [
        Paragraph(
            "Every row with its exact spec. A spec's run_id is the hash of its canonical JSON "
            "and the trace's content hash, so replaying it gives the same row (apart from "
            "replay_seconds). Open a row's spec for two ways to re-run it: from the results "
            "directory, or from the trace file (knobs at their defaults are left out)."
        ),
    ]
    out = []
    for r in rows[:MAX_SPEC_ROWS]:
        try:
            spec = json.loads(r.spec or "{}")
        except json.JSONDecodeError:
            spec = {}
        body = f"ctxbench run --from-row {shlex.quote(results_path)} --run-id {r.run_id}\n"
        if spec:
            body += rerun_command(spec, defaults_of(str(spec.get("strategy", ""))))
        body += "\n\n" + json.dumps(spec, indent=2, sort_keys=True, ensure_ascii=False)
        out.append(
            [
                tb.code(r.run_id),
                tb.text(r.trace_id),
                tb.text(labels.get(r.run_id, r.strategy)),
                tb.number(r.window),
                tb.text(r.counter),
                tb.text(r.estimator),
                tb.number(r.retention),
                tb.text(r.error or ""),
                tb.details(f"spec and re-run commands of {r.run_id}", body.strip()),
            ]
        )
    blocks.append(
        TableBlock(
            tb.table(
                "specs-table",
                tb.columns(
                    tb.Column("run id", pin=True),
                    "trace",
                    tb.Column("configuration", wide=True),
                    ("window", True),
                    "counter",
                    "estimator",
                    ("retention", True),
                    "error",
                    tb.Column("re-run", below=True),
                ),
                out,
                caption=f"All {len(rows):,} rows"
                if len(rows) <= MAX_SPEC_ROWS
                else f"The first {MAX_SPEC_ROWS:,} of {len(rows):,} rows",
                note=""
                if len(rows) <= MAX_SPEC_ROWS
                else "Every row is in the results table; re-run any with --from-row and its run id.",
            )
        )
    )
    return Section("specs", "Specs of every row", tuple(blocks))
