"""OpenHands V0 condensers (LLMSummarizingCondenser, AmortizedForgettingCondenser): one test per
rule of the source."""

from __future__ import annotations

import pytest

from ctxbench.errors import ConfigError
from ctxbench.pairing import pairing_violations
from ctxbench.strategies import build_strategy
from ctxbench.strategies.openhands import (
    NO_SUMMARY,
    SUMMARY_SECTIONS,
    TRUNCATION_MARKER,
    OpenHandsAmortizedConfig,
    OpenHandsSummarizingConfig,
    truncate_content,
)
from ctxbench.trace import Message
from tests.factories import react_trace, tool_trace
from tests.replaying import Failing, Recording, compactions, run


def events(view: tuple[Message, ...]) -> list[Message]:
    return [m for m in view if m.role != "system"]


# -- LLMSummarizingCondenser -------------------------------------------------------------------


def test_summarizing_defaults_match_the_condenser_config() -> None:
    cfg = OpenHandsSummarizingConfig()
    assert (cfg.max_size, cfg.keep_first, cfg.max_event_length) == (100, 1, 10_000)


@pytest.mark.parametrize("name", ["openhands_summarizing", "openhands_amortized"])
def test_keep_first_must_be_less_than_half_of_max_size(name: str) -> None:
    with pytest.raises(ConfigError, match="less than half"):
        build_strategy(name, {"max_size": 10, "keep_first": 5})
    build_strategy(name, {"max_size": 10, "keep_first": 4})


def test_condenses_only_when_the_view_has_more_than_max_size_events() -> None:
    # tool_trace(n, calls=2) has 1 + 3k events before call k: 10 at the last call of n=3
    out = run(
        tool_trace(3, calls=2),
        "openhands_summarizing",
        100_000,
        summarizer=Recording(),
        max_size=10,
    )
    assert compactions(out) == []
    out = run(
        tool_trace(4, calls=2),
        "openhands_summarizing",
        100_000,
        summarizer=Recording(),
        max_size=10,
    )
    assert [c["messages_before"] - 1 for c in compactions(out)] == [13]


def test_head_summary_and_tail_make_half_of_max_size() -> None:
    out = run(react_trace(5), "openhands_summarizing", 100_000, summarizer=Recording(), max_size=10)
    after = compactions(out)[0]["messages_after"] - 1  # minus the system message
    assert after == 10 // 2  # keep_first 1 + summary 1 + tail 10 // 2 - 1 - 1


def test_summary_event_follows_the_head_as_a_user_message() -> None:
    out = run(react_trace(5), "openhands_summarizing", 100_000, summarizer=Recording(), max_size=10)
    view = events(out.final_view)
    assert view[0].content == "Report revenue by region for 2024."  # keep_first = the task
    assert view[1].role == "user" and "## USER_CONTEXT" in view[1].content


def test_prompt_has_the_sections_previous_summary_and_event_blocks() -> None:
    summarizer = Recording()
    run(react_trace(12), "openhands_summarizing", 100_000, summarizer=summarizer, max_size=10)
    first, second = summarizer.requests[0], summarizer.requests[1]
    assert first.sections == SUMMARY_SECTIONS
    assert f"<PREVIOUS SUMMARY>\n{NO_SUMMARY}\n</PREVIOUS SUMMARY>" in first.prompt
    assert "<EVENT id=0>" in first.prompt
    assert first.prompt.endswith("Now summarize the events using the rules above.")
    assert "VERSION_CONTROL_STATUS" in first.prompt
    assert second.previous_summary is not None
    assert second.previous_summary in second.prompt
    assert all(m.content != second.previous_summary for m in second.messages)


def test_events_are_truncated_in_the_middle_to_max_event_length() -> None:
    assert truncate_content("abcdefgh", 4) == "ab" + TRUNCATION_MARKER + "gh"
    assert truncate_content("abcd", 4) == "abcd"
    summarizer = Recording()
    trace = react_trace(5, observation="y" * 500)
    run(
        trace,
        "openhands_summarizing",
        100_000,
        summarizer=summarizer,
        max_size=10,
        max_event_length=100,
    )
    assert TRUNCATION_MARKER in summarizer.requests[0].prompt
    assert "y" * 200 not in summarizer.requests[0].prompt


def test_parallel_tool_pairs_stay_whole_across_the_tail_boundary() -> None:
    for max_size in (8, 9, 10, 11):
        out = run(
            tool_trace(12, calls=3),
            "openhands_summarizing",
            100_000,
            summarizer=Recording(),
            max_size=max_size,
        )
        assert compactions(out)
        assert out.result.pairing_violations == 0
        assert pairing_violations(out.final_view) == 0


def test_a_failing_summarizer_leaves_the_prompt_unchanged() -> None:
    out = run(react_trace(8), "openhands_summarizing", 100_000, summarizer=Failing(), max_size=10)
    assert compactions(out) == []


# -- AmortizedForgettingCondenser --------------------------------------------------------------


def test_amortized_defaults_are_the_config_class_values() -> None:
    cfg = OpenHandsAmortizedConfig()
    assert (cfg.max_size, cfg.keep_first) == (100, 1)


def test_amortized_keeps_the_head_and_a_tail_of_half_max_size_without_summary() -> None:
    out = run(react_trace(5), "openhands_amortized", 100_000, max_size=10)
    first = compactions(out)[0]
    assert first["messages_before"] - 1 == 11
    assert first["messages_after"] - 1 == 10 // 2  # head 1 + tail 4
    assert out.result.summary_calls == 0
    assert events(out.final_view)[0].content == "Report revenue by region for 2024."


def test_amortized_does_nothing_at_or_below_max_size() -> None:
    assert compactions(run(react_trace(4), "openhands_amortized", 100_000, max_size=10)) == []


def test_amortized_keeps_parallel_pairs_whole() -> None:
    for max_size in (6, 7, 8, 9):
        out = run(tool_trace(10, calls=2), "openhands_amortized", 100_000, max_size=max_size)
        assert compactions(out)
        assert pairing_violations(out.final_view) == 0
