"""The reasoning rule of a cell (issue 18): a RunSpec field that defaults to the family of
the trace's recorded model, applied by the true counter and exact estimators, settable on the
command line and in sweep files, and left out of the run id when unset."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cell.runner import build_parts, resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec, canonical_json
from ctxbench.cli import cli
from ctxbench.counting import get_counter
from ctxbench.counting.reasoning import ReasoningCounter
from ctxbench.errors import ConfigError
from ctxbench.formats.canonical import write_traces
from ctxbench.sweep.spec import load_sweep
from ctxbench.trace import Message, ToolCall, Trace

THOUGHT = "I should list the directory before I edit anything, then read the failing test. " * 8


def _reasoning_trace(model: str, trace_id: str = "r") -> Trace:
    """Tool-calling turns whose assistant messages carry reasoning_content (DeepSeek style)."""
    msgs = [Message("system", "You are an agent."), Message("user", "Fix the bug.")]
    for i in range(6):
        call = ToolCall(f"c{i}", "bash", json.dumps({"cmd": f"ls {i}"}))
        msgs.append(
            Message("assistant", "", tool_calls=(call,), replay={"reasoning_content": THOUGHT})
        )
        msgs.append(Message("tool", f"file{i}.py " * 20, tool_call_id=call.id, name="bash"))
    msgs.append(Message("assistant", "Done."))
    return Trace(trace_id, tuple(msgs), meta={"model": model})


def _spec(trace: Trace, **changes: object) -> RunSpec:
    base = RunSpec(trace.id, trace.content_hash, "none", window=200_000, counter="hf:qwen2.5")
    return resolve_spec(replace(base, **changes))  # type: ignore[arg-type]


def test_an_unset_rule_keeps_the_run_id_of_cells_written_before_it() -> None:
    trace = _reasoning_trace("deepseek-chat")
    spec = _spec(trace)
    identity = spec.identity()
    assert "reasoning" not in identity and "reasoning" not in spec.to_dict()
    # the id is the hash of exactly the fields an older ctxbench hashed
    import hashlib

    old = hashlib.sha256(canonical_json(identity).encode()).hexdigest()[:16]
    assert spec.run_id == old
    ruled = spec.with_(reasoning="none")
    assert ruled.run_id != spec.run_id
    assert ruled.to_dict()["reasoning"] == "none" and "|reasoning=none|" in ruled.key
    assert RunSpec.from_dict(ruled.to_dict()) == ruled


def test_a_row_naming_an_unknown_rule_is_refused_with_a_suggestion() -> None:
    data = {**_spec(_reasoning_trace("x")).to_dict(), "reasoning": "tool_turn"}
    data.pop("run_id")
    with pytest.raises(ConfigError, match="unknown reasoning rule") as info:
        RunSpec.from_dict(data)
    assert info.value.key == "spec.reasoning" and "tool_turns" in (info.value.hint or "")


def test_the_default_follows_the_family_of_the_recorded_model() -> None:
    deepseek = _reasoning_trace("deepseek/deepseek-chat")
    parts = build_parts(_spec(deepseek), deepseek)
    assert isinstance(parts.true_counter, ReasoningCounter)
    assert parts.true_counter.rule == "tool_turns"
    openai = _reasoning_trace("gpt-4o")
    assert build_parts(_spec(openai), openai).true_counter.rule == "none"  # type: ignore[attr-defined]
    unknown = _reasoning_trace("")
    assert build_parts(_spec(unknown), unknown).true_counter is get_counter("hf:qwen2.5")


def test_an_explicit_rule_wins_and_changes_what_the_provider_counts() -> None:
    trace = _reasoning_trace("deepseek-chat")
    rows = {
        rule: run_spec(_spec(trace, reasoning=rule), trace).result.to_row()
        for rule in ("", "none", "all")
    }
    # every assistant message made a tool call: tool_turns (DeepSeek's rule) keeps it all
    assert rows[""]["input_tokens_total"] == rows["all"]["input_tokens_total"]
    assert rows["none"]["input_tokens_total"] < rows[""]["input_tokens_total"]


def test_exact_estimators_follow_the_rule_and_framework_estimators_do_not() -> None:
    trace = _reasoning_trace("deepseek-chat")
    exact = build_parts(_spec(trace, estimator="tiktoken:o200k_base", reasoning="none"), trace)
    assert isinstance(exact.estimator, ReasoningCounter) and exact.estimator.rule == "none"
    framework = build_parts(_spec(trace, estimator="hermes", reasoning="none"), trace)
    assert framework.estimator is get_counter("hermes")


def _write(tmp_path: Path, *traces: Trace) -> Path:
    path = tmp_path / "t.jsonl"
    write_traces(path, list(traces))
    return path


def test_run_auto_says_the_counter_and_rule_it_picked_and_warns_on_pooling(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, _reasoning_trace("deepseek-chat", "a"), _reasoning_trace("gpt-4o", "b"))
    args = ["run", str(path), "-s", "none", "-w", "128k", "--counter", "auto", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "auto: deepseek-chat -> hf:deepseek-v3.1, reasoning tool_turns" in result.stderr
    assert "auto: gpt-4o -> tiktoken:o200k_base, reasoning none" in result.stderr
    assert "warning: these traces come from 2 models" in result.stderr
    ruled = CliRunner().invoke(cli, [*args, "--reasoning", "all"])
    assert "reasoning all (--reasoning)" in ruled.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    ruled_rows = [json.loads(line) for line in ruled.stdout.splitlines()]
    # gpt-4o's rule (none) drops the reasoning that `--reasoning all` counts
    assert ruled_rows[1]["input_tokens_total"] > rows[1]["input_tokens_total"]
    assert json.loads(ruled_rows[1]["spec"])["reasoning"] == "all"
    assert "reasoning" not in json.loads(rows[1]["spec"])


def _sweep(tmp_path: Path, top: str, traces: Path) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(
        f'windows = [128000]\n{top}\n[[traces]]\npath = "{traces.name}"\n'
        '[[strategies]]\nname = "none"\n',
        encoding="utf-8",
    )
    return path


def test_a_sweep_file_sets_the_rule_and_checks_it(tmp_path: Path) -> None:
    traces = _write(tmp_path, _reasoning_trace("deepseek-chat"))
    spec = load_sweep(_sweep(tmp_path, 'reasoning = "none"', traces))
    assert {c.reasoning for c in spec.configs()} == {"none"}
    assert spec.to_dict()["reasoning"] == "none"
    assert "reasoning" not in load_sweep(_sweep(tmp_path, "", traces)).to_dict()
    with pytest.raises(ConfigError, match="unknown reasoning rule") as info:
        load_sweep(_sweep(tmp_path, 'reasoning = "nope"', traces))
    assert info.value.key == "reasoning"


def test_a_sweep_with_auto_counters_picks_per_trace_and_refuses_mixing(tmp_path: Path) -> None:
    from ctxbench.sweep import plan

    traces = _write(
        tmp_path, _reasoning_trace("deepseek-chat", "a"), _reasoning_trace("gpt-4o", "b")
    )
    planned = plan(load_sweep(_sweep(tmp_path, 'counters = ["auto"]', traces)))
    counters = {e.trace_id: e.cell(planned.configs[0]).counter for e in planned.entries}
    assert counters == {"a": "hf:deepseek-v3.1", "b": "tiktoken:o200k_base"}
    tasks = list(planned.tasks(skip=set(), batch=4, prices={}))
    assert sorted(t.cells[0].counter for t in tasks) == sorted(counters.values())
    with pytest.raises(ConfigError, match="with other counters"):
        load_sweep(_sweep(tmp_path, 'counters = ["auto", "chars4"]', traces))


def test_a_sweep_with_auto_says_what_it_picked_and_warns_on_pooling(tmp_path: Path) -> None:
    traces = _write(
        tmp_path, _reasoning_trace("deepseek-chat", "a"), _reasoning_trace("gpt-4o", "b")
    )
    sweep_file = _sweep(tmp_path, 'counters = ["auto"]', traces)
    result = CliRunner().invoke(cli, ["sweep", str(sweep_file), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "auto: deepseek-chat -> hf:deepseek-v3.1, reasoning tool_turns" in result.stderr
    assert "auto: gpt-4o -> tiktoken:o200k_base, reasoning none" in result.stderr
    assert "warning: these traces come from 2 models" in result.stderr
    ruled = _sweep(tmp_path, 'counters = ["auto"]\nreasoning = "all"', traces)
    said = CliRunner().invoke(cli, ["sweep", str(ruled), "--dry-run"]).stderr
    assert "auto: gpt-4o -> tiktoken:o200k_base, reasoning all (sweep file)" in said


def test_a_sweep_with_auto_runs_each_trace_with_its_models_counter(tmp_path: Path) -> None:
    from ctxbench.results import ResultsDir

    traces = _write(
        tmp_path, _reasoning_trace("deepseek-chat", "a"), _reasoning_trace("gpt-4o", "b")
    )
    sweep_file = _sweep(tmp_path, 'counters = ["auto"]', traces)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["sweep", str(sweep_file), "-o", str(out), "-j", "1", "-q"])
    assert result.exit_code == 0, result.output
    counters = {r.trace_id: r.counter for r in ResultsDir(out).results()}
    assert counters == {"a": "hf:deepseek-v3.1", "b": "tiktoken:o200k_base"}
