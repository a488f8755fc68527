"""The report's charts, drawn as inline SVG by :mod:`ctxbench.report.svg`.

SVG keeps charts crisp at any zoom and adds no request; every ``id`` is prefixed per chart
so that several charts in one page never share a clip path, and every label is escaped text
(the page inlines the SVG as trusted markup, see :data:`ctxbench.report.svg.ACTIVE`). Dense
series are thinned before drawing (:mod:`ctxbench.report.downsample`), so a chart of a
10,000-call run is no bigger than one of 400 calls. The same data gives the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxbench.report import svg
from ctxbench.report.downsample import lttb, stride
from ctxbench.report.svg import INK, PALETTE, WIDE, Canvas
from ctxbench.strategies import BASELINE

if TYPE_CHECKING:
    from ctxbench.report.density import Density
    from ctxbench.report.thresholds import ThresholdMap
    from ctxbench.report.timeline import Timeline

#: Points per drawn series; longer series are thinned with LTTB.
MAX_POINTS = 400
#: Ratios above this are drawn at it (a prompt at 40x the window would flatten the chart).
RATIO_CAP = 1.6
#: Room at the right of a chart for its legend, in px.
LEGEND_W = 190


def _thin(xs: Sequence[float], ys: Sequence[float]) -> tuple[list[float], list[float]]:
    keep = lttb(xs, ys, MAX_POINTS)
    return [xs[i] for i in keep], [ys[i] for i in keep]


def _legend_width(labels: Sequence[str]) -> float:
    return min(max((svg.text_width(label, 10) for label in labels), default=0) + 40, 320)


# -- Pareto ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParetoPoint:
    """One configuration in a Pareto panel."""

    strategy: str
    tokens: float
    retention: float
    on_frontier: bool
    #: its runs had failed calls (drawn hollow)
    failed: bool
    #: what hovering the point says (its configuration)
    label: str = ""


#: The strategy that never compacts: its tokens dwarf the others', so it gets its own axis.
APART = BASELINE
_YTICKS = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
_FAILED = " (failed calls)"


def pareto_chart(
    window: int, panels: Sequence[tuple[str, Sequence[ParetoPoint]]], prefix: str
) -> str:
    """Retention against mean input tokens per trace for one window, one panel per true
    counter (token counts of different tokenizers are not comparable). ``none`` is drawn on
    a narrow axis of its own at the right of each panel, so it does not squash the others;
    every point says its configuration on hover."""
    everything = [p for _, points in panels for p in points]
    colour = svg.colours([p.strategy for p in everything])
    strategies = {p.strategy for p in everything}
    apart = APART in strategies and len(strategies) > 1
    names = _pareto_names(everything, colour)
    legend_w = _legend_width([*names, "frontier"])
    canvas = Canvas(WIDE, 390, prefix)
    left, top = 58, 42
    panel_w = (WIDE - left - legend_w - 24 * (len(panels) - 1)) / max(len(panels), 1)
    for n, (counter, points) in enumerate(panels):
        x0 = left + n * (panel_w + 24)
        title = svg.clip(f"true counter {counter}") if len(panels) > 1 or counter else ""
        axes = _pareto_axes(canvas, x0, panel_w, points, apart, title, first=n == 0)
        front = sorted((p for p in points if p.on_frontier), key=lambda p: (p.tokens, -p.retention))
        for target, group in axes:
            _pareto_points(canvas, target, group, front, colour, frontier_line=target is axes[0][0])
    canvas.legend(_pareto_legend(names, colour, everything), WIDE - legend_w + 8, top + 6)
    canvas.text(
        WIDE / 2, 15, f"window {window:,}: retention vs input tokens", anchor="middle", size=12
    )
    return canvas.render()


def _pareto_names(everything: Sequence[ParetoPoint], colour: Mapping[str, str]) -> list[str]:
    """The legend's names, by strategy: each strategy, and again with failed calls."""
    return list(
        dict.fromkeys(
            svg.clip(p.strategy) + (_FAILED if p.failed else "")
            for s in sorted(colour)
            for p in everything
            if p.strategy == s
        )
    )


def _pareto_legend(
    names: Sequence[str], colour: Mapping[str, str], everything: Sequence[ParetoPoint]
) -> list[tuple[str, str, str]]:
    """The legend's entries: a marker per name (hollow: failed calls), then the frontier."""
    entries = [
        (name, colour[name.removesuffix(_FAILED)], "hollow" if "(failed" in name else "o")
        for name in names
        if name.removesuffix(_FAILED) in colour
    ]
    if any(p.on_frontier for p in everything):
        entries.append(("frontier", INK, "hollow"))
    return entries


