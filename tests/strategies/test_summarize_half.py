"""summarize_half: the ContextManager article's build_for_llm / _compact contract, one test per rule."""

from __future__ import annotations

import pytest

from ctxbench.errors import ConfigError
from ctxbench.pairing import pairing_violations, rounds
from ctxbench.strategies import build_strategy
from ctxbench.strategies.summarize_half import (
    SUMMARY_HEADING,
    SUMMARY_SECTIONS,
    SummarizeHalfConfig,
    split_old_recent,
)
from ctxbench.trace import Message, Trace
from tests.factories import tool_trace
from tests.replaying import Failing, Recording, compactions, run

BIG = "x" * 400  # about 100 chars4 tokens per tool result


def view_before_call(trace: Trace, call: int) -> list[Message]:
    return list(trace.messages[: trace.call_indices[call]])


def test_defaults_follow_the_document() -> None:
    cfg = SummarizeHalfConfig()
    assert cfg.summarize_fraction == 0.5
    assert cfg.keep_recent_tool_rounds == 3
    assert cfg.token_budget is None


def test_no_compaction_while_the_estimate_is_within_the_budget() -> None:
    out = run(tool_trace(6, output=BIG), "summarize_half", 100_000, summarizer=Recording())
    assert compactions(out) == []


def test_compacts_when_the_estimate_exceeds_the_token_budget() -> None:
    trace = tool_trace(12, output=BIG)
    out = run(trace, "summarize_half", 100_000, summarizer=Recording(), token_budget=600)
    first = compactions(out)[0]
    assert first["est_before"] > 600
    assert all(e["est_before"] > 600 for e in compactions(out))


def test_summarises_the_oldest_half_of_the_rounds() -> None:
    trace = tool_trace(12, output=BIG)
    summarizer = Recording()
    out = run(trace, "summarize_half", 100_000, summarizer=summarizer, token_budget=600)
    rest = [m for m in view_before_call(trace, compactions(out)[0]["call"]) if m.role != "system"]
    segs = rounds(rest)
    old = [rest[i] for seg in segs[: len(segs) // 2] for i in seg.indices]
    assert list(summarizer.requests[0].messages) == old


def test_never_summarises_the_last_keep_recent_tool_rounds() -> None:
    msgs = list(tool_trace(4, output=BIG).messages[1:-1])
    old, recent = split_old_recent(msgs, 1.0, 3)
    assert len(rounds(recent)) == 3
    assert old + recent == msgs


def test_summary_message_goes_between_the_system_message_and_the_recent_rounds() -> None:
    trace = tool_trace(12, output=BIG)
    out = run(trace, "summarize_half", 100_000, summarizer=Recording(), token_budget=600)
    view = out.final_view
    assert view[0].role == "system"
    assert view[1].role == "user" and view[1].content.startswith(SUMMARY_HEADING)
    assert all(not m.content.startswith(SUMMARY_HEADING) for m in view[2:])


def test_summary_prompt_asks_to_keep_unfinished_tasks_and_key_facts() -> None:
    summarizer = Recording()
    run(
        tool_trace(12, output=BIG),
        "summarize_half",
        100_000,
        summarizer=summarizer,
        token_budget=600,
    )
    request = summarizer.requests[0]
    assert "unfinished task" in request.prompt and "key fact" in request.prompt
    assert request.sections == SUMMARY_SECTIONS
    assert "step 0.0" in request.prompt  # the serialised history is in the prompt


def test_previous_summary_is_folded_into_the_next_one() -> None:
    summarizer = Recording()
    run(
        tool_trace(20, output=BIG),
        "summarize_half",
        100_000,
        summarizer=summarizer,
        token_budget=600,
    )
    assert len(summarizer.requests) >= 2
    assert summarizer.requests[1].messages[0].content.startswith(SUMMARY_HEADING)


def test_parallel_calls_stay_paired() -> None:
    trace = tool_trace(10, output=BIG, calls=3)
    out = run(trace, "summarize_half", 100_000, summarizer=Recording(), token_budget=900)
    assert compactions(out)
    assert out.result.pairing_violations == 0
    assert pairing_violations(out.final_view) == 0


def test_without_a_summarizer_the_old_rounds_are_dropped() -> None:
    out = run(tool_trace(12, output=BIG), "summarize_half", 100_000, token_budget=600)
    first = compactions(out)[0]
    assert first["messages_after"] < first["messages_before"]
    assert not any(m.content.startswith(SUMMARY_HEADING) for m in out.final_view)


def test_a_failing_summarizer_drops_old_rounds_or_keeps_the_prompt_as_configured() -> None:
    trace = tool_trace(12, output=BIG)
    dropped = run(trace, "summarize_half", 100_000, summarizer=Failing(), token_budget=600)
    assert compactions(dropped)
    kept = run(
        trace,
        "summarize_half",
        100_000,
        summarizer=Failing(),
        token_budget=600,
        on_summary_failure="keep",
    )
    assert compactions(kept) == []


def test_summary_role_can_be_system_and_is_still_folded() -> None:
    summarizer = Recording()
    out = run(
        tool_trace(20, output=BIG),
        "summarize_half",
        100_000,
        summarizer=summarizer,
        token_budget=600,
        summary_role="system",
    )
    summaries_in_view = [m for m in out.final_view if m.content.startswith(SUMMARY_HEADING)]
    assert len(summaries_in_view) == 1 and summaries_in_view[0].role == "system"
    assert out.result.system_kept


@pytest.mark.parametrize(
    "params", [{"summarize_fraction": 0.0}, {"keep_recent_tool_rounds": -1}, {"token_budget": 0}]
)
def test_invalid_knobs_are_config_errors(params: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        build_strategy("summarize_half", params)
