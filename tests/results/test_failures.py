"""Why a run's calls failed, in one line: how many, the first (its size against the limit),
the strategy's own errors, its last compaction, and the strategy's hint for an error it knows."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cell.runner import run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.cli import cli
from ctxbench.engine.replay import ReplayOutput
from ctxbench.formats.canonical import write_traces
from ctxbench.results.failures import failure_story
from ctxbench.strategies.dbgpt.strategy import MODEL_NAME_ERROR, DbgptStrategy
from ctxbench.synth import generate, load_scenario
from ctxbench.trace import Trace


@pytest.fixture(scope="module")
def coding() -> Trace:
    return next(generate(load_scenario("coding_agent"), 1))


def replay(trace: Trace, strategy: str, window: int, **params: object) -> ReplayOutput:
    return run_spec(RunSpec(trace.id, trace.content_hash, strategy, params, window=window), trace)


def test_a_run_without_failed_calls_tells_nothing(coding: Trace) -> None:
    output = replay(coding, "none", 1_000_000)
    story = failure_story(output.result.calls, output.events)
    assert story.failed == 0 and story.first is None
    assert story.describe(coding.id, DbgptStrategy.failure_hints) == ""


def test_dbgpt_0_8_2_at_32k_fails_after_its_layer3_defect_and_says_how_to_get_around_it(
    coding: Trace,
) -> None:
    output = replay(coding, "dbgpt", 32_768)
    result = output.result
    story = failure_story(result.calls, output.events)
    assert story.failed == result.failed_calls > 0
    assert story.first is not None and story.first.call == result.first_failed_call
    assert story.first.true_tokens > story.first.limit
    assert [e.layer for e in story.errors] == ["layer3"] * 3  # max_compact_failures
    assert all(e.error == MODEL_NAME_ERROR for e in story.errors)
    line = story.describe(coding.id, DbgptStrategy.failure_hints)
    head, hint = line.split("\n")
    assert head.startswith(f"{coding.id}: {result.failed_calls} of {result.calls} calls failed")
    assert f"the first at call {result.first_failed_call} (" in head
    assert f"{story.first.true_tokens:,} true tokens > limit {story.first.limit:,}" in head
    assert "failed 3 time(s) (layer3, calls" in head and "model_name" in head
    assert "patch_model_name=true" in hint and "release=design" in hint
    # the hint is the strategy's: no hint for errors it does not know
    assert "\n" not in story.describe(coding.id, {"no such error": "never shown"})


def test_the_designed_release_fails_no_call_where_0_8_2_does(coding: Trace) -> None:
    """The hint's way around: the designed four layers keep every call under 32k."""
    output = replay(coding, "dbgpt", 32_768, release="design")
    assert output.result.failed_calls == 0
    assert failure_story(output.result.calls, output.events).describe(coding.id) == ""


def test_run_prints_why_calls_failed_under_its_table(coding: Trace, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_traces(path, [coding])
    result = CliRunner().invoke(cli, ["run", str(path), "-s", "dbgpt", "-w", "32k", "--quiet"])
    assert result.exit_code == 0, result.output
    warning = next(line for line in result.output.splitlines() if "calls failed" in line)
    assert warning.startswith(f"warning: {coding.id}: ")
    assert "  hint: DB-GPT 0.8.2's Layer 3 raises at manager.py:160" in result.output
    quiet = CliRunner().invoke(
        cli, ["run", str(path), "-s", "dbgpt", "--set", "release=design", "-w", "32k"]
    )
    assert quiet.exit_code == 0 and "calls failed" not in quiet.output
