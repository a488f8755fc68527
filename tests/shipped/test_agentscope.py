"""``shipped:agentscope@2.0.11`` on the released wheel: the real ``Agent.reply()`` compresses at
``trigger_ratio`` of the whole-prompt estimate, re-injects the time after every compression,
has no offloader by default, truncates big tool results with the release's reminder, ends the
reply on an empty-context ``RuntimeError`` (RELEASES.md, AgentScope 2.0.11); and a run on
every embedded scenario and a recorded trace of every shared source."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.strategy import ProviderCall
from ctxbench.errors import ConfigError
from ctxbench.shipped.agentscope import ShippedAgentScope
from ctxbench.shipped.releases import AGENTSCOPE
from ctxbench.trace import Message, ToolCall, Trace
from tests.factories import tool_trace
from tests.shipped_cases import (
    needs,
    replay_events,
    scenario_trace,
)

NAME = "shipped:agentscope@2.0.11"


@pytest.fixture(scope="module")
def coding_run() -> list[dict[str, Any]]:
    return replay_events(scenario_trace("research_agent", 24), NAME, 8_192)


def _steps(events: list[dict[str, Any]], layer: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "compaction" and e["layer"] == layer]


@needs(AGENTSCOPE)
def test_compresses_at_the_trigger_of_the_whole_prompt_estimate(
    coding_run: list[dict[str, Any]],
) -> None:
    compressions = _steps(coding_run, "compression")
    assert compressions, "the research scenario passes 0.8 of an 8k window"
    info = {e["call"]: e["info"] for e in coding_run if e["type"] == "shipped.call"}
    threshold = 0.8 * 8_192
    for event in compressions:
        # the model call after the compression is back under the trigger
        assert info[event["call"]]["agentscope_tokens"] < threshold
        assert event["true_after"] < event["true_before"]
    quiet = [c for c, i in info.items() if c not in {e["call"] for e in compressions}]
    assert all(info[c]["agentscope_tokens"] < threshold + 2_000 for c in quiet)


@needs(AGENTSCOPE)
def test_time_is_reinjected_after_every_compression_and_only_then(
    coding_run: list[dict[str, Any]],
) -> None:
    timed = {e["call"] for e in _steps(coding_run, "runtime_state") if "current-time" in e["note"]}
    compressed = {e["call"] for e in _steps(coding_run, "compression")}
    assert 0 in timed  # no time in the context at the first call
    assert compressed and timed - {0} == compressed  # the 0.5 h interval never elapses


class Capturing(ShippedAgentScope):
    """The release, with the prompt of every accepted call kept (a plug-in strategy)."""

    sent: ClassVar[list[tuple[Message, ...]]] = []

    def after_call(self, call: ProviderCall, ctx: ReplayContext) -> None:
        super().after_call(call, ctx)
        if call.accepted:
            Capturing.sent.append(tuple(ctx.view.messages))


def _prompts(trace: Trace, window: int, **params: Any) -> list[tuple[Message, ...]]:
    Capturing.sent = []
    spec = resolve_spec(
        RunSpec(
            trace.id, trace.content_hash, f"{__name__}:Capturing", params, window, reserved=1024
        )
    )
    run_spec(spec, trace)
    return Capturing.sent


@needs(AGENTSCOPE)
def test_tool_results_over_the_limit_are_cut_with_the_reminder_and_no_offload_path() -> None:
    trace = tool_trace(6, output="x" * 4_000)
    events = replay_events(trace, NAME, 32_768, tool_result_limit=200)
    cut = _steps(events, "tool_result_limit")
    assert len(cut) == 6 and all(e["true_after"] < e["true_before"] for e in cut)
    results = [m for m in _prompts(trace, 32_768, tool_result_limit=200)[-1] if m.role == "tool"]
    reminder = (
        "\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for "
        "limited context.</system-reminder>"
    )
    assert len(results) == 6 and all(m.content.endswith(reminder) for m in results)
    assert all(len(m.content) < 1_000 for m in results)  # 200 tokens of bytes/4 kept


@needs(AGENTSCOPE)
def test_a_recorded_call_whose_arguments_are_no_json_object_still_gets_its_output() -> None:
    # a Codex freeform apply_patch (codemie-code's rollout, call 41 at 32k and 64k): the release
    # would answer its ToolJSONDecodeError reminder; the recorded call happened, with this output
    patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-old\n+new\n*** End Patch\n"
    calls = [ToolCall("p1", "apply_patch", patch), ToolCall("p2", "apply_patch", '"a string"')]
    trace = Trace(
        "freeform",
        (
            Message("system", "You are a careful agent."),
            Message("user", "Fix the bug"),
            *[
                m
                for call in calls
                for m in (
                    Message("assistant", "Patching.", tool_calls=(call,)),
                    Message(
                        "tool", f"Success. Updated src/app.py ({call.id})", tool_call_id=call.id
                    ),
                )
            ],
            Message("assistant", "Done."),
        ),
    )
    assert not _steps(replay_events(trace, NAME, 32_768), "tool_result_limit")
    results = [m.content for m in _prompts(trace, 32_768)[-1] if m.role == "tool"]
    assert results == ["Success. Updated src/app.py (p1)", "Success. Updated src/app.py (p2)"]


@needs(AGENTSCOPE)
def test_the_summary_carries_no_offload_reminder_without_an_offloader() -> None:
    summaries = [
        m
        for prompt in _prompts(scenario_trace("research_agent", 24), 8_192)
        for m in prompt
        if m.content.startswith("<system-info>Here is a summary")
    ]
    assert summaries and not [m for m in summaries if "offloaded" in m.content]


@needs(AGENTSCOPE)
@pytest.mark.parametrize("strategy", ["agentscope", NAME])
def test_an_empty_context_over_the_threshold_ends_the_reply(strategy: str) -> None:
    big = "The system prompt. " * 2_000  # ~9,500 estimated tokens, over 0.8 of 8k
    trace = Trace(
        "empty",
        (
            Message("system", big),
            Message("assistant", "one"),  # the first reply has no input: its context is empty
            Message("assistant", "two"),  # still that reply: it ended
            Message("user", "three"),  # a new reply: its input is compressed into the summary
            Message("assistant", "four"),
        ),
    )
    events = replay_events(trace, strategy, 16_384, context_size=8_192)
    failed = {e["call"]: e for e in events if e["type"] == "call.failed"}
    assert sorted(failed) == [0, 1]
    errors = [e.get("exception") or e.get("error") or "" for e in failed.values()]
    assert "RuntimeError: The system prompt exceed(s) the compression threshold" in errors[0]
    assert [e["call"] for e in _steps(events, "compression")] == [2]


def test_context_buffer_ratio_must_stay_under_trigger_ratio_while_injecting() -> None:
    with pytest.raises(ConfigError, match="context_buffer_ratio"):
        _config(0.8, True)
    _config(0.8, False)  # without injection or the compression tool the release accepts it


def _config(buffer: float, inject: bool) -> None:
    from ctxbench import config as configuration
    from ctxbench.shipped.agentscope import AgentScopeReleaseConfig

    configuration.build(
        AgentScopeReleaseConfig,
        {"context_buffer_ratio": buffer, "inject_runtime_state": inject},
        source="test",
    )