def _pareto_axes(
    canvas: Canvas,
    x0: float,
    panel_w: float,
    points: Sequence[ParetoPoint],
    apart: bool,
    title: str,
    *,
    first: bool,
) -> list[tuple[svg.Axes, list[ParetoPoint]]]:
    """One panel's axes and the points each shows: the main one, and ``none``'s narrow one
    at its right when ``apart``."""
    top, height = 42, canvas.height - 42 - 52
    main_w = panel_w * 5 / 6 - 10 if apart else panel_w
    mains = [p for p in points if not (apart and p.strategy == APART)]
    sides = [p for p in points if apart and p.strategy == APART]
    ax = canvas.axes(
        x0,
        top,
        main_w,
        height,
        svg.extent([p.tokens for p in mains]),
        (-0.03, 1.05),
        yticks=_YTICKS,
        xfmt=svg.tokens,
        yfmt=svg.plain,
        xlabel="mean input tokens per trace",
        ylabel="retention" if first else "",
        title=title,
    )
    if not apart:
        return [(ax, mains)]
    side = canvas.axes(
        x0 + main_w + 10,
        top,
        panel_w - main_w - 10,
        height,
        svg.extent([p.tokens for p in sides]),
        (-0.03, 1.05),
        yticks=_YTICKS,
        ylabels=[""] * len(_YTICKS),
        xfmt=svg.tokens,
        tick_size=8.5,
        rotate_x=-30,
        xticks=sorted({p.tokens for p in sides}) if sides else [],
    )
    canvas.text(
        side.left + side.width / 2,
        side.bottom + 40,
        f"{APART} (never compacts)",
        anchor="middle",
        size=9.5,
    )
    return [(ax, mains), (side, sides)]


def _pareto_points(
    canvas: Canvas,
    target: svg.Axes,
    group: Sequence[ParetoPoint],
    front: list[ParetoPoint],
    colour: Mapping[str, str],
    *,
    frontier_line: bool,
) -> None:
    """``group``'s points on ``target`` (hollow: failed calls), the frontier's step line on
    the main axes, and each frontier point ringed with its rank."""
    ranked = [p for p in front if p in group]
    if frontier_line and ranked:
        xs, ys = [ranked[0].tokens], [ranked[0].retention]
        for p in ranked[1:]:
            xs += [p.tokens, p.tokens]
            ys += [ys[-1], p.retention]
        canvas.polyline(target, xs, ys, colour=INK, width=1.0, dash="4 3")
    for p in group:
        failed = ", failed calls" if p.failed else ""
        canvas.markers(
            target,
            [p.tokens],
            [p.retention],
            colour=colour[p.strategy],
            size=3.6,
            hollow=p.failed,
            titles=[
                f"{p.label or p.strategy}: retention {p.retention:.3f}, "
                f"{p.tokens:,.0f} input tokens per trace{failed}"
            ],
        )
    for p in ranked:
        canvas.markers(target, [p.tokens], [p.retention], colour=INK, size=6.5, hollow=True)
        canvas.text(
            target.x(p.tokens) + 7,
            target.y(p.retention) - 6,
            str(front.index(p) + 1),
            size=9.5,
            colour=INK,
        )


# -- retention by probe kind ------------------------------------------------------------------------


def kind_multiples(
    title: str,
    kinds: Sequence[str],
    configs: Sequence[tuple[str, Mapping[str, float]]],
    prefix: str,
) -> str:
    """Small multiples: one panel per probe kind, the same configurations (best first, top
    to bottom) in each, bars of their retention of that kind (0 to 1), labelled on hover."""
    label_w, panel_w, bar_w, row_h, top = 300, 150, 130, 15, 34
    colour = svg.colours([label.split("(")[0] for label, _ in configs])
    width = label_w + panel_w * len(kinds)
    canvas = Canvas(width, top + row_h * len(configs) + 8, prefix)
    canvas.text(width / 2, 13, title, anchor="middle", size=12)
    for row, (label, _) in enumerate(configs):
        canvas.text(
            label_w - 6,
            top + row * row_h + 11,
            svg.clip(label, 52),
            anchor="end",
            size=10,
            title=label,
        )
    for column, kind in enumerate(kinds):
        x = label_w + column * panel_w
        canvas.text(x + bar_w / 2, top - 6, kind, anchor="middle")
        canvas.rect(x, top, bar_w, row_h * len(configs), "#f4f5f7")
        for row, (label, by_kind) in enumerate(configs):
            value = by_kind.get(kind)
            if value is None:
                continue
            canvas.rect(
                x,
                top + row * row_h + 2,
                max(value, 0.0) * bar_w,
                row_h - 4,
                colour[label.split("(")[0]],
                title=f"{label}: {kind} retention {value:.3f}",
            )
        canvas.line(x, top, x, top + row_h * len(configs))
    return canvas.render()


