"""``shipped:langchain_summarization@1.5.2`` and ``shipped:langchain_clear_tool_uses@1.5.2`` on
the released wheel. The parity checks port langchain's own unit tests of the two middlewares
(``libs/langchain_v1/tests/unit_tests/agents/middleware/implementations/test_summarization.py``
and ``test_context_editing.py``): the summary message replaces the summarized part of the state
and the kept messages follow it, an AI message is never cut from its tool results, the cleared
results read ``[cleared]`` except the ``keep`` newest, ``clear_tool_inputs`` empties their calls'
arguments. Every embedded scenario and a recorded trace of every source: ``test_every_release.py``."""

from __future__ import annotations

import json
from pathlib import Path

from ctxbench import parity
from ctxbench.cell.traces import open_traces
from ctxbench.shipped.langchain_v1 import (
    ShippedLangChainClearToolUses,
    ShippedLangChainSummarization,
)
from ctxbench.shipped.releases import LANGCHAIN_SUMMARIZATION, LANGCHAIN_SUMMARIZATION_1_1
from tests.factories import tool_trace
from tests.shipped_cases import (
    SOURCES,
    needs,
    prompts,
    replay_events,
)

pytestmark = needs(LANGCHAIN_SUMMARIZATION)
SUMMARIZE = "shipped:langchain_summarization@1.5.2"
CLEAR = "shipped:langchain_clear_tool_uses@1.5.2"
SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"


def test_the_summary_replaces_the_state_and_the_kept_messages_follow_it() -> None:
    # test_summarization.py: trigger ("messages", N), keep ("messages", K): the state becomes
    # [summary, *last K] (the system prompt stays outside the state)
    trace = tool_trace(12, output="x" * 400)
    sent = prompts(
        ShippedLangChainSummarization, trace, 32_768, trigger_fraction=None, trigger_messages=10,
        keep_value=4,
    )  # fmt: skip
    first = next(p for p in sent if any(m.content.startswith(SUMMARY_PREFIX) for m in p))
    assert first[0].role == "system"
    assert first[1].role == "user" and first[1].content.startswith(SUMMARY_PREFIX)
    assert 4 <= len(first) - 2 <= 5  # the 4 kept, the cutoff moved back to keep a pair whole
    assert first[2].role != "tool"  # _find_safe_cutoff_point: no tool result without its call
    events = replay_events(
        trace, SUMMARIZE, 32_768, trigger_fraction=None, trigger_messages=10, keep_value=4
    )
    summaries = [e for e in events if e["type"] == "summary"]
    assert summaries and all(s["ok"] and s["layer"] == "summarization" for s in summaries)


def test_without_a_trigger_the_middleware_never_summarizes() -> None:
    # SummarizationMiddleware(trigger=None), the release default: before_model returns None
    events = replay_events(tool_trace(12, output="x" * 400), SUMMARIZE, 32_768,
                           trigger_fraction=None)  # fmt: skip
    assert not [e for e in events if e["type"] in ("summary", "compaction")]


def test_a_met_trigger_waits_until_more_than_keep_messages_are_in_the_state() -> None:
    # count_tokens_approximately passes 3,000 tokens by call 6 (~500 a result), but with
    # keep ("messages", 20) _find_safe_cutoff returns 0 until the state holds 21 messages:
    # call c holds the task and 2c messages, so the first summary is at call 10
    trace = tool_trace(12, output="y" * 2_000)
    events = replay_events(trace, SUMMARIZE, 65_536, trigger_fraction=None, trigger_tokens=3_000)
    compactions = [e for e in events if e["type"] == "compaction"]
    assert compactions and compactions[0]["call"] == 10
    fewer = replay_events(
        trace, SUMMARIZE, 65_536, trigger_fraction=None, trigger_tokens=3_000, keep_value=6
    )
    assert next(e for e in fewer if e["type"] == "compaction")["call"] == 6


def test_clear_tool_uses_leaves_the_keep_newest_results() -> None:
    # test_context_editing.py: over the trigger every result but the `keep` newest is cleared
    trace = tool_trace(6, output="z" * 800)
    last = prompts(ShippedLangChainClearToolUses, trace, 32_768, trigger=100, keep=2)[-1]
    results = [m.content for m in last if m.role == "tool"]
    assert results[:4] == ["[cleared]"] * 4
    assert results[4:] == ["z" * 800 + " 4.0", "z" * 800 + " 5.0"]
    # under the release's trigger (100,000 tokens) nothing is cleared
    default = prompts(ShippedLangChainClearToolUses, trace, 32_768)[-1]
    assert all(m.content.startswith("z" * 800) for m in default if m.role == "tool")


def test_clear_tool_inputs_empties_the_cleared_calls_arguments() -> None:
    trace = tool_trace(4, output="z" * 800)
    last = prompts(
        ShippedLangChainClearToolUses, trace, 32_768, trigger=100, keep=1, clear_tool_inputs=True
    )[-1]
    calls = [c for m in last if m.role == "assistant" for c in m.tool_calls]
    assert [json.loads(c.arguments) for c in calls[:3]] == [{}, {}, {}]
    assert json.loads(calls[3].arguments) == {"cmd": "step 3.0"}


CODEX = SOURCES[6]  # a Codex rollout: 66 calls, provider-reported usage far above chars/4


@needs(LANGCHAIN_SUMMARIZATION_1_1)
def test_parity_between_releases_shows_what_1_5_2_changed(shared_traces: Path) -> None:
    # the README's example: 1.1.0 triggers on count_tokens_approximately alone; 1.5.2 scales
    # it by the last AI message's reported usage (and triggers on the reported tokens), so it
    # summarizes before the provider overflows
    trace = next(iter(open_traces(shared_traces / CODEX).traces()))
    (result,) = parity.parity(
        [trace], "shipped:langchain_summarization@1.1.0", SUMMARIZE, window=65_536, reserved=1024
    )
    assert result.first_divergence is not None and result.first_divergence["call"] == 14
    older, newer = result.failed
    assert older > 0 and newer == 0
