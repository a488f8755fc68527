"""Charts as inline SVG: ids scoped per figure, nothing external, thinned, byte-stable."""

from __future__ import annotations

import re

from ctxbench.report import figures
from ctxbench.report.timeline import Timeline


def _timeline(n: int, label: str = "dbgpt") -> Timeline:
    return Timeline(
        run_id="r",
        label=label,
        calls=tuple(range(n)),
        true_ratio=tuple((i % 50) / 40 for i in range(n)),
        estimated_ratio=tuple((i % 50) / 50 for i in range(n)),
        compactions=tuple((i, "layer2") for i in range(0, n, 7)),
        overflows=tuple((i, (i % 50) / 40) for i in range(n) if i % 50 > 40),
    )


def _points() -> list[tuple[str, list[figures.ParetoPoint]]]:
    return [
        (
            "tiktoken:o200k_base",
            [
                figures.ParetoPoint("dbgpt", 1e5, 0.7, True, False),
                figures.ParetoPoint("none", 2e5, 1.0, False, True),
            ],
        )
    ]


def test_every_id_is_prefixed_and_two_figures_share_none() -> None:
    a = figures.pareto_chart(8192, _points(), "fa")
    b = figures.timeline_chart("t", [_timeline(30)], "fb")
    ids_a, ids_b = set(re.findall(r'id="([^"]+)"', a)), set(re.findall(r'id="([^"]+)"', b))
    assert ids_a and ids_b and not ids_a & ids_b
    assert all(i.startswith("fa-") for i in ids_a) and all(i.startswith("fb-") for i in ids_b)
    for svg, ids in ((a, ids_a), (b, ids_b)):
        assert set(re.findall(r'(?:href="#|url\(#)([^")]+)', svg)) <= ids


def test_the_svg_has_no_comment_metadata_or_url() -> None:
    svg = figures.timeline_chart("<!-- t -->", [_timeline(30, "a -- b")], "f")
    assert svg.startswith("<svg ") and svg.endswith("</svg>")
    assert "<!--" not in svg and "<metadata" not in svg and "http" not in svg


def test_dollar_signs_in_labels_are_drawn_not_parsed_as_math() -> None:
    svg = figures.timeline_chart("cost $5 $\\frac{", [_timeline(10, "$x^$")], "f")
    assert svg.startswith("<svg ")


def test_long_series_are_thinned_so_the_chart_stops_growing() -> None:
    long = figures.timeline_chart("t", [_timeline(20 * figures.MAX_POINTS)], "f")
    longer = figures.timeline_chart("t", [_timeline(40 * figures.MAX_POINTS)], "f")
    assert len(longer) < 1.1 * len(long)


def test_the_same_data_gives_the_same_bytes() -> None:
    assert figures.pareto_chart(8192, _points(), "f") == figures.pareto_chart(8192, _points(), "f")