# -- estimate / true ratios -------------------------------------------------------------------------


def ratio_chart(
    title: str,
    series: Sequence[tuple[str, Sequence[float], Sequence[float]]],
    *,
    xlabel: str,
    ylabel: str,
    prefix: str,
) -> str:
    """A ratio per call (an estimate over the true or recorded count) against the prompt's
    size, one colour per series, a line at 1; ratios beyond 3 are drawn at 3."""
    colour = svg.colours([name for name, _, _ in series])
    thinned = []
    for name, xs, ys in series:
        keep = stride(len(xs), MAX_POINTS)
        thinned.append((name, [xs[i] for i in keep], [min(ys[i], 3.0) for i in keep]))
    legend_w = _legend_width([svg.clip(name) for name, _, _ in series])
    canvas = Canvas(WIDE, 340, prefix)
    low, high = svg.extent([y for _, _, ys in thinned for y in ys] + [1.0])
    ax = canvas.axes(
        58,
        32,
        WIDE - 58 - legend_w,
        340 - 32 - 50,
        svg.extent([x for _, xs, _ in thinned for x in xs]),
        (min(low, 0.9), max(high, 1.1)),
        xfmt=svg.tokens,
        xlabel=xlabel,
        ylabel=ylabel,
        title=svg.clip(title),
    )
    canvas.line(ax.left, ax.y(1.0), ax.right, ax.y(1.0), dash="1.5 2")
    for name, xs, ys in thinned:
        canvas.markers(ax, xs, ys, colour=colour[name], size=2.0, opacity=0.5)
    canvas.legend(
        [(svg.clip(name), colour[name], "o") for name, _, _ in series], WIDE - legend_w + 8, 40
    )
    return canvas.render()


# -- threshold maps --------------------------------------------------------------------------------


def threshold_heatmap(tmap: ThresholdMap, prefix: str) -> str:
    """Two swept params: heatmaps of mean retention and failed calls per run."""
    canvas = Canvas(WIDE, 330, prefix)
    panels = (
        ("retention (mean)", tmap.retention, svg.VIRIDIS, (0.0, 1.0)),
        ("failed calls per run", tmap.failed_calls, svg.REDS, None),
    )
    panel_w = (WIDE - 2 * 80) / 2 - 70
    for n, (title, grid, anchors, limits) in enumerate(panels):
        values = [v for row in grid for v in row if v is not None and math.isfinite(v)]
        vmin, vmax = limits if limits else (0.0, max(values, default=1.0))
        vmax = vmax if vmax > vmin else vmin + 1.0
        rows, cols = len(grid), len(grid[0]) if grid else 0
        left = 80 + n * (panel_w + 150)
        ax = canvas.axes(
            left,
            36,
            panel_w,
            330 - 36 - 52,
            (-0.5, cols - 0.5),
            (-0.5, rows - 0.5),
            xticks=list(range(cols)),
            yticks=list(range(rows)),
            xlabels=[f"{v:g}" for v in tmap.x_values],
            ylabels=[f"{v:g}" for v in tmap.y_values],
            xlabel=svg.clip(tmap.x_param),
            ylabel=svg.clip(tmap.y_param or ""),
            title=title,
            grid=False,
        )
        cell_w, cell_h = ax.width / max(cols, 1), ax.height / max(rows, 1)
        for y, row in enumerate(grid):
            for x, value in enumerate(row):
                if value is None or not math.isfinite(value):
                    continue
                share = (value - vmin) / (vmax - vmin)
                canvas.rect(
                    ax.x(x - 0.5),
                    ax.y(y + 0.5),
                    cell_w,
                    cell_h,
                    svg.colour_map(anchors, share),
                    stroke="#ffffff",
                )
                if rows * cols <= 144:
                    dark = share > 0.6 if anchors is svg.REDS else share < 0.55
                    canvas.text(
                        ax.x(x),
                        ax.y(y) + 3.5,
                        f"{value:.2f}" if limits else f"{value:.1f}",
                        anchor="middle",
                        size=9,
                        colour="#ffffff" if dark else "#000000",
                    )
        bar_x = ax.right + 14
        for i in range(20):
            canvas.rect(
                bar_x,
                ax.bottom - (i + 1) * ax.height / 20,
                12,
                ax.height / 20 + 0.3,
                svg.colour_map(anchors, (i + 0.5) / 20),
            )
        canvas.text(bar_x + 16, ax.bottom, f"{vmin:g}", size=9.5)
        canvas.text(bar_x + 16, ax.top + 8, f"{vmax:.3g}", size=9.5)
    canvas.text(
        WIDE / 2, 14, svg.clip(f"{tmap.strategy}, window {tmap.window:,}"), anchor="middle", size=12
    )
    return canvas.render()


