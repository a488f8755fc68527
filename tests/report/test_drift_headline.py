"""The drift report leads with its figures and draws one panel per series (issue 40), and
`drift` takes `--counter auto` as run, sweep and calibrate do."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.report.counting_sections import headline_section
from ctxbench.report.document import replay_drift
from ctxbench.report.drift_chart import small_multiples
from ctxbench.report.page import Paragraph, TableBlock
from ctxbench.report.write import expand_auto
from ctxbench.trace import Message, ToolCall, Trace, Usage


def billed_trace(trace_id: str, billed: list[int]) -> Trace:
    msgs: list[Message] = [Message("system", "You are an agent."), Message("user", "Go.")]
    for i, tokens in enumerate(billed):
        call = ToolCall(f"{trace_id}{i}", "ls", "{}")
        msgs.append(Message("assistant", "Listing.", tool_calls=(call,), usage=Usage(tokens, 5)))
        msgs.append(Message("tool", "a.txt b.txt " * 20, tool_call_id=call.id))
    return Trace(trace_id, tuple(msgs), meta={"model": "gpt-4o"})


def test_the_headline_names_the_largest_state_change_share_with_its_window() -> None:
    trace = billed_trace("u", [300, 400, 19_500, 19_900])
    cells = replay_drift([trace], ["tiktoken:o200k_base"], ["chars4", "dbgpt"], [20_000], 0)
    section = headline_section(cells)
    assert section is not None and section.id == "headline"
    sentence, table = section.blocks
    assert isinstance(sentence, Paragraph) and isinstance(table, TableBlock)
    worst = max(cells, key=lambda c: c.drift.differing_share or 0.0)
    share = f"{worst.drift.differing_share:.1%}"
    assert sentence.text.startswith(f"{worst.estimator}'s estimate puts {share} of calls")
    assert "at 20,000 tokens" in sentence.text and len(table.table.rows) == 2
    assert headline_section([]) is None


def test_small_multiples_draw_one_panel_per_series() -> None:
    series = [(f"e{i} vs c", [1.0, 2.0, 3.0], [0.9, 1.0, 1.2]) for i in range(5)]
    svg = small_multiples(series, xlabel="x", ylabel="y", prefix="t")
    assert svg.count("<clipPath") == 5
    assert all(f"e{i} vs c" in svg for i in range(5))


def test_auto_becomes_the_counters_of_the_recorded_models() -> None:
    traces = [
        billed_trace("a", [10]),
        Trace("b", (Message("user", "hi"),), meta={"model": "deepseek-chat"}),
    ]
    said: list[str] = []
    assert expand_auto(["auto", "chars4"], traces, said.append) == [
        "tiktoken:o200k_base",
        "hf:deepseek-v3.1",
        "chars4",
    ]
    assert len(said) == 2 and said[0].startswith("auto: gpt-4o -> tiktoken:o200k_base")


def test_drift_accepts_counter_auto_and_leads_with_the_headline(
    shared_traces: Path, tmp_path: Path
) -> None:
    trace = shared_traces / "mini-swe-agent" / "astropy__astropy-12907.traj.json"
    out = tmp_path / "drift.html"
    args = ["drift", str(trace), "-c", "auto", "-w", "16k", "-o", str(out), "-q"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    page = out.read_text("utf-8")
    assert page.index('id="headline"') < page.index('id="how-to-read"')
    assert "hf:deepseek-v3.1" in page
    assert "--save-profile p.json" in page  # the usage is there and no counter is fitted to it
    headline = re.sub(r"<[^>]+>", " ", page[page.index('id="headline"') :][:3000])
    assert re.search(r"puts \d+\.\d% of calls in another state", headline)
