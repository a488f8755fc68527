"""The chart of the drift section: each counter's estimate over the provider's recorded prompt
tokens, call by call and by the content class of the text each call added."""

from __future__ import annotations

from collections.abc import Sequence

from ctxbench.report import svg
from ctxbench.report.decisions import UsageRatio, summarise_ratios
from ctxbench.report.downsample import stride
from ctxbench.report.figures import LEGEND_W, MAX_POINTS, grouped_bars
from ctxbench.report.svg import PALETTE, WIDE, Canvas


def usage_ratio_chart(ratios: Sequence[UsageRatio], counters: Sequence[str], prefix: str) -> str:
    """Left: estimate / recorded per call (calls in trace order); right: the median per content
    class. The line at 1 is the provider's bill."""
    classes = list(dict.fromkeys(r.content_class for r in ratios))
    medians = summarise_ratios(ratios, lambda r: r.content_class)
    canvas = Canvas(WIDE, 320, prefix)
    per_call = {name: [r.ratio for r in ratios if r.counter == name] for name in counters}
    values = [v for vs in per_call.values() for v in vs]
    calls = max((len(vs) for vs in per_call.values()), default=1)
    low, high = svg.extent([*values, 1.0])
    plot_w = WIDE - 58 - LEGEND_W - 60
    ax = canvas.axes(
        58,
        32,
        plot_w * 0.6,
        320 - 32 - 50,
        (-0.5, calls - 0.5),
        (low, high),
        xlabel="recorded call",
        ylabel="estimate ÷ recorded",
        title="per call (1 = what the provider billed)",
    )
    canvas.line(ax.left, ax.y(1.0), ax.right, ax.y(1.0))
    for i, name in enumerate(counters):
        mine = per_call[name]
        keep = stride(len(mine), MAX_POINTS)
        canvas.markers(
            ax,
            [float(k) for k in keep],
            [mine[k] for k in keep],
            colour=PALETTE[i % len(PALETTE)],
            size=1.6,
        )
    grouped_bars(
        canvas,
        (ax.right + 60, 32, plot_w * 0.4, 320 - 32 - 50),
        classes,
        [
            (
                name,
                PALETTE[i % len(PALETTE)],
                [medians[(name, c)].median if (name, c) in medians else None for c in classes],
            )
            for i, name in enumerate(counters)
        ],
        title="median by content class of the added text",
    )
    canvas.legend(
        [(svg.clip(n), PALETTE[i % len(PALETTE)], "o") for i, n in enumerate(counters)],
        WIDE - LEGEND_W + 8,
        40,
    )
    return canvas.render()


#: Panels per row of :func:`small_multiples`, and each panel's height.
PANELS_PER_ROW = 3
PANEL_H = 170


def small_multiples(
    series: Sequence[tuple[str, Sequence[float], Sequence[float]]],
    *,
    xlabel: str,
    ylabel: str,
    prefix: str,
) -> str:
    """One small panel per series (an estimate over the true count per call, against the
    prompt's size), on shared axes with the line at 1: ten estimators overlaid in one cloud
    hide each other; side by side each one's drift reads at a glance. Ratios beyond 3 are
    drawn at 3."""
    cols = min(PANELS_PER_ROW, max(len(series), 1))
    rows = -(-len(series) // cols)
    gap_x, gap_y, left, top = 56, 58, 58, 30
    panel_w = (WIDE - left - 20 - gap_x * (cols - 1)) / cols
    height = top + rows * (PANEL_H + gap_y)
    canvas = Canvas(WIDE, height, prefix)
    thinned = []
    for name, xs, ys in series:
        keep = stride(len(xs), MAX_POINTS)
        thinned.append((name, [xs[i] for i in keep], [min(ys[i], 3.0) for i in keep]))
    low, high = svg.extent([y for _, _, ys in thinned for y in ys] + [1.0])
    xlim = svg.extent([x for _, xs, _ in thinned for x in xs] or [0.0, 1.0])
    for n, (name, xs, ys) in enumerate(thinned):
        row, col = divmod(n, cols)
        ax = canvas.axes(
            left + col * (panel_w + gap_x),
            top + row * (PANEL_H + gap_y),
            panel_w,
            PANEL_H,
            xlim,
            (min(low, 0.9), max(high, 1.1)),
            xfmt=svg.tokens,
            xlabel=xlabel if row == rows - 1 else "",
            ylabel=ylabel if col == 0 else "",
            title=svg.clip(name, 48),
            tick_size=9,
        )
        canvas.line(ax.left, ax.y(1.0), ax.right, ax.y(1.0), dash="1.5 2")
        canvas.markers(ax, xs, ys, colour=PALETTE[n % len(PALETTE)], size=1.8, opacity=0.6)
    return canvas.render()