def threshold_lines(maps: Sequence[ThresholdMap], prefix: str) -> str:
    """One swept param (the same in every map): retention and failed calls per run against
    it, one line per window."""
    ordered = sorted(maps, key=lambda m: m.window)
    names = [f"window {m.window:,}" for m in ordered]
    legend_w = _legend_width(names)
    canvas = Canvas(WIDE, 300, prefix)
    panel_w = (WIDE - legend_w - 58 - 70) / 2
    xs = svg.extent([x for m in ordered for x in m.x_values])
    failed = [v for m in ordered for v in m.failed_calls[0] if v is not None]
    for n, (title, pick) in enumerate((("retention (mean)", 0), ("failed calls per run", 1))):
        ylim = (-0.03, 1.05) if pick == 0 else (0.0, max(failed, default=0.0) * 1.1 or 1.0)
        ax = canvas.axes(
            58 + n * (panel_w + 70),
            36,
            panel_w,
            300 - 36 - 50,
            xs,
            ylim,
            xlabel=svg.clip(maps[0].x_param),
            title=title,
        )
        for i, m in enumerate(ordered):
            grid = m.retention if pick == 0 else m.failed_calls
            values = [v if v is not None else math.nan for v in grid[0]]
            c = PALETTE[i % len(PALETTE)]
            canvas.polyline(ax, list(m.x_values), values, colour=c, width=1.4)
            canvas.markers(ax, list(m.x_values), values, colour=c, size=3.0)
    canvas.legend(
        [(n, PALETTE[i % len(PALETTE)], "o") for i, n in enumerate(names)], WIDE - legend_w + 8, 44
    )
    canvas.text(WIDE / 2, 14, svg.clip(maps[0].strategy), anchor="middle", size=12)
    return canvas.render()


# -- timelines -------------------------------------------------------------------------------------


#: the marks of calls where the replay leaves what the recorded run could have done
OPEN_LOOP_COLOUR = "#7f3c8d"


def timeline_chart(title: str, timelines: Sequence[Timeline], prefix: str) -> str:
    """One panel per run: true and estimated usage over the limit, compactions, overflows."""
    layers = sorted({layer for t in timelines for _, layer in t.compactions})
    layer_colour = {layer: PALETTE[(i + 2) % len(PALETTE)] for i, layer in enumerate(layers)}
    panel_h, gap, top = 105, 40, 34
    entries = [("true / limit", PALETTE[0], "line"), ("estimate / limit", PALETTE[1], "dash")]
    entries += [(svg.clip(f"compaction: {layer}"), layer_colour[layer], "|") for layer in layers]
    entries.append(("rejected by the provider", "#d62728", "x"))
    if any(t.open_loop_breaks for t in timelines):
        entries.append(("open-loop break", OPEN_LOOP_COLOUR, "^"))
    legend_rows = math.ceil(len(entries) / 5)
    height = top + len(timelines) * (panel_h + gap) + 16 + 15 * legend_rows
    canvas = Canvas(WIDE, height, prefix)
    last = max((c for t in timelines for c in t.calls), default=1)
    xlim = (-0.02 * last, last * 1.02 or 1.0)
    ticks = svg.nice_ticks(0, last or 1)
    for n, t in enumerate(timelines):
        ax = canvas.axes(
            58,
            top + n * (panel_h + gap),
            WIDE - 58 - 16,
            panel_h,
            xlim,
            (-0.16, RATIO_CAP + 0.08),
            xticks=ticks,
            yticks=[0, 0.5, 1.0, 1.5],
            ylabel="share of limit",
            xlabel="model call" if n == len(timelines) - 1 else "",
            title=svg.clip(t.label),
            title_left=True,
        )
        for level, _ in t.state_lines:
            canvas.line(
                ax.left,
                ax.y(level),
                ax.right,
                ax.y(level),
                colour="#aaaaaa",
                width=0.6,
                dash="1.5 2",
            )
        calls = [float(c) for c in t.calls]
        if calls:
            xs, ys = _thin(calls, [min(r, RATIO_CAP) for r in t.true_ratio])
            canvas.polyline(ax, xs, ys, colour=PALETTE[0], width=1.2)
            xs, ys = _thin(calls, [min(r, RATIO_CAP) for r in t.estimated_ratio])
            canvas.polyline(ax, xs, ys, colour=PALETTE[1], width=1.0, dash="4 2")
        for layer in layers:
            at = [c for c, name in t.compactions if name == layer]
            at = [at[i] for i in stride(len(at), MAX_POINTS)]
            canvas.markers(
                ax, at, [-0.08] * len(at), colour=layer_colour[layer], shape="|", size=4.0
            )
        keep = stride(len(t.overflows), MAX_POINTS)
        canvas.markers(
            ax,
            [t.overflows[i][0] for i in keep],
            [min(t.overflows[i][1], RATIO_CAP) for i in keep],
            colour="#d62728",
            shape="x",
            size=3.0,
        )
        breaks = [t.open_loop_breaks[i] for i in stride(len(t.open_loop_breaks), MAX_POINTS)]
        canvas.markers(
            ax, breaks, [RATIO_CAP] * len(breaks), colour=OPEN_LOOP_COLOUR, shape="^", size=3.5
        )
    canvas.legend(entries, 58, height - 15 * legend_rows, columns=min(len(entries), 5))
    canvas.text(WIDE / 2, 14, svg.clip(title), anchor="middle", size=12)
    return canvas.render()


