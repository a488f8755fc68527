"""A small SVG plotting kit: axes with ticks and grid, lines, markers, bars, cells, legends.

The report's charts are drawn by hand rather than through matplotlib: a report of a
10-cell sweep spent most of its time in matplotlib's layout engine and its import (seconds
per chart), while these charts need no layout beyond fixed margins. Every coordinate is
written with two decimals (a hundredth of a pixel), every text is escaped, and every ``id``
carries the chart's prefix, so the same data gives the same bytes and several charts share
one page without clashing. Text widths are estimated (0.58 em per character of a
sans-serif font), which is all the fixed layouts here need.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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
#: Width of a full-width chart in px (the page column is ~1,100 px).
WIDE = 960
FONT = 11
GRID = "#e4e4e4"
INK = "#333333"
#: Anchors of the two colour maps (matplotlib's viridis and Reds, five stops each).
VIRIDIS = ("#440154", "#3b528b", "#21918c", "#5ec962", "#fde725")
REDS = ("#fff5f0", "#fcbba1", "#fb6a4a", "#cb181d", "#67000d")

#: What must never be inlined: the SVG is trusted markup only because it holds none of this.
ACTIVE = re.compile(
    r'<\s*(?:script|foreignObject|iframe)\b|<image\b[^>]*href="(?!data:image/png;base64,)'
    r"|\son\w+\s*=|javascript:",
    re.I,
)


def num(value: float) -> str:
    """A coordinate: two decimals at most, no trailing zeros, never ``-0``."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def text_width(text: str, size: float = FONT) -> float:
    return 0.58 * size * len(text)


def clip(text: str, limit: int = 90) -> str:
    """Very long labels are cut (the full text stays in the hover title)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def colours(names: Sequence[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(set(names)))}


def colour_map(anchors: Sequence[str], share: float) -> str:
    """The colour at ``share`` (0 to 1) of a map given by evenly spaced anchors."""
    share = min(max(share, 0.0), 1.0) * (len(anchors) - 1)
    i = min(int(share), len(anchors) - 2)
    t = share - i
    a, b = (tuple(int(c[k : k + 2], 16) for k in (1, 3, 5)) for c in anchors[i : i + 2])
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(a, b))


def tokens(value: float) -> str:
    """An axis label of a token count: 1.5k, 2M."""
    if abs(value) >= 1e6:
        return f"{value / 1e6:.3g}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.3g}k"
    return f"{value:.3g}"


def plain(value: float) -> str:
    return f"{value:g}"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[low, high]`` (about ``count`` of them)."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else [0.0]
    raw = (high - low) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step - 1e-9) * step
    out = []
    value = first
    while value <= high + step * 1e-9:
        out.append(round(value, 10))
        value += step
    return out


def extent(values: Sequence[float], pad: float = 0.06) -> tuple[float, float]:
    """The range of ``values`` padded by ``pad`` of its width (a lone value gets +-50%)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    low, high = min(finite), max(finite)
    if high == low:
        width = abs(low) * 0.5 or 1.0
        return low - width, high + width
    width = high - low
    return low - pad * width, high + pad * width


@dataclass(frozen=True)
class Axes:
    """A plot box in px and the data ranges it shows."""

    left: float
    top: float
    width: float
    height: float
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    clip_id: str

    def x(self, value: float) -> float:
        low, high = self.xlim
        return self.left + (value - low) / ((high - low) or 1.0) * self.width

    def y(self, value: float) -> float:
        low, high = self.ylim
        return self.top + self.height - (value - low) / ((high - low) or 1.0) * self.height

    @property
    def bottom(self) -> float:
        return self.top + self.height

    @property
    def right(self) -> float:
        return self.left + self.width


