"""Render a report to PNG in headless Chromium (for the README, and to eyeball a report).

Uses Debian's ``chromium`` through Playwright's Python package (``pip install
ctxbench[browser]``; never ``playwright install``: the system browser is used). The page is
opened from ``file://`` with the network cut, exactly as a reader would open the file.

    python -m ctxbench.report.screenshot REPORT.html OUT.png [--width 1280] [--height 900]
        [--full-page | --selector CSS | --at CSS] [--fragment HASH --wait JS]

``--at '#pareto'`` scrolls that element to the top first: the README's picture is the viewport
at the Pareto charts of the quickstart sweep. The viewer (``ctxbench view``) is shot the same
way with ``--fragment 'run=ID&call=N&compare=ID'`` and ``--wait document.body.dataset.ready``
(it loads its data after the page).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxbench.extras import require

#: Where Debian installs Chromium; overridable for other systems.
CHROMIUM = "/usr/bin/chromium"
#: Flags for a quiet, offline, sandbox-free headless run (CI containers run as root).
CHROMIUM_ARGS: tuple[str, ...] = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_path() -> str | None:
    """The Chromium executable, or None when it is not installed."""
    if Path(CHROMIUM).is_file():
        return CHROMIUM
    return shutil.which("chromium")


def launch(playwright: Any, *, executable: str | None = None) -> Any:
    """A headless Chromium browser from Playwright, with the system executable."""
    path = executable or chromium_path()
    if path is None:
        raise FileNotFoundError(
            f"no Chromium at {CHROMIUM}; install it with `apt-get install chromium`"
        )
    return playwright.chromium.launch(executable_path=path, headless=True, args=list(CHROMIUM_ARGS))


@dataclass(frozen=True)
class Shot:
    """What to capture: a ``width`` x ``height`` viewport (scrolled to the element ``at``),
    the full page, or one element (``selector``); the URL's ``fragment`` and a JavaScript
    expression to ``wait`` for first (the viewer loads its data after the page)."""

    width: int = 1280
    height: int = 900
    full_page: bool = False
    selector: str | None = None
    at: str | None = None
    fragment: str = ""
    wait: str = ""


def screenshot(report: str | Path, out: str | Path, shot: Shot = Shot()) -> Path:
    """Save a PNG of ``report`` in a browser of its own."""
    sync_playwright = require("playwright.sync_api", what="a screenshot").sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        try:
            return capture(browser, report, out, shot)
        finally:
            browser.close()


def capture(browser: Any, report: str | Path, out: str | Path, shot: Shot = Shot()) -> Path:
    """:func:`screenshot` with a browser that is already running (tests share one)."""
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": shot.width, "height": shot.height})
    try:
        page = context.new_page()
        page.route("**/*", only_local)
        url = Path(report).resolve().as_uri() + (f"#{shot.fragment}" if shot.fragment else "")
        page.goto(url, wait_until="load")
        if shot.wait:
            page.wait_for_function(shot.wait, timeout=30_000)
        if shot.at:
            page.locator(shot.at).first.evaluate("e => window.scrollTo(0, e.offsetTop - 8)")
        if shot.selector:
            page.locator(shot.selector).first.screenshot(path=str(target))
        else:
            page.screenshot(path=str(target), full_page=shot.full_page)
    finally:
        context.close()
    return target


def only_local(route: Any) -> None:
    """A Playwright route handler: let the file and data: URIs through, abort anything else
    (a report should ask for nothing else; tests record what it asks for)."""
    url = route.request.url
    if url.startswith(("file:", "data:")):
        route.continue_()
    else:
        route.abort()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ctxbench.report.screenshot", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("report", help="the report HTML file")
    parser.add_argument("out", help="the PNG to write")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--full-page", action="store_true", help="the whole page, not one screen")
    parser.add_argument("--selector", help="only this element (a CSS selector, e.g. '#pareto')")
    parser.add_argument("--at", help="scroll this element (a CSS selector) to the top first")
    parser.add_argument("--fragment", default="", help="the URL's #fragment (the viewer's state)")
    parser.add_argument("--wait", default="", help="a JavaScript expression to wait for")
    args = parser.parse_args(argv)
    if not Path(args.report).is_file():
        print(f"error: no such file {args.report}", file=sys.stderr)
        return 2
    if chromium_path() is None:
        print(f"error: no Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    path = screenshot(
        args.report,
        args.out,
        Shot(
            args.width,
            args.height,
            args.full_page,
            args.selector,
            args.at,
            args.fragment,
            args.wait,
        ),
    )
    print(f"{path} ({path.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
