"""The report in a real browser (Debian's headless Chromium through Playwright): every section
and chart renders, the console stays clean, no request leaves the file, tables sort and
filter, they still read with JavaScript off, and hostile trace content never runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxbench.report.screenshot import Shot, capture, only_local
from tests.report.test_write import REPORT_SECTIONS
from tests.report_data import HOSTILE_ID, IMG, SCRIPT, WINDOWS, built_report

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def report() -> Path:
    return built_report() / "report.html"


class Visit:
    """A page opened from file://, with its console messages, page errors and requests."""

    def __init__(self, browser: Any, report: Path, *, javascript: bool = True) -> None:
        self.context = browser.new_context(
            java_script_enabled=javascript, viewport={"width": 1280, "height": 900}
        )
        self.page = self.context.new_page()
        self.console: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        # Nothing should try to leave; if something does, it is recorded, then refused.
        self.page.route("**/*", only_local)
        self.url = report.resolve().as_uri()
        self.page.goto(self.url, wait_until="load")

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def visit(browser: Any, report: Path) -> Iterator[Visit]:
    opened = Visit(browser, report)
    yield opened
    opened.close()


def test_every_section_is_shown(visit: Visit) -> None:
    for section in REPORT_SECTIONS:
        box = visit.page.locator(f"section#{section}").bounding_box()
        assert box is not None and box["height"] > 40, section


def test_every_chart_has_a_rendered_size(visit: Visit) -> None:
    sizes = visit.page.eval_on_selector_all(
        "figure svg",
        "els => els.map(e => [e.closest('figure').id, e.getBoundingClientRect().width, "
        "e.getBoundingClientRect().height])",
    )
    assert len(sizes) >= 8
    for figure, width, height in sizes:
        assert width > 200 and height > 100, figure


def test_the_console_is_clean_and_no_request_leaves_the_file(visit: Visit) -> None:
    assert visit.errors == []
    assert [m for m in visit.console if m.startswith(("error", "warning"))] == []
    assert visit.requests and all(
        url == visit.url or url.startswith("data:") for url in visit.requests
    ), visit.requests


def test_clicking_a_header_sorts_the_rows(visit: Visit) -> None:
    table = "#specs-table"
    header = visit.page.locator(f"{table} thead th", has_text="retention")
    column = "els => els.map(td => td.getAttribute('data-sort'))"
    cells = f"{table} tbody tr td:nth-child(7)"
    header.click()
    ascending = [float(v) for v in visit.page.eval_on_selector_all(cells, column) if v]
    assert ascending == sorted(ascending) and len(set(ascending)) > 1
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    descending = [float(v) for v in visit.page.eval_on_selector_all(cells, column) if v]
    assert descending == sorted(ascending, reverse=True)


def test_typing_in_the_filter_box_hides_rows_that_do_not_match(visit: Visit) -> None:
    rows = visit.page.locator("#specs-table tbody tr:not(.below)")
    total = rows.count()
    box = visit.page.locator("#specs .filter")
    box.fill("sliding_window 9,000")
    visible = visit.page.locator("#specs-table tbody tr:not(.below):visible")
    assert 0 < visible.count() < total
    for text in visible.all_inner_texts():
        assert "sliding_window" in text and "9,000" in text
    # each row's spec row is shown exactly when its row is
    specs = visit.page.locator("#specs-table tbody tr.below:visible")
    assert specs.count() == visible.count()
    box.fill("")
    assert visit.page.locator("#specs-table tbody tr:not(.below):visible").count() == total


def test_a_spec_row_follows_its_row_when_sorted(visit: Visit) -> None:
    visit.page.locator("#specs-table thead th", has_text="retention").click()
    pairs = visit.page.eval_on_selector_all(
        "#specs-table tbody tr:not(.below)",
        "rows => rows.map(r => [r.cells[0].textContent.trim(),"
        " r.nextElementSibling.querySelector('summary').textContent])",
    )
    assert len(pairs) == 28
    assert all(summary.endswith(run_id) for run_id, summary in pairs)


def test_key_columns_stay_in_view_and_others_can_be_hidden(visit: Visit) -> None:
    page = visit.page
    table = page.locator("table[id^=leaderboard-]").first
    wrap = table.locator("xpath=..")
    pinned = table.locator("tbody tr").first.locator("td.pin").last
    before = pinned.bounding_box()
    wrap.evaluate("w => { w.style.maxWidth = '600px'; w.scrollLeft = 400; }")
    after = pinned.bounding_box()
    assert before is not None and after is not None
    assert wrap.evaluate("w => w.scrollLeft") > 0
    assert abs(after["x"] - before["x"]) < 2  # pinned: did not scroll away
    chooser = page.locator("details.chooser").first
    chooser.locator("summary").click()
    box = chooser.locator("input[type=checkbox]").first
    column = int(box.get_attribute("data-column") or -1)
    header = table.locator("thead th").nth(column)
    assert header.is_visible()
    box.uncheck()
    assert not header.is_visible()
    assert not table.locator("tbody tr").first.locator("td").nth(column).is_visible()
    box.check()
    assert header.is_visible()
    wrap.evaluate("w => { w.style.maxWidth = ''; w.scrollLeft = 0; }")


def test_pareto_points_say_their_configuration_on_hover(visit: Visit) -> None:
    titles = visit.page.eval_on_selector_all(
        "figure[id^=pareto-] svg title", "ts => ts.map(t => t.textContent)"
    )
    assert titles and all("retention" in t and "input tokens" in t for t in titles)
    assert any(t.startswith("none") for t in titles)


def test_the_verdict_strip_comes_first_and_names_a_config_per_window(visit: Visit) -> None:
    strip = visit.page.locator("main > section#verdict")
    assert strip.count() == 1
    first = visit.page.eval_on_selector("main", "m => m.firstElementChild.id")
    assert first == "verdict"
    text = strip.inner_text()
    assert all(f"{w:,}" in text for w in WINDOWS)


def test_hostile_trace_content_is_text_and_nothing_runs(visit: Visit) -> None:
    assert visit.page.evaluate("typeof window.__pwned") == "undefined"
    text = visit.page.evaluate("document.body.textContent")  # hidden cells included
    assert SCRIPT in text and IMG in text and HOSTILE_ID in text
    assert HOSTILE_ID in visit.page.inner_text("#timelines")
    assert visit.page.locator("main img").count() == 0
    assert visit.page.locator("script").count() == 1


def test_tables_are_all_there_with_javascript_off(browser: Any, report: Path) -> None:
    off = Visit(browser, report, javascript=False)
    try:
        assert off.page.locator("html.nojs").count() == 1
        assert off.page.locator(".filter").count() == 0
        tables = off.page.locator("table.data")
        assert tables.count() >= 10
        assert off.page.locator("#specs-table tbody tr:not(.below):visible").count() == 28
        assert off.page.locator("#specs-table tbody tr.below details").count() == 28
        assert off.page.evaluate("typeof window.__pwned") == "undefined"
    finally:
        off.close()


def test_a_screenshot_of_the_report_is_a_png(browser: Any, report: Path, tmp_path: Path) -> None:
    out = capture(browser, report, tmp_path / "report.png", Shot(width=1000, height=700))
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 20_000
