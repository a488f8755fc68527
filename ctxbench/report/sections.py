"""The report's sections that compare configurations: how to read the report, the leaderboard,
the Pareto charts and the threshold maps. :mod:`ctxbench.report.run_sections` shows single
runs, :mod:`ctxbench.report.counting_sections` token counting.

Builders are pure (no files, no clock): the rows, reduced events and loaded traces come in,
a section of paragraphs, tables and charts goes out. What a section cannot show (no events
file, a trace that could not be loaded, no recorded usage) it says in a sentence instead of
leaving a hole.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from ctxbench.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, Interval
from ctxbench.report import figures
from ctxbench.report import table as tb
from ctxbench.report.leaderboard import ConfigKey, Standing
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
from ctxbench.report.thresholds import ThresholdMap

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
                "that the prompt points to. On recorded traces most probes are needed facts: "
                "values the agent wrote in a later action after learning them from the user or "
                "a tool, asked at the call that used them.",
                "A failed call ends the agent's task (the real agent crashed there): every probe "
                "asked at or after it is lost (after_failure), so a configuration that crashes "
                "early cannot show a high retention. Interactive sessions (Claude Code, Codex) "
                "restart at the next user task.",
                "Open-loop breaks: recorded actions that wrote a value the prompt no longer "
                "showed. From the first one on, the recorded run could not have happened as "
                "recorded, and what follows is the recording's path, not the agent's.",
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
                "following the recording (open-loop breaks count where that happened), and "
                "scores nothing as kept after a call that failed.",
                "Probes are deterministic string checks: an answer present in the prompt counts "
                "as kept even if a model would overlook it (an answer kept only as a bare list "
                "item is counted and flagged bare); a path counts as absolute or relative, a "
                "command without its cd and redirections, an error with or without its class; "
                "a fact kept only in paraphrase (as an LLM summary may write it) counts as "
                "lost.",
                "via_reference means recoverable through a file, not seen: the model would "
                "have to open the file the prompt points to.",
                "Summaries come from the configured summarizer (an offline, deterministic one "
                "by default; the Summaries section names it per configuration); an LLM "
                "summarizer keeps different facts, and extractive, the verbatim upper bound, "
                "keeps far more than a model writes.",
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
        (
            tb.Column(
                "lost after crash",
                True,
                "probes asked at or after a failed call: lost, since the real agent crashed",
            ),
            lambda s: tb.count(s.after_failure),
        ),
        (
            tb.Column(
                "open-loop breaks",
                True,
                "recorded actions that wrote a value the prompt no longer showed",
            ),
            lambda s: tb.count(s.open_loop_breaks),
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
            "have crashed on: probes asked from there on are lost (lost after crash), so a "
            "strategy that never compacts cannot keep every fact by crashing. Click a header "
            "to sort; type in the box to filter."
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
