"""The written reports, end to end on real replays: every section, nothing external, trace
content escaped, a script allowed by hash only, the same bytes twice, graceful gaps."""

from __future__ import annotations

import base64
import hashlib
import html
import re
import shutil
from pathlib import Path

import pytest
from markupsafe import escape

from ctxbench.decisions.verdict import Verdict
from ctxbench.errors import ConfigError
from ctxbench.report.write import write_drift_report, write_report
from tests.report_data import HOSTILE_ID, IMG, PRICES, SCRIPT, built_report

REPORT_SECTIONS = (
    "how-to-read",
    "leaderboard",
    "pareto",
    "thresholds",
    "cost",
    "timelines",
    "lost-facts",
    "token-counting",
    "decision-drift",
    "usage-accuracy",
    "specs",
)
#: What would make a browser fetch something: stylesheets, scripts, imports, remote URLs.
EXTERNAL = re.compile(
    r"<link\b|<script\b[^>]*\bsrc=|@import|url\(\s*['\"]?(?:https?:)?//|"
    r"\b(?:src|href|action|poster|data)\s*=\s*['\"]?(?:https?:)?//",
    re.I,
)


@pytest.fixture(scope="module")
def results() -> Path:
    return built_report()


@pytest.fixture(scope="module")
def page(results: Path) -> str:
    return (results / "report.html").read_text("utf-8")


def test_every_section_is_present_and_linked_from_the_header(page: str) -> None:
    for section in REPORT_SECTIONS:
        assert f'<section id="{section}"' in page
        assert f'href="#{section}"' in page


def test_every_chart_is_inline_svg(page: str) -> None:
    figures = re.findall(r"<figure id=\"([^\"]+)\">\s*<svg ", page)
    assert {"pareto-5000", "pareto-9000", "timeline-0", "density-chart"} <= set(figures)
    assert any(f.startswith("threshold-map-") for f in figures)
    assert any(f.startswith("threshold-lines-") for f in figures)


def test_nothing_in_the_page_loads_from_outside(page: str) -> None:
    assert EXTERNAL.search(page) is None
    assert "http://" not in page and "https://" not in page


def test_trace_content_appears_escaped_and_never_as_markup(page: str) -> None:
    assert SCRIPT not in page and "<img" not in page
    assert "onerror=" not in page.replace(html.escape("onerror="), "")
    assert str(escape(HOSTILE_ID)) in page
    assert str(escape(f"Which marker {IMG}?")) in page  # the probe question, as text


def test_the_only_script_is_ours_and_the_policy_allows_it_by_hash(page: str) -> None:
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(scripts) == 1 and page.count("<script") == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    assert f"script-src 'sha256-{digest}'" in html.unescape(policy.group(1))
    assert "default-src 'none'" in html.unescape(policy.group(1))


def test_tables_are_rendered_server_side_with_numeric_sort_keys(page: str) -> None:
    leaderboard = re.search(r'<table class="data" id="leaderboard-5000".*?</table>', page, re.S)
    assert leaderboard is not None
    assert leaderboard.group(0).count("<tr>") == 1 + 7  # header + 7 configurations
    # retention 0.25: probes asked after a crashed call count as lost (they were 0.75 before)
    assert re.search(r'<td class="num" data-sort="0\.25">0\.250</td>', leaderboard.group(0))


def test_every_row_can_be_re_run_from_its_spec(page: str, results: Path) -> None:
    for run_id in re.findall(r'"run_id": "([0-9a-f]{16})"', page):
        assert f"--run-id {run_id}" in page
    assert page.count("--from-row") == 28


def test_the_same_results_give_the_same_bytes(results: Path, page: str, tmp_path: Path) -> None:
    (tmp_path / "prices.toml").write_text(PRICES)
    again = write_report(
        results,
        tmp_path / "again.html",
        prices_file=tmp_path / "prices.toml",
        **Verdict().report_args(),
    )
    assert again.path.read_text("utf-8") == page


def test_a_price_table_adds_costs(page: str) -> None:
    assert ">cost USD</th>" in page


def test_a_bad_price_table_names_the_key(results: Path, tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('[prices."tiktoken:o200k_base"]\ninput_per_token = 2.5\n')
    with pytest.raises(ConfigError, match="input_per_token"):
        write_report(results, tmp_path / "r.html", prices_file=prices)


def test_missing_traces_leave_notes_not_holes(results: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(results, copy, ignore=shutil.ignore_patterns("*.html"))
    (results / "traces.jsonl").rename(tmp_path / "moved.jsonl")
    try:
        written = write_report(copy, tmp_path / "r.html")
    finally:
        (tmp_path / "moved.jsonl").rename(results / "traces.jsonl")
    assert len(written.notes) == 2 and all("trace not loaded" in n for n in written.notes)
    text = written.path.read_text("utf-8")
    assert "(trace not loaded)" in text
    assert "No trace text to count" in text
    for section in REPORT_SECTIONS:
        assert f'<section id="{section}"' in text


def test_the_drift_report_replays_each_estimator_against_each_counter(
    results: Path, tmp_path: Path
) -> None:
    written = write_drift_report(
        [results / "traces.jsonl"],
        tmp_path / "drift.html",
        counters=["tiktoken:o200k_base"],
        windows=[5000, 9000],
        reserved=500,
        estimators=["chars4", "hermes"],
    )
    text = written.path.read_text("utf-8")
    for section in ("how-to-read", "token-counting", "decision-drift", "usage-accuracy"):
        assert f'<section id="{section}"' in text
    table = re.search(r'id="decision-drift-table".*?</table>', text, re.S)
    assert table is not None and table.group(0).count("<tr>") == 1 + 2 * 2
    assert "gpt-4o" in text  # accuracy grouped by the recorded model
    assert SCRIPT not in text and EXTERNAL.search(text) is None


def _drawn(page: str) -> list[tuple[str, str]]:
    """(drawn as, configuration) of every row of the timelines' table."""
    body = page[page.index('id="timeline-runs"') :]
    body = body[: body.index("</table>")]
    return re.findall(r'<td class="">([^<]*)</td>\s*<td class="label">([^<]*)</td>', body)


def test_timelines_draw_the_pick_handed_in_else_the_leaderboard_top(
    results: Path, tmp_path: Path
) -> None:
    from ctxbench.report.leaderboard import ConfigKey
    from ctxbench.report.results import load_results

    rows = load_results(results).rows
    # a pick that is not the leaderboard's top: the sliding window, wherever it ran
    chosen = {
        (r.window, r.counter): ConfigKey.of_result(r)
        for r in rows
        if r.strategy == "sliding_window"
    }
    write_report(results, tmp_path / "picked.html", picks=lambda _: chosen)
    picked = _drawn((tmp_path / "picked.html").read_text("utf-8"))
    assert {label.split(" ")[0] for role, label in picked if role == "recommended"} == {
        "sliding_window"
    }
    assert not [role for role, _ in picked if role == "leaderboard top"]
    write_report(results, tmp_path / "top.html")
    top = _drawn((tmp_path / "top.html").read_text("utf-8"))
    assert not [role for role, _ in top if role == "recommended"]
    assert [label for role, label in top if role == "leaderboard top"]
