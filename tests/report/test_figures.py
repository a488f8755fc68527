"""Charts as inline SVG: ids scoped per figure, nothing external, thinned, byte-stable."""

from __future__ import annotations

import dataclasses
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


def test_pareto_points_carry_escaped_hover_titles_and_none_gets_its_own_axis() -> None:
    import re

    from ctxbench.report.figures import ParetoPoint, pareto_chart

    points = [
        ParetoPoint("none", 2e6, 1.0, True, False, "none"),
        ParetoPoint("dbgpt", 2e4, 0.6, True, False, 'dbgpt(x=<b onload="y">)'),
        ParetoPoint("dbgpt", 3e4, 0.4, False, True, "dbgpt(x=2)"),
    ]
    svg = pareto_chart(32768, [("o200k", points)], "pt")
    titles = re.findall(r"<title>([^<]*)</title>", svg)
    assert len(titles) == 3
    assert any(t.startswith("dbgpt(x=&lt;b onload=&quot;y&quot;&gt;)") for t in titles)
    assert "<b " not in svg
    # none is drawn apart: a second, narrow axes (one clip path per axes)
    without = pareto_chart(32768, [("o200k", points[1:])], "pt")
    assert svg.count("<clipPath") == 2 and without.count("<clipPath") == 1


def test_kind_multiples_and_ratio_charts_draw_every_kind_and_series() -> None:
    import re

    from ctxbench.report.figures import kind_multiples, ratio_chart

    svg = kind_multiples(
        "kinds", ["recall", "artifact"], [("a(x=1)", {"recall": 0.5, "artifact": 1.0})], "km"
    )
    titles = [t for t in re.findall(r"<title>([^<]*)</title>", svg) if "retention" in t]
    assert sorted(titles) == ["a(x=1): artifact retention 1.000", "a(x=1): recall retention 0.500"]
    bars = re.findall(r'<rect [^>]*width="([\d.]+)"[^>]*><title>', svg)
    assert sorted(bars) == ["130", "65"]  # bars scale with retention
    chart = ratio_chart(
        "r", [("chars4", [1.0, 2.0], [0.5, 5.0])], xlabel="x", ylabel="y", prefix="rc"
    )
    one = ratio_chart("r", [("chars4", [1.0], [0.5])], xlabel="x", ylabel="y", prefix="rc")
    assert chart.startswith("<svg") and chart != one  # every point is drawn


def test_open_loop_breaks_are_marked_on_the_timeline_and_in_its_legend() -> None:
    plain = figures.timeline_chart("t", [_timeline(30)], "f")
    assert "open-loop break" not in plain
    broken = dataclasses.replace(_timeline(30), open_loop_breaks=(12, 20))
    svg = figures.timeline_chart("t", [broken], "f")
    assert "open-loop break" in svg
    assert svg.count(figures.OPEN_LOOP_COLOUR) == 2  # the marks' path and the legend swatch
    assert svg.count("Z") == 3  # a triangle per break, and the swatch
