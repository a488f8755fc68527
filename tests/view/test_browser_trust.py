"""The served viewer against a browser's attacks, in real headless Chromium on a real server
(issue 38, items 3, 5 and 6):

- a file a strategy wrote from trace content never runs as a page of the viewer's origin
  (AgentScope named ``data:image/html`` an ``.html`` file, the server served it as HTML);
- another origin's page cannot read the viewer's data with ``<script src>`` or ``fetch``;
- a DNS-rebound name is not answered, and no folder is listed."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxbench.formats.canonical import write_traces
from ctxbench.report.screenshot import CHROMIUM_ARGS, chromium_path
from ctxbench.view import build
from ctxbench.view.serve import HOST, ViewerServer, make_server
from tests.hardening import run_main
from tests.strategies.test_agentscope_offload import SCRIPT, image_trace
from tests.viewing import two_runs

pytestmark = pytest.mark.browser


def serving(server: http.server.HTTPServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread


@pytest.fixture(scope="module")
def stored_xss(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The viewer of an AgentScope (design) run whose trace holds ``data:image/html`` images."""
    root = tmp_path_factory.mktemp("xss")
    urls = [f"data:image/html;base64,{SCRIPT}", "https://example.com/a.png"]
    write_traces(root / "t.jsonl", [image_trace(urls)])
    run = ["run", str(root / "t.jsonl"), "-s", "agentscope", "-w", "100000", "-c", "chars4"]
    sets = ["--set", "release=design", "--set", "max_image_num=1", "-q"]
    code, err = run_main([*run, *sets, "--out", str(root / "rows.jsonl")])
    assert code == 0, err
    return build(root / "rows.jsonl", root / "viewer").parent


@pytest.fixture()
def served(stored_xss: Path) -> Iterator[ViewerServer]:
    server = make_server(stored_xss, port=0)
    serving(server)
    yield server
    server.shutdown()
    server.server_close()


def test_a_file_from_a_trace_never_runs_in_the_viewer_origin(
    browser: Any, stored_xss: Path, served: ViewerServer
) -> None:
    files = [p for p in (stored_xss / "files").rglob("*") if p.is_file()]
    offloaded = [p for p in files if p.name.startswith("image-")]
    assert offloaded and all(p.suffix == ".bin" for p in offloaded), files
    # even a file named .html (planted beside it) is a download under a sandbox
    planted = offloaded[0].with_name("planted.html")
    planted.write_text("<script>localStorage.setItem('pwned', '1')</script>", "utf-8")
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    try:
        page.goto(served.url, wait_until="load")
        page.wait_for_function("() => !!document.body.dataset.ready", timeout=15_000)
        for path in (offloaded[0], planted):
            url = served.url + path.relative_to(stored_xss).as_posix()
            with page.expect_download() as download:
                try:
                    page.goto(url)
                except Exception as exc:  # Playwright: "Download is starting"
                    assert "Download is starting" in str(exc), exc
            assert download.value.suggested_filename == path.name
        page.goto(served.url, wait_until="load")
        assert page.evaluate("localStorage.getItem('pwned')") is None
        assert page.title() != "pwned"
    finally:
        context.close()


ATTACKER = """<!doctype html><html><body><script>
window.stolen = [];
window.ctxbenchLoad = function (key, data) { window.stolen.push(key); };
</script>
{scripts}
<script>
window.fetched = "pending";
fetch("{url}data/index.json").then((r) => r.text()).then(
  (t) => { window.fetched = t; }, (e) => { window.fetched = "blocked"; });
</script></body></html>"""


def test_another_origin_cannot_read_the_data(
    browser: Any, served: ViewerServer, tmp_path: Path
) -> None:
    guessed = f"http://{HOST}:{served.port}/"
    scripts = "".join(
        f'<script src="{base}data/{name}"></script>'
        for base in (guessed, served.url)  # a guessable path, and even the token's
        for name in ("index.js", "index.json")
    )
    (tmp_path / "attack.html").write_text(
        ATTACKER.replace("{scripts}", scripts).replace("{url}", served.url), "utf-8"
    )
    handler = http.server.SimpleHTTPRequestHandler
    attacker = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0),
        lambda *a: handler(*a, directory=str(tmp_path)),
    )
    serving(attacker)
    context = browser.new_context()
    page = context.new_page()
    try:
        # localhost:PORT is another origin than 127.0.0.1:PORT
        page.goto(f"http://localhost:{attacker.server_address[1]}/attack.html", wait_until="load")
        page.wait_for_function("() => window.fetched !== 'pending'", timeout=10_000)
        assert page.evaluate("window.stolen") == []
        assert page.evaluate("window.fetched") == "blocked"
    finally:
        context.close()
        attacker.shutdown()
        attacker.server_close()


def test_a_rebound_name_is_not_answered_and_nothing_is_listed(
    browser: Any, served: ViewerServer
) -> None:
    rules = "--host-resolver-rules=MAP attacker.example 127.0.0.1"
    rebinding = browser.browser_type.launch(
        executable_path=chromium_path(), headless=True, args=[*CHROMIUM_ARGS, rules]
    )
    try:
        page = rebinding.new_page()
        rebound = served.url.replace(HOST, "attacker.example")
        for path in ("", "data/index.json", "data/index.js"):
            response = page.goto(rebound + path)
            assert response is not None and response.status == 421, path
        for path in ("data/", "files/", "data", ""):
            response = page.goto(f"http://{HOST}:{served.port}/{path}")
            assert response is not None and response.status == 404, path
        for path in ("data/", "files/"):
            response = page.goto(served.url + path)
            assert response is not None and response.status == 404, path
            assert "Directory listing" not in page.content()
        response = page.goto(served.url)
        assert response is not None and response.status == 200
        assert response.headers["x-content-type-options"] == "nosniff"
    finally:
        rebinding.close()


def test_the_served_viewer_shows_runs_from_json(browser: Any, tmp_path: Path) -> None:
    """The page itself loads its data as JSON when served (and never asks for a .js data file)."""
    folder = build(two_runs().rows_file, tmp_path / "viewer").parent
    server = make_server(folder, port=0)
    serving(server)
    context = browser.new_context()
    page = context.new_page()
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(server.url + "#call=1", wait_until="load")
        page.wait_for_function("() => !!document.body.dataset.ready", timeout=15_000)
        assert page.locator("#pane-a ol.prompt li.msg").count() > 0
        data = [u for u in asked if "/data/" in u]
        assert data and all(u.endswith(".json") for u in data), data
        assert all(u.startswith(server.url) for u in asked), asked
        assert errors == []
    finally:
        context.close()
        server.shutdown()
        server.server_close()
