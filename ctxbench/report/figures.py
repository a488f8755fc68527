"""The report's charts: matplotlib figures rendered to inline SVG.

SVG keeps charts crisp at any zoom and adds no request: text is drawn as glyph paths (no font
to fetch), and every ``id`` is prefixed per figure so that several figures in one page never
share a glyph or clip-path id. Figures are built as ``matplotlib.figure.Figure`` objects,
never through pyplot, so nothing is registered globally and each one is freed when dropped.
Output is byte-stable (fixed hash salt, no date), so the same results give the same report.

Labels drawn in a chart are text inside SVG elements, escaped by matplotlib's XML writer;
:func:`to_svg` also drops comments and metadata, so no trace text survives outside escaped
element content.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxbench.report.downsample import lttb, stride

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ctxbench.report.density import Density
    from ctxbench.report.thresholds import ThresholdMap
    from ctxbench.report.timeline import Timeline

#: Points per drawn series; longer series are thinned with LTTB.
MAX_POINTS = 400
#: Colours by position (matplotlib's tab10), assigned in sorted order so they are stable.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
#: Width of a full-width chart, in inches (the page column is ~1,100 px).
WIDE = 9.6
#: Ratios above this are drawn at it (a prompt at 40x the window would flatten the chart).
RATIO_CAP = 1.6

_RC: dict[str, Any] = {
    "svg.hashsalt": "ctxbench",
    "svg.fonttype": "path",
    "font.size": 8.5,
    "axes.titlesize": 9.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#e4e4e4",
    "grid.linewidth": 0.6,
    "legend.fontsize": 7.5,
    "legend.frameon": False,
}


@contextmanager
def _style() -> Iterator[None]:
    import matplotlib

    with matplotlib.rc_context(_RC):  # type: ignore[arg-type]
        yield


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


_ID = re.compile(r'\bid="([^"]+)"')


def to_svg(fig: Figure, prefix: str) -> str:
    """The figure as an ``<svg>`` element to inline in HTML, its ids prefixed with ``prefix``."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->\s*", "", text, flags=re.S)
    text = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", text)
    referenced = list(dict.fromkeys(re.findall(r'(?:href="#|url\(#)([^")]+)', text)))
    short = {name: f"{prefix}-{i:x}" for i, name in enumerate(referenced)}

    def rename(match: re.Match[str]) -> str:
        name = match.group(1)
        return f'id="{short[name]}"' if name in short else ""

    text = _ID.sub(rename, text)
    text = re.sub(r'(href="#|url\(#)([^")]+)', lambda m: f"{m.group(1)}{short[m.group(2)]}", text)
    text = re.sub(r"<g >", "<g>", text)
    text = _COORDINATES.sub(lambda m: _FLOAT.sub(_round, m.group(0)), text)
    text = re.sub(r">\s+<", "><", text)
    text = re.sub(r"\s*\n\s*", " ", text)
    if _ACTIVE.search(text):
        raise RuntimeError("matplotlib wrote script or event handlers into an SVG")
    return text.strip().replace("<svg ", '<svg role="img" class="chart" ', 1)


#: What must never be inlined: the SVG is trusted markup only because it holds none of this.
_ACTIVE = re.compile(
    r'<\s*(?:script|foreignObject|iframe)\b|<image\b[^>]*href="(?!data:image/png;base64,)'
    r"|\son\w+\s*=|javascript:",
    re.I,
)


#: Attributes holding plot coordinates (never ``scale(...)``, which sizes glyphs).
_COORDINATES = re.compile(r'\b(?:d|x|y|x1|x2|y1|y2|width|height|points)="[^"]*"|translate\([^)]*\)')
_FLOAT = re.compile(r"-?\d+\.\d{3,}")


