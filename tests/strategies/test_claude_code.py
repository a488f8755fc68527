"""claude_code: Claude Code auto-compact as described by secondary sources, one test per rule."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ctxbench.counting import get_counter
from ctxbench.counting.base import TokenCounter
from ctxbench.engine.events import DECISION
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import ReplayOutput
from ctxbench.engine.replay import replay as engine_replay
from ctxbench.errors import ConfigError, SummarizerError
from ctxbench.pairing import pairing_violations
from ctxbench.strategies import build_strategy
from ctxbench.strategies.claude_code import (
    CAPPED_RESERVE_SINCE,
    CONTINUATION,
    MICROCOMPACT_PLACEHOLDER,
    MICROCOMPACT_TOOLS,
    SUMMARY_SECTIONS,
    ClaudeCode,
    ClaudeCodeConfig,
    format_summary,
    microcompact,
    parse_version,
)
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import Message, ToolCall, Trace, Usage
from tests.factories import tool_trace
from tests.replaying import CHARS4, Failing, Recording, compactions, run, summaries

CLAUDE = get_counter("claude_code")
BIG = "x" * 900


@dataclass
class Window:
    window: int
    reserved: int


def threshold(window: int, reserved: int, **params: object) -> int:
    strategy = build_strategy("claude_code", params)
    assert isinstance(strategy, ClaudeCode)
    return strategy.threshold(Window(window, reserved))  # type: ignore[arg-type]


def replay(trace: Trace, **kwargs: object):  # type: ignore[no-untyped-def]
    return run(trace, "claude_code", 20_000, reserved=1_000, estimator=CLAUDE, **kwargs)  # type: ignore[arg-type]


def test_defaults_follow_the_secondary_sources() -> None:
    cfg = ClaudeCodeConfig()
    assert (cfg.buffer_tokens, cfg.summary_output_reserve, cfg.max_consecutive_failures) == (
        13_000,
        20_000,
        3,
    )
    assert cfg.microcompact is False and cfg.microcompact_keep_recent == 5
    assert cfg.microcompact_tools == MICROCOMPACT_TOOLS
    assert ClaudeCode.default_estimator == "claude_code"


def test_threshold_is_effective_window_minus_the_buffer() -> None:
    assert threshold(200_000, 32_000) == 200_000 - 20_000 - 13_000  # about 167K
    assert threshold(200_000, 8_000) == 200_000 - 8_000 - 13_000
    assert threshold(200_000, 8_000, max_output_tokens=64_000) == 167_000


def test_auto_compact_window_can_only_lower_the_window() -> None:
    assert threshold(200_000, 32_000, auto_compact_window=100_000) == 100_000 - 33_000
    assert threshold(200_000, 32_000, auto_compact_window=500_000) == 167_000


def test_pct_override_can_only_lower_the_threshold() -> None:
    assert threshold(200_000, 32_000, autocompact_pct_override=50) == 90_000
    assert threshold(200_000, 32_000, autocompact_pct_override=99) == 167_000


def test_the_estimate_is_chars_over_4_times_4_over_3() -> None:
    assert CLAUDE.count("x" * 300) == 100
    assert CLAUDE.count("x" * 301) == 101


def test_summary_replaces_the_whole_history_after_the_system_prompt() -> None:
    out = replay(tool_trace(30, output=BIG), summarizer=Recording())
    first = compactions(out, "autocompact")[0]
    assert first["est_before"] >= 20_000 - 1_000 - 13_000
    assert first["messages_after"] == 2
    summary_at = next(i for i, m in enumerate(out.final_view) if m.content.startswith(CONTINUATION))
    assert out.final_view[0].role == "system" and summary_at == 1
    assert out.final_view[1].role == "user"


def test_the_prompt_asks_for_the_nine_sections() -> None:
    summarizer = Recording()
    replay(tool_trace(30, output=BIG), summarizer=summarizer)
    request = summarizer.requests[0]
    assert request.sections == SUMMARY_SECTIONS and len(SUMMARY_SECTIONS) == 9
    assert "9. Optional Next Step" in request.prompt and "<analysis>" in request.prompt


def test_the_analysis_scratchpad_is_stripped() -> None:
    assert format_summary("<analysis>thinking</analysis>\n<summary>S</summary>") == "S"


def test_circuit_breaker_stops_after_three_consecutive_failures() -> None:
    out = replay(tool_trace(40, output=BIG), summarizer=Failing())
    attempts = [s for s in summaries(out) if s["layer"] in ("autocompact", "reactive_compact")]
    assert len(attempts) == 3 and not any(s["ok"] for s in attempts)


def test_a_success_resets_the_failure_count() -> None:
    class FailsTwice(Recording):
        def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
            if len(self.requests) < 2:
                self.requests.append(request)
                raise SummarizerError("down", kind="http")
            return super().summarize(request, counter)

    strategy = ClaudeCode()
    out = engine_replay(
        tool_trace(60, output=BIG),
        strategy,
        SimulatedProvider(20_000, 1_000),
        true_counter=CHARS4,
        estimator=CLAUDE,
        summarizer=FailsTwice(),
    )
    assert [s["ok"] for s in summaries(out)][:3] == [False, False, True]
    assert len(compactions(out, "autocompact")) >= 2  # the breaker never tripped
    assert strategy.failures == 0


def test_disabled_auto_compact_never_compacts() -> None:
    out = replay(
        tool_trace(30, output=BIG), summarizer=Recording(), enabled=False, reactive_compact=False
    )
    assert compactions(out) == []


def test_reactive_compact_retries_once_after_a_prompt_too_long_error() -> None:
    trace = tool_trace(100, output=BIG)
    out = run(
        trace,
        "claude_code",
        20_000,
        reserved=1_000,
        estimator=CLAUDE,
        summarizer=Recording(),
        style="anthropic",
        enabled=False,
    )
    reactive = compactions(out, "reactive_compact")
    assert reactive
    assert out.result.reactive_retries == len(reactive)
    assert out.result.failed_calls == 0


def test_microcompact_clears_old_results_of_the_listed_tools_keeping_the_last_five() -> None:
    msgs: list[Message] = [Message("system", "s"), Message("user", "task")]
    names = ["Read"] * 4 + ["mcp_tool"] + ["Bash"] * 4
    for i, name in enumerate(names):
        msgs.append(Message("assistant", "", tool_calls=(ToolCall(f"c{i}", name, "{}"),)))
        msgs.append(Message("tool", f"out {i}", tool_call_id=f"c{i}"))
    out = microcompact(tuple(msgs), MICROCOMPACT_TOOLS, 5)
    cleared = [m.tool_call_id for m in out if m.content == MICROCOMPACT_PLACEHOLDER]
    assert cleared == ["c0", "c1", "c2"]  # 8 eligible results, the last 5 kept, mcp_tool never
    assert pairing_violations(out) == 0


def test_pairs_stay_whole_with_parallel_calls() -> None:
    out = replay(tool_trace(20, output=BIG, calls=3), summarizer=Recording(), microcompact=True)
    assert compactions(out)
    assert out.result.pairing_violations == 0 and pairing_violations(out.final_view) == 0


# -- the usage-anchored count, the hidden prefix and the per-version reserve ---------------------


def usage_trace(prompts: list[int], outputs: list[int], result: str = "r" * 41) -> Trace:
    """A task, then one call per recorded prompt, each with a tool call and a result."""
    msgs: list[Message] = [Message("user", "do the task")]
    for k, (prompt, output) in enumerate(zip(prompts, outputs)):
        call = ToolCall(f"c{k}", "Read", '{"file_path":"a.py"}')
        msgs.append(Message("assistant", "", tool_calls=(call,), usage=Usage(prompt, output, 0)))
        msgs.append(Message("tool", result, tool_call_id=f"c{k}"))
    msgs.append(Message("assistant", "done", usage=Usage(prompts[-1] + 500, 5, 0)))
    return Trace("usage", tuple(msgs))


def decisions(out: ReplayOutput) -> list[dict[str, object]]:
    return [e.to_dict() for e in out.events if e.type == DECISION]


def test_the_threshold_rule_follows_the_cli_version() -> None:
    assert threshold(200_000, 32_000, cli_version="2.1.39") == 167_000  # the records
    assert threshold(200_000, 32_000, cli_version="2.1.21") == 167_000
    assert threshold(200_000, 32_000, cli_version="2.1.19") == 155_000  # 45k buffer
    assert threshold(200_000, 32_000, cli_version="2.0.30-beta") == 155_000
    assert parse_version("2.1.39") == (2, 1, 39) and CAPPED_RESERVE_SINCE == (2, 1, 21)
    with pytest.raises(ConfigError):
        build_strategy("claude_code", {"cli_version": "latest"})


def test_the_count_is_the_last_usage_plus_chars_over_4_of_newer_messages() -> None:
    prompts, outputs = [26_000, 27_000, 28_000], [40, 50, 60]
    trace = usage_trace(prompts, outputs)
    out = run(trace, "claude_code", 200_000, reserved=32_000, estimator=CLAUDE)
    made = decisions(out)
    assert [d["call"] for d in made] == [0, 1, 2, 3]
    assert made[0]["anchored"] is False  # no call has been made yet
    for k in (1, 2, 3):
        assistant = trace.messages[trace.call_indices[k - 1]]
        output = max(outputs[k - 1], CLAUDE.count_message(assistant))
        newer = -(-41 // 4)  # the tool result after the call, ceil(chars / 4)
        assert made[k]["tokens"] == prompts[k - 1] + output + newer
        assert made[k]["anchored"] is True and made[k]["threshold"] == 167_000


def test_a_recorded_output_below_the_estimate_is_a_streaming_snapshot() -> None:
    trace = usage_trace([30_000, 31_000], [1, 1])
    out = run(trace, "claude_code", 200_000, reserved=32_000, estimator=CLAUDE)
    call = trace.messages[trace.call_indices[0]]
    assert decisions(out)[1]["tokens"] == 30_000 + CLAUDE.count_message(call) + 11


def test_a_shrinking_recorded_prompt_hands_the_count_to_the_provider_and_the_hidden_prefix() -> (
    None
):
    prompts = [26_000, 60_000, 9_000]  # the recorded agent compacted before the third call
    trace = usage_trace(prompts, [40, 40, 40])
    strategy = ClaudeCode()
    out = engine_replay(
        trace,
        strategy,
        SimulatedProvider(200_000, 32_000),
        true_counter=CHARS4,
        estimator=CLAUDE,
    )
    first_request = CHARS4.count_prompt(trace.messages[:1])
    assert strategy.hidden_prefix == 26_000 - first_request
    made = decisions(out)
    assert made[2]["tokens"] == 60_000 + 40 + 11  # still the recorded usage
    provider = [e for e in out.events if e.type == "provider.call" and e.call == 2][-1]
    third = trace.messages[trace.call_indices[2]]
    output = max(40, CLAUDE.count_message(third))
    assert made[3]["tokens"] == strategy.hidden_prefix + provider["true_tokens"] + output + 11


def test_without_usage_anchoring_the_count_is_the_estimate_plus_the_hidden_prefix() -> None:
    trace = usage_trace([26_000, 27_000], [40, 40])
    strategy = ClaudeCode(ClaudeCodeConfig(usage_anchored=False))
    out = engine_replay(
        trace, strategy, SimulatedProvider(200_000, 32_000), true_counter=CHARS4, estimator=CLAUDE
    )
    status = next(e for e in out.events if e.type == "context.status" and e.call == 2)
    assert strategy.hidden_estimate == 26_000 - CLAUDE.count_prompt(trace.messages[:1])
    assert decisions(out)[2]["tokens"] == strategy.hidden_estimate + status["used"]
