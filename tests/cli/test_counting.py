"""`ctxbench counters` and `ctxbench count`: listings, counts of text and of traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli, main
from ctxbench.counting import COUNTERS, get_counter
from ctxbench.counting.breakdown import breakdown
from ctxbench.formats.canonical import write_traces
from tests.factories import tool_trace

EXACT = {
    "tiktoken:cl100k_base",
    "tiktoken:o200k_base",
    "hf:qwen2.5",
    "hf:deepseek-v3",
    "hf:deepseek-v3.1",
    "hf:llama3",
    "mistral:tekken",
}


def test_count_text_prints_the_count() -> None:
    result = CliRunner().invoke(
        cli, ["count", "--text", "hello world", "--counter", "tiktoken:o200k_base"]
    )
    assert result.exit_code == 0, result.output
    assert result.output == "2\n"


def test_count_text_with_several_counters_prints_one_row_each() -> None:
    specs = ["tiktoken:o200k_base", "hf:qwen2.5", "chars4"]
    args = ["count", "--text", "上下文压缩 context", *[a for s in specs for a in ("--counter", s)]]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines()[1:]]
    assert rows == [[s, str(get_counter(s).count("上下文压缩 context"))] for s in specs]


def test_count_text_json_names_the_content_class() -> None:
    result = CliRunner().invoke(
        cli, ["count", "--text", '{"a": [1, 2]}', "--counter", "chars4", "--json"]
    )
    assert json.loads(result.output) == {"chars": 13, "class": "json", "counts": {"chars4": 3}}


def test_counters_lists_every_registered_counter_with_its_kind() -> None:
    result = CliRunner().invoke(cli, ["counters", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [r["name"] for r in rows] == COUNTERS.names()
    kinds = {r["name"]: r["kind"] for r in rows}
    assert {n for n, k in kinds.items() if k == "exact"} == EXACT
    assert all(r["source"] for r in rows)
    assert "Built with Llama" in next(r["source"] for r in rows if r["name"] == "hf:llama3")


def test_counters_table_has_a_header_and_one_line_per_counter() -> None:
    result = CliRunner().invoke(cli, ["counters"])
    lines = result.output.splitlines()
    assert lines[0].split()[:2] == ["name", "kind"]
    assert len(lines) == 1 + len(COUNTERS.names())


def test_count_traces_reports_totals_per_role_and_class_per_counter(tmp_path: Path) -> None:
    traces = [tool_trace(3, trace_id="a"), tool_trace(5, output="ERROR boom\n" * 3, trace_id="b")]
    path = tmp_path / "traces.jsonl"
    write_traces(path, traces)
    result = CliRunner().invoke(
        cli,
        ["count", str(path), "--counter", "tiktoken:o200k_base", "--counter", "chars4", "--json"],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert [t["trace_id"] for t in payload["traces"]] == ["a", "b"]
    for trace, out in zip(traces, payload["traces"]):
        for spec in ("tiktoken:o200k_base", "chars4"):
            assert out["counters"][spec] == breakdown(trace, get_counter(spec)).to_dict()
    o200k = payload["traces"][1]["counters"]["tiktoken:o200k_base"]
    assert (
        o200k["total"] == o200k["incremental"] == o200k["overhead"] + sum(o200k["by_role"].values())
    )
    assert set(o200k["by_role"]) == {"system", "user", "assistant", "tool"}
    assert o200k["framing"] == o200k["total"] - sum(o200k["by_class"].values())
    both = payload["all"]["tiktoken:o200k_base"]["total"]
    assert both == sum(t["counters"]["tiktoken:o200k_base"]["total"] for t in payload["traces"])


def test_count_traces_table_has_one_block_per_trace_and_an_all_block(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_traces(path, [tool_trace(2, trace_id="a"), tool_trace(2, trace_id="b")])
    result = CliRunner().invoke(cli, ["count", str(path), "--counter", "chars4"])
    assert result.exit_code == 0, result.output
    assert f"{path}  a  (7 messages)" in result.output
    assert "all 2 traces" in result.output
    assert any(
        line.split()[0] == "role:tool" for line in result.output.splitlines() if line.strip()
    )


def test_text_and_traces_together_are_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["count", "--text", "x", str(tmp_path / "t.jsonl")])
    assert result.exit_code == 2
    assert "either --text" in result.output


def test_an_unknown_counter_is_an_error_with_a_suggestion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["count", "--text", "x", "--counter", "tiktoken:o200k"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "unknown counter 'tiktoken:o200k'" in err and "did you mean" in err