# -- grouped bars ----------------------------------------------------------------------------------


def grouped_bars(
    canvas: Canvas,
    box: tuple[float, float, float, float],
    groups: Sequence[str],
    series: Sequence[tuple[str, str, Sequence[float | None]]],
    *,
    ylabel: str = "",
    title: str = "",
    at_one: bool = True,
) -> None:
    """Bars of each ``(name, colour, values per group)`` side by side in every group, in the
    box ``(left, top, width, height)``; a line at 1 when ``at_one``."""
    left, top, width, height = box
    values = [v for _, _, vs in series for v in vs if v is not None and math.isfinite(v)]
    high = max([*values, 1.0 if at_one else 0.0], default=1.0) * 1.1 or 1.0
    ax = canvas.axes(
        left,
        top,
        width,
        height,
        (-0.5, len(groups) - 0.5),
        (0.0, high),
        xticks=list(range(len(groups))),
        xlabels=[svg.clip(g, 24) for g in groups],
        ylabel=ylabel,
        title=title,
        rotate_x=-20 if len(groups) > 6 else 0.0,
    )
    slot = 0.8 / max(len(series), 1)
    for i, (name, colour, heights) in enumerate(series):
        for g, value in enumerate(heights):
            if value is None or not math.isfinite(value):
                continue
            x = g + (i - (len(series) - 1) / 2) * slot - slot / 2
            canvas.rect(
                ax.x(x),
                ax.y(value),
                slot * ax.width / len(groups),
                ax.bottom - ax.y(value),
                colour,
                title=f"{groups[g]}, {name}: {value:.3f}",
            )
    if at_one:
        canvas.line(ax.left, ax.y(1.0), ax.right, ax.y(1.0))


# -- token density ---------------------------------------------------------------------------------


def density_chart(
    table: Mapping[str, Mapping[str, Density]], counters: Sequence[str], prefix: str
) -> str:
    """Grouped bars of the chars/4 estimate over true tokens per content class and counter."""
    groups = list(table)
    names = [svg.clip(c) for c in counters]
    legend_w = _legend_width(names)
    canvas = Canvas(WIDE, 300, prefix)
    grouped_bars(
        canvas,
        (58, 32, WIDE - 58 - legend_w, 300 - 32 - 50),
        groups,
        [
            (c, PALETTE[i % len(PALETTE)], [table[g][c].chars4_ratio for g in groups])
            for i, c in enumerate(counters)
        ],
        ylabel="chars/4 ÷ true tokens",
        title="chars/4 estimate over true tokens by content class (below 1: undercount)",
    )
    canvas.legend(
        [(n, PALETTE[i % len(PALETTE)], "bar") for i, n in enumerate(names)],
        WIDE - legend_w + 8,
        40,
    )
    return canvas.render()
