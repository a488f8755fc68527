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