class Canvas:
    """One ``<svg>`` chart being drawn; :meth:`render` gives its markup."""

    def __init__(self, width: float, height: float, prefix: str) -> None:
        self.width, self.height, self.prefix = width, height, prefix
        self.parts: list[str] = []
        self.defs: list[str] = []
        self._ids = 0

    def new_id(self) -> str:
        self._ids += 1
        return f"{self.prefix}-{self._ids - 1:x}"

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        *,
        anchor: str = "start",
        size: float = FONT,
        colour: str = "",
        rotate: float = 0.0,
        title: str = "",
    ) -> None:
        fill = f' fill="{colour}"' if colour else ""
        turn = f' transform="rotate({num(rotate)} {num(x)} {num(y)})"' if rotate else ""
        hover = f"<title>{esc(title)}</title>" if title else ""
        self.add(
            f'<text x="{num(x)}" y="{num(y)}" text-anchor="{anchor}" font-size="{num(size)}"'
            f"{fill}{turn}>{esc(text)}{hover}</text>"
        )

    def line(
        self,
        x1: float,
        y1: float,
        x2: float,
        y2: float,
        *,
        colour: str = INK,
        width: float = 0.8,
        dash: str = "",
    ) -> None:
        pattern = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(
            f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
            f'stroke="{colour}" stroke-width="{num(width)}"{pattern}/>'
        )

    def axes(
        self,
        left: float,
        top: float,
        width: float,
        height: float,
        xlim: tuple[float, float],
        ylim: tuple[float, float],
        *,
        xticks: Sequence[float] | None = None,
        yticks: Sequence[float] | None = None,
        xfmt: Callable[[float], str] = plain,
        yfmt: Callable[[float], str] = plain,
        xlabels: Sequence[str] | None = None,
        ylabels: Sequence[str] | None = None,
        xlabel: str = "",
        ylabel: str = "",
        title: str = "",
        title_left: bool = False,
        grid: bool = True,
        tick_size: float = 10,
        rotate_x: float = 0.0,
    ) -> Axes:
        """Draw a plot box (grid, left and bottom spines, ticks, labels) and return it; what
        is drawn into it later is clipped to it."""
        clip_id = self.new_id()
        ax = Axes(left, top, width, height, xlim, ylim, clip_id)
        self.defs.append(
            f'<clipPath id="{clip_id}"><rect x="{num(left)}" y="{num(top)}" '
            f'width="{num(width)}" height="{num(height)}"/></clipPath>'
        )
        xs = list(xticks) if xticks is not None else nice_ticks(*xlim)
        ys = list(yticks) if yticks is not None else nice_ticks(*ylim)
        xs = [v for v in xs if xlim[0] - 1e-9 <= v <= xlim[1] + 1e-9]
        ys = [v for v in ys if ylim[0] - 1e-9 <= v <= ylim[1] + 1e-9]
        for i, value in enumerate(xs):
            px = ax.x(value)
            if grid:
                self.line(px, top, px, ax.bottom, colour=GRID, width=0.6)
            self.line(px, ax.bottom, px, ax.bottom + 3.5)
            label = xlabels[i] if xlabels is not None else xfmt(value)
            if rotate_x:
                self.text(px, ax.bottom + 13, label, anchor="end", size=tick_size, rotate=rotate_x)
            else:
                self.text(px, ax.bottom + 14, label, anchor="middle", size=tick_size)
        for i, value in enumerate(ys):
            py = ax.y(value)
            if grid:
                self.line(left, py, ax.right, py, colour=GRID, width=0.6)
            self.line(left - 3.5, py, left, py)
            label = ylabels[i] if ylabels is not None else yfmt(value)
            self.text(left - 6, py + 3.5, label, anchor="end", size=tick_size)
        self.line(left, top, left, ax.bottom)
        self.line(left, ax.bottom, ax.right, ax.bottom)
        if xlabel:
            self.text(left + width / 2, ax.bottom + 30, xlabel, anchor="middle")
        if ylabel:
            self.text(left - 40, top + height / 2, ylabel, anchor="middle", rotate=-90)
        if title:
            if title_left:
                self.text(left, top - 6, title, size=FONT)
            else:
                self.text(left + width / 2, top - 7, title, anchor="middle", size=FONT + 0.5)
        return ax

    def polyline(
        self,
        ax: Axes,
        xs: Sequence[float],
        ys: Sequence[float],
        *,
        colour: str,
        width: float = 1.2,
        dash: str = "",
    ) -> None:
        """A line through the points (NaN values break it)."""
        runs: list[list[str]] = [[]]
        for x, y in zip(xs, ys):
            if math.isfinite(x) and math.isfinite(y):
                runs[-1].append(f"{num(ax.x(x))},{num(ax.y(y))}")
            elif runs[-1]:
                runs.append([])
        pattern = f' stroke-dasharray="{dash}"' if dash else ""
        for run in runs:
            if len(run) > 1:
                self.add(
                    f'<polyline points="{" ".join(run)}" fill="none" stroke="{colour}" '
                    f'stroke-width="{num(width)}"{pattern} clip-path="url(#{ax.clip_id})"/>'
                )

    def markers(
        self,
        ax: Axes,
        xs: Sequence[float],
        ys: Sequence[float],
        *,
        colour: str,
        shape: str = "o",
        size: float = 3.0,
        hollow: bool = False,
        opacity: float = 1.0,
        titles: Sequence[str] | None = None,
    ) -> None:
        """Markers at the points: ``o`` circles, ``x`` crosses, ``|`` ticks; each with its
        hover title when ``titles`` is given (then one element per point)."""
        paths: list[str] = []
        for i, (x, y) in enumerate(zip(xs, ys)):
            if not (math.isfinite(x) and math.isfinite(y)):
                continue
            px, py = ax.x(x), ax.y(y)
            if titles is not None:
                self.add(
                    _marker(px, py, shape, size, colour, hollow, opacity)[:-2]
                    + f"><title>{esc(titles[i])}</title>"
                    + ("</circle>" if shape == "o" else "</path>")
                )
            elif shape == "o":
                self.add(_marker(px, py, shape, size, colour, hollow, opacity))
            else:
                paths.append(_stroke(px, py, shape, size))
        if paths:
            self.add(
                f'<path d="{" ".join(paths)}" stroke="{colour}" stroke-width="1.2" fill="none"/>'
            )

    def rect(
        self,
        x: float,
        y: float,
        width: float,
        height: float,
        fill: str,
        *,
        title: str = "",
        stroke: str = "",
    ) -> None:
        edge = f' stroke="{stroke}" stroke-width="0.3"' if stroke else ""
        hover = f"><title>{esc(title)}</title></rect>" if title else "/>"
        self.add(
            f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(width, 0.0))}" '
            f'height="{num(max(height, 0.0))}" fill="{fill}"{edge}{hover}'
        )

    def legend(
        self, entries: Sequence[tuple[str, str, str]], x: float, y: float, *, columns: int = 1
    ) -> None:
        """``(label, colour, swatch)`` entries from ``(x, y)`` down (or across ``columns``);
        swatches: ``line``, ``dash``, ``o``, ``hollow``, ``x``, ``^``, ``|``, ``bar``."""
        column_width = max((text_width(label, 10) for label, _, _ in entries), default=0) + 34
        for i, (label, colour, swatch) in enumerate(entries):
            cx = x + (i % columns) * column_width
            cy = y + (i // columns) * 15
            if swatch in ("line", "dash"):
                self.line(
                    cx,
                    cy,
                    cx + 18,
                    cy,
                    colour=colour,
                    width=1.4,
                    dash="4 2" if swatch == "dash" else "",
                )
            elif swatch == "bar":
                self.rect(cx + 3, cy - 5, 12, 10, colour)
            else:
                hollow = swatch == "hollow"
                shape = "o" if swatch in ("o", "hollow") else swatch
                if shape == "o":
                    self.add(_marker(cx + 9, cy, "o", 3.5, colour, hollow, 1.0))
                else:
                    self.add(
                        f'<path d="{_stroke(cx + 9, cy, shape, 3.5)}" stroke="{colour}" '
                        'stroke-width="1.2" fill="none"/>'
                    )
            self.text(cx + 24, cy + 3.5, label, size=10)

    def render(self) -> str:
        w, h = num(self.width), num(self.height)
        defs = f"<defs>{''.join(self.defs)}</defs>" if self.defs else ""
        body = "".join(self.parts)
        text = (
            f'<svg role="img" class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'font-family="sans-serif" font-size="{FONT}">{defs}{body}</svg>'
        )
        if ACTIVE.search(re.sub(r">[^<]*<", "><", text)):  # the markup, without the escaped text
            raise RuntimeError("a chart would hold markup that runs")
        return text


def _marker(
    px: float, py: float, shape: str, size: float, colour: str, hollow: bool, opacity: float
) -> str:
    if shape == "o":
        fill = "none" if hollow else colour
        alpha = f' fill-opacity="{num(opacity)}"' if opacity < 1 else ""
        return (
            f'<circle cx="{num(px)}" cy="{num(py)}" r="{num(size)}" fill="{fill}"{alpha} '
            f'stroke="{colour}" stroke-width="1"/>'
        )
    return f'<path d="{_stroke(px, py, shape, size)}" stroke="{colour}" stroke-width="1.2" fill="none"/>'


def _stroke(px: float, py: float, shape: str, size: float) -> str:
    if shape == "x":
        a, b, c, d = num(px - size), num(px + size), num(py - size), num(py + size)
        return f"M{a} {c}L{b} {d}M{a} {d}L{b} {c}"
    if shape == "^":
        a, b, c, d = num(px - size), num(px + size), num(py - size), num(py + size)
        return f"M{a} {d}L{num(px)} {c}L{b} {d}Z"
    return f"M{num(px)} {num(py - size)}V{num(py + size)}"