def _round(match: re.Match[str]) -> str:
    """Two decimals of a point are a hundredth of a pixel at 100% zoom: invisible, and the
    file shrinks by a third."""
    text = f"{float(match.group(0)):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _plain(text: str, limit: int = 90) -> str:
    """Label text drawn literally: matplotlib reads ``$...$`` as math (and raises on bad
    math), so dollar signs are escaped; very long labels are cut."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text.replace("$", r"\$")


def _colours(names: Sequence[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(set(names)))}


def _thin(xs: Sequence[float], ys: Sequence[float]) -> tuple[list[float], list[float]]:
    keep = lttb(xs, ys, MAX_POINTS)
    return [xs[i] for i in keep], [ys[i] for i in keep]


def _tokens_axis(ax: Axes) -> None:
    from matplotlib.ticker import FuncFormatter

    def fmt(value: float, _: Any) -> str:
        if abs(value) >= 1e6:
            return f"{value / 1e6:g}M"
        if abs(value) >= 1e3:
            return f"{value / 1e3:g}k"
        return f"{value:g}"

    ax.xaxis.set_major_formatter(FuncFormatter(fmt))


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


def pareto_chart(
    window: int, panels: Sequence[tuple[str, Sequence[ParetoPoint]]], prefix: str
) -> str:
    """Retention against mean input tokens per trace for one window, one panel per true
    counter (token counts of different tokenizers are not comparable)."""
    colours = _colours([p.strategy for _, points in panels for p in points])
    with _style():
        fig = _figure(WIDE, 3.9)
        axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
        for ax, (counter, points) in zip(axes, panels):
            for strategy, colour in colours.items():
                mine = [p for p in points if p.strategy == strategy]
                for failed in (False, True):
                    chosen = [p for p in mine if p.failed == failed]
                    if chosen:
                        ax.scatter(
                            [p.tokens for p in chosen],
                            [p.retention for p in chosen],
                            s=26,
                            facecolors="none" if failed else colour,
                            edgecolors=colour,
                            label=_plain(strategy) + (" (failed calls)" if failed else ""),
                        )
            front = sorted(
                (p for p in points if p.on_frontier), key=lambda p: (p.tokens, -p.retention)
            )
            if front:
                xs, ys = [front[0].tokens], [front[0].retention]
                for p in front[1:]:
                    xs += [p.tokens, p.tokens]
                    ys += [ys[-1], p.retention]
                ax.plot(xs, ys, color="#333333", linewidth=1.0, linestyle="--", zorder=0)
                ax.scatter(
                    [p.tokens for p in front],
                    [p.retention for p in front],
                    s=90,
                    facecolors="none",
                    edgecolors="#333333",
                    linewidths=1.0,
                    label="frontier",
                )
                for number, p in enumerate(front, 1):
                    ax.annotate(
                        str(number),
                        (p.tokens, p.retention),
                        xytext=(5, 4),
                        textcoords="offset points",
                        fontsize=7.5,
                        color="#333333",
                    )
            ax.set_xlabel("mean input tokens per trace")
            ax.set_ylim(-0.03, 1.05)
            _tokens_axis(ax)
            ax.set_title(_plain(f"true counter {counter}") if len(panels) > 1 or counter else "")
        axes[0].set_ylabel("retention")
        handles: dict[str, Any] = {}
        for ax in axes:
            for handle, name in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(name, handle)
        fig.legend(list(handles.values()), list(handles), loc="outside right upper")
        fig.suptitle(f"window {window:,}: retention vs input tokens", fontsize=9.5)
        return to_svg(fig, prefix)


# -- threshold maps --------------------------------------------------------------------------------


def _fmt_axis_values(values: Sequence[float]) -> list[str]:
    return [f"{v:g}" for v in values]


def threshold_heatmap(tmap: ThresholdMap, prefix: str) -> str:
    """Two swept params: heatmaps of mean retention and failed calls per run."""
    with _style():
        fig = _figure(WIDE, 3.3)
        panels = (
            ("retention (mean)", tmap.retention, "viridis", (0.0, 1.0)),
            ("failed calls per run", tmap.failed_calls, "Reds", None),
        )
        for i, (title, grid, cmap, limits) in enumerate(panels):
            ax = fig.add_subplot(1, 2, i + 1)
            _heatmap(fig, ax, tmap, grid, cmap, limits)
            ax.set_title(title)
        fig.suptitle(_plain(f"{tmap.strategy}, window {tmap.window:,}"), fontsize=9.5)
        return to_svg(fig, prefix)


def threshold_lines(maps: Sequence[ThresholdMap], prefix: str) -> str:
    """One swept param (the same in every map): retention and failed calls per run against
    it, one line per window."""
    with _style():
        fig = _figure(WIDE, 3.0)
        retention_ax = fig.add_subplot(1, 2, 1)
        failed_ax = fig.add_subplot(1, 2, 2)
        for i, m in enumerate(sorted(maps, key=lambda m: m.window)):
            colour = PALETTE[i % len(PALETTE)]
            for ax, grid in ((retention_ax, m.retention), (failed_ax, m.failed_calls)):
                values = [v if v is not None else math.nan for v in grid[0]]
                ax.plot(
                    list(m.x_values), values, marker="o", color=colour, label=f"window {m.window:,}"
                )
        retention_ax.set_ylim(-0.03, 1.05)
        failed_ax.set_ylim(bottom=0)
        for ax, title in ((retention_ax, "retention (mean)"), (failed_ax, "failed calls per run")):
            ax.set_xlabel(_plain(maps[0].x_param))
            ax.set_title(title)
        retention_ax.legend(loc="best")
        fig.suptitle(_plain(maps[0].strategy), fontsize=9.5)
        return to_svg(fig, prefix)


def _heatmap(
    fig: Figure,
    ax: Axes,
    tmap: ThresholdMap,
    grid: Sequence[Sequence[float | None]],
    cmap: str,
    limits: tuple[float, float] | None,
) -> None:
    import numpy as np

    data = np.array([[math.nan if v is None else v for v in row] for row in grid], dtype=float)
    finite = data[np.isfinite(data)]
    vmin, vmax = limits if limits else (0.0, float(finite.max()) if finite.size else 1.0)
    vmax = vmax if vmax > vmin else vmin + 1.0
    rows, cols = data.shape
    mesh = ax.pcolormesh(
        np.arange(cols + 1) - 0.5,
        np.arange(rows + 1) - 0.5,
        np.ma.masked_invalid(data),
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        edgecolors="face",
        linewidth=0.3,
    )
    ax.set_xticks(range(len(tmap.x_values)), _fmt_axis_values(tmap.x_values))
    ax.set_yticks(range(len(tmap.y_values)), _fmt_axis_values(tmap.y_values))
    ax.set_xlabel(_plain(tmap.x_param))
    ax.set_ylabel(_plain(tmap.y_param or ""))
    ax.grid(False)
    if data.size <= 144:
        for (y, x), value in np.ndenumerate(data):
            if math.isnan(value):
                continue
            share = (value - vmin) / (vmax - vmin)
            dark_cell = share > 0.6 if cmap == "Reds" else share < 0.55
            ax.text(
                x,
                y,
                f"{value:.2f}" if limits else f"{value:.1f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if dark_cell else "black",
            )
    fig.colorbar(mesh, ax=ax, shrink=0.85)


# -- timelines -------------------------------------------------------------------------------------


def timeline_chart(title: str, timelines: Sequence[Timeline], prefix: str) -> str:
    """One panel per run: true and estimated usage over the limit, compactions, overflows."""
    layers = sorted({layer for t in timelines for _, layer in t.compactions})
    layer_colours = {layer: PALETTE[(i + 2) % len(PALETTE)] for i, layer in enumerate(layers)}
    with _style():
        fig = _figure(WIDE, 1.0 + 1.45 * len(timelines))
        axes = fig.subplots(len(timelines), 1, sharex=True, squeeze=False)[:, 0]
        for ax, t in zip(axes, timelines):
            for level, _ in t.state_lines:
                ax.axhline(level, color="#aaaaaa", linewidth=0.6, linestyle=":")
            calls = [float(c) for c in t.calls]
            if calls:
                xs, ys = _thin(calls, [min(r, RATIO_CAP) for r in t.true_ratio])
                ax.plot(xs, ys, color=PALETTE[0], linewidth=1.2, label="true / limit")
                xs, ys = _thin(calls, [min(r, RATIO_CAP) for r in t.estimated_ratio])
                ax.plot(
                    xs,
                    ys,
                    color=PALETTE[1],
                    linewidth=1.0,
                    linestyle="--",
                    label="estimate / limit",
                )
            for layer in layers:
                at = [c for c, name in t.compactions if name == layer]
                at = [at[i] for i in stride(len(at), MAX_POINTS)]
                ax.plot(
                    at,
                    [-0.08] * len(at),
                    linestyle="none",
                    marker="|",
                    markersize=7,
                    color=layer_colours[layer],
                    label=_plain(f"compaction: {layer}"),
                )
            keep = stride(len(t.overflows), MAX_POINTS)
            ax.plot(
                [t.overflows[i][0] for i in keep],
                [min(t.overflows[i][1], RATIO_CAP) for i in keep],
                linestyle="none",
                marker="x",
                markersize=4.5,
                color="#d62728",
                label="rejected by the provider",
            )
            ax.set_ylim(-0.16, RATIO_CAP + 0.08)
            ax.set_yticks([0, 0.5, 1.0, 1.5])
            ax.set_title(_plain(t.label), loc="left", fontsize=8.5)
            ax.set_ylabel("share of limit")
        axes[-1].set_xlabel("model call")
        handles, names = axes[0].get_legend_handles_labels()
        seen = dict(zip(names, handles))
        for ax in axes[1:]:
            for handle, name in zip(*ax.get_legend_handles_labels()):
                seen.setdefault(name, handle)
        fig.legend(
            list(seen.values()), list(seen), loc="outside lower center", ncols=min(len(seen), 6)
        )
        fig.suptitle(_plain(title), fontsize=9.5)
        return to_svg(fig, prefix)


# -- token density ---------------------------------------------------------------------------------


def density_chart(
    table: Mapping[str, Mapping[str, Density]], counters: Sequence[str], prefix: str
) -> str:
    """Grouped bars of the chars/4 estimate over true tokens per content class and counter."""
    import numpy as np

    groups = list(table)
    with _style():
        fig = _figure(WIDE, 3.0)
        ax = fig.add_subplot()
        width = 0.8 / max(len(counters), 1)
        positions = np.arange(len(groups))
        for i, name in enumerate(counters):
            values = [table[g][name].chars4_ratio for g in groups]
            heights = [v if v is not None else math.nan for v in values]
            ax.bar(
                positions + (i - (len(counters) - 1) / 2) * width,
                heights,
                width=width,
                color=PALETTE[i % len(PALETTE)],
                label=_plain(name),
            )
        ax.axhline(1.0, color="#333333", linewidth=0.8)
        ax.set_xticks(positions, [_plain(g) for g in groups])
        ax.set_ylabel("chars/4 ÷ true tokens")
        ax.set_title("chars/4 estimate over true tokens by content class (below 1: undercount)")
        fig.legend(loc="outside right upper")
        return to_svg(fig, prefix)
