"""The viewer in a real browser (Debian's headless Chromium through Playwright): open a run,
step to a call after a compaction and read the prompt the engine sent there, follow a probe
to the call where it was lost, compare two runs aligned by call with the first divergence
marked; from file:// and from ``ctxbench view --serve``, asking for nothing else."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from ctxbench.divergence import first_divergence
from ctxbench.report.screenshot import only_local
from ctxbench.trace import Message
from ctxbench.view import build, write
from ctxbench.view.serve import HOST, make_server
from tests.viewing import two_runs

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module", params=["default", "small"])
def viewer(request: pytest.FixtureRequest) -> Path:
    """The viewer as written, and written with every message over 200 characters in a file of
    its own and chunks of calls ending past 2,000 characters (the layout of a long run's)."""
    runs = two_runs()
    if request.param == "default":
        return build(runs.rows_file, runs.root / "viewer")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(write, "APART_TEXT", 200)
        patch.setattr(write, "CALL_CHUNK_CHARS", 2_000)
        return build(runs.rows_file, runs.root / "viewer-small")


class Page:
    def __init__(self, browser: Any, url: str) -> None:
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", self._console)
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.route("**/*", only_local if url.startswith("file:") else _loopback)
        self.page.goto(url, wait_until="load")
        self.wait()

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(message.text)

    def wait(self, call: int | None = None) -> None:
        expected = "" if call is None else f":{call}:"
        self.page.wait_for_function(
            # the page clears the mark when it starts showing another call: never a stale one
            "e => !!document.body.dataset.ready && document.body.dataset.ready.includes(e)",
            arg=expected,
            timeout=15_000,
        )

    @property
    def call(self) -> int:
        return int(self.page.evaluate("document.body.dataset.ready").split(":")[1])

    def prompt(self, pane: str = "#pane-a") -> list[list[str]]:
        return self.page.eval_on_selector_all(
            f"{pane} ol.prompt li.msg",
            "els => els.map(e => [e.dataset.role, e.querySelector('pre.content').textContent])",
        )

    def close(self) -> None:
        self.context.close()


def _loopback(route: Any) -> None:
    if route.request.url.startswith(f"http://{HOST}:"):
        route.continue_()
    else:
        route.abort()


def _shown(messages: tuple[Message, ...]) -> list[list[str]]:
    return [[m.role, m.content] for m in messages]


def test_open_step_to_a_compaction_follow_a_probe_compare(browser: Any, viewer: Path) -> None:
    runs = two_runs()
    run_a, run_b = (r["run_id"] for r in runs.rows)
    page = Page(browser, viewer.resolve().as_uri() + f"#run={run_a}")
    try:
        assert page.call == 0
        assert page.prompt() == _shown(runs.prompts[0][0])
        # step to a call after a compaction, accepted by the provider
        for _ in range(40):
            page.page.click("#next-compaction")
            page.wait()
            if page.call in runs.prompts[0]:
                break
        call = page.call
        assert call > 0 and call in runs.prompts[0]
        assert page.page.locator("#pane-a .event.compaction").count() >= 1
        assert page.prompt() == _shown(runs.prompts[0][call])
        # one step further with the keyboard still shows the engine's prompt
        page.page.keyboard.press("ArrowRight")
        page.wait(call + 1)
        if call + 1 in runs.prompts[0]:
            assert page.prompt() == _shown(runs.prompts[0][call + 1])
        # follow a probe to the call where it was lost
        button = page.page.locator("#probes button.lost-at").first
        probe = button.locator("xpath=ancestor::tr").get_attribute("data-probe")
        lost = int(button.get_attribute("data-call") or -1)
        button.click()
        page.wait(lost)
        row = page.page.locator(f'#probes tr[data-probe="{probe}"]')
        assert row.locator("td.now").text_content() != "in context"
        answers = (row.locator("td").nth(3).text_content() or "").split(" | ")
        text = "\n".join(c for _, c in page.prompt())
        assert not any(a in text for a in answers)
        page.page.click("#prev")
        page.wait(lost - 1)
        assert row.locator("td.now").text_content() == "in context"
        # compare the two runs: aligned by call, the first divergence marked
        page.page.select_option("#compare-select", run_b)
        page.wait()
        expected = first_divergence(runs.typed[0], runs.typed[1]).call
        assert expected is not None
        assert page.page.locator("#go-divergence").text_content() == f"call {expected}"
        page.page.click("#go-divergence")
        page.wait(expected)
        assert page.page.locator("#pane-b").is_visible()
        assert "diverged" in (page.page.get_attribute("#pane-a", "class") or "")
        for pane, i in (("#pane-a", 0), ("#pane-b", 1)):
            assert page.page.get_attribute(pane, "data-call") == str(expected)
            if expected in runs.prompts[i]:
                assert page.prompt(pane) == _shown(runs.prompts[i][expected])
        assert f"compare={run_b}" in page.page.url
        assert page.errors == []
        assert all(u.startswith("file:") for u in page.requests)
    finally:
        page.close()


def test_served_on_loopback(browser: Any, viewer: Path) -> None:
    server = make_server(viewer.parent, port=0)
    assert server.server_address[0] == "127.0.0.1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        runs = two_runs()
        page = Page(browser, server.url + "#call=3")
        try:
            assert page.call == 3
            if 3 in runs.prompts[0] or 3 in runs.prompts[1]:
                shown = page.prompt()
                assert shown in (_shown(p[3]) for p in runs.prompts if 3 in p)
            assert page.errors == []
        finally:
            page.close()
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def two_sources() -> Path:
    """A baseline holding run A only, and a current results source holding runs A and B."""
    runs = two_runs()
    lines = runs.rows_file.read_text("utf-8").splitlines(keepends=True)
    for name, kept in (("baseline", lines[:1]), ("current", lines)):
        (runs.root / name).mkdir(exist_ok=True)
        (runs.root / name / "rows.jsonl").write_text("".join(kept), "utf-8")
    return build(
        runs.root / "current" / "rows.jsonl",
        runs.root / "viewer-two",
        against=runs.root / "baseline" / "rows.jsonl",
    )


def test_compare_a_run_with_one_from_another_results_source(
    browser: Any, two_sources: Path
) -> None:
    runs = two_runs()
    run_a, run_b = (r["run_id"] for r in runs.rows)
    # run B of the current source opens beside the baseline's run of the same trace
    page = Page(browser, two_sources.resolve().as_uri() + f"#run={run_b}")
    try:
        assert page.page.locator("#pane-b").is_visible()
        assert f"compare=1-{run_a}" in page.page.url
        title_b = page.page.locator("#pane-b .pane-title").text_content() or ""
        assert title_b.startswith("baseline/rows.jsonl: ") and run_a in title_b
        title_a = page.page.locator("#pane-a .pane-title").text_content() or ""
        assert title_a.startswith("current/rows.jsonl: ") and run_b in title_a
        expected = first_divergence(runs.typed[1], runs.typed[0]).call
        assert expected is not None
        assert page.page.locator("#go-divergence").text_content() == f"call {expected}"
        page.page.click("#go-divergence")
        page.wait(expected)
        assert "diverged" in (page.page.get_attribute("#pane-a", "class") or "")
        for pane, i in (("#pane-a", 1), ("#pane-b", 0)):
            assert page.page.get_attribute(pane, "data-call") == str(expected)
            if expected in runs.prompts[i]:
                assert page.prompt(pane) == _shown(runs.prompts[i][expected])
        # the same run id in both sources: two runs, paired with each other, never diverging
        page.page.select_option("#run-select", run_a)
        page.wait(0)
        assert f"compare=1-{run_a}" in page.page.url
        assert "same thing at every call" in (page.page.text_content("#divergence") or "")
        assert page.prompt("#pane-a") == page.prompt("#pane-b") == _shown(runs.prompts[0][0])
        assert page.errors == []
    finally:
        page.close()


def test_a_call_refused_for_its_pairing_shows_its_own_prompt_and_kind(
    browser: Any, tmp_path: Path
) -> None:
    """A trim that cuts parallel tool pairs: at a call the provider refused for its pairing,
    the page shows the prompt the engine scored there, labelled as a pairing refusal."""
    import json

    from ctxbench.cell.runner import resolve_spec, run_spec
    from ctxbench.cell.spec import RunSpec
    from ctxbench.engine import events as ev
    from ctxbench.formats.canonical import write_traces
    from ctxbench.view.capture import capture_run
    from tests.factories import tool_trace

    trace = tool_trace(12, calls=3, output="x" * 200)
    write_traces(tmp_path / "t.jsonl", [trace])
    spec = resolve_spec(
        RunSpec(
            trace_id=trace.id,
            trace_hash=trace.content_hash,
            strategy="langchain_trim",
            window=2_000,
            reserved=0,
            trace_source=str(tmp_path / "t.jsonl"),
        )
    )
    output = run_spec(spec, trace)
    row = output.result.to_row()
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n", "utf-8")
    failed = [e for e in output.events if e.type == ev.CALL_FAILED]
    assert failed and failed[-1]["kind"] == ev.PAIRING_REJECTED
    call = failed[-1].call
    expected = capture_run(spec, trace, output.result).prompt(call)
    viewer = build(tmp_path / "rows.jsonl", tmp_path / "viewer")
    page = Page(browser, viewer.resolve().as_uri() + f"#run={row['run_id']}&call={call}")
    try:
        page.wait(call)
        assert page.prompt() == _shown(tuple(expected))
        text = page.page.locator("#pane-a .event.failed").first.text_content() or ""
        tokens, limit = failed[-1]["true_tokens"], failed[-1]["limit"]
        assert f"refused for its tool pairing ({tokens:,} true / {limit:,} limit)" in text
        assert " > " not in text
        rejected = page.page.locator("#pane-a .event.provider.rejected b").first.text_content()
        assert rejected is not None and rejected.endswith("rejected (pairing)")
        assert page.errors == []
    finally:
        page.close()
