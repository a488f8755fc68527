"""The chart of the drift section: each counter's estimate over the provider's recorded prompt
tokens, call by call and by the content class of the text each call added."""

from __future__ import annotations

from collections.abc import Sequence

from ctxbench.report.decisions import UsageRatio, summarise_ratios
from ctxbench.report.figures import PALETTE, WIDE, _figure, _plain, _style, to_svg


def usage_ratio_chart(ratios: Sequence[UsageRatio], counters: Sequence[str], prefix: str) -> str:
    """Left: estimate / recorded per call (calls in trace order); right: the median per content
    class. The line at 1 is the provider's bill."""
    import numpy as np

    classes = list(dict.fromkeys(r.content_class for r in ratios))
    medians = summarise_ratios(ratios, lambda r: r.content_class)
    with _style():
        fig = _figure(WIDE, 3.2)
        per_call, per_class = fig.subplots(1, 2, width_ratios=(3, 2))
        width = 0.8 / max(len(counters), 1)
        positions = np.arange(len(classes))
        for i, name in enumerate(counters):
            mine = [r.ratio for r in ratios if r.counter == name]
            colour = PALETTE[i % len(PALETTE)]
            per_call.plot(
                range(len(mine)), mine, ".", markersize=2, color=colour, label=_plain(name)
            )
            heights = [
                medians[(name, c)].median if (name, c) in medians else np.nan for c in classes
            ]
            per_class.bar(
                positions + (i - (len(counters) - 1) / 2) * width,
                heights,
                width=width,
                color=colour,
            )
        for ax in (per_call, per_class):
            ax.axhline(1.0, color="#333333", linewidth=0.8)
        per_call.set_xlabel("recorded call")
        per_call.set_ylabel("estimate ÷ recorded")
        per_call.set_title("per call (1 = what the provider billed)")
        per_class.set_xticks(positions, [_plain(c) for c in classes])
        per_class.set_title("median by content class of the added text")
        fig.legend(loc="outside right upper")
        return to_svg(fig, prefix)
