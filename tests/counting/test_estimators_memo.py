"""Every estimator's per-message estimate is kept per message object (``message_counts``, and
the strategies' own whole-prompt measures): for every history, and for histories that reuse
earlier messages' objects as a replay does from call to call, the memoised number is the one
the estimator's definition gives when the history is measured from scratch."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from ctxbench.counting import get_counter
from ctxbench.counting.base import TokenCounter, replay_text
from ctxbench.counting.estimators import (
    AgentScopeCounter,
    Chars4Counter,
    ClaudeCodeCounter,
    DbgptCounter,
    HermesCounter,
)
from ctxbench.strategies.agentscope.layers import PerMessage, WholePrompt
from ctxbench.strategies.claude_code import rough_memo, rough_tokens
from ctxbench.trace import Message, ToolSpec
from tests.factories import histories

TOOLS = (ToolSpec("bash", "Run a command", {"type": "object", "properties": {}}),)
ESTIMATORS: dict[str, TokenCounter] = {
    "chars4": Chars4Counter(),
    "dbgpt": DbgptCounter(),
    "dbgpt_cl100k": DbgptCounter(get_counter("tiktoken:cl100k_base")),
    "agentscope": AgentScopeCounter(),
    "hermes": HermesCounter(),
    "claude_code": ClaudeCodeCounter(),
}


@pytest.mark.parametrize("name", ESTIMATORS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=histories())
def test_each_estimator_counts_a_history_as_its_definition_does(
    name: str, calls: list[list[Message]]
) -> None:
    counter = ESTIMATORS[name]
    for history in calls:
        defined = [counter.message_tokens(m) for m in history]
        assert counter.message_counts(history) == defined
        assert PerMessage(counter, 7).tokens(history) == 7 + sum(defined)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=histories())
def test_agentscope_whole_prompt_is_the_bytes_of_the_request_over_4_rounded_once(
    calls: list[list[Message]],
) -> None:
    for history in calls:
        n_bytes = WholePrompt(TOOLS).tools_bytes
        media = 0
        for m in history:
            pieces = [m.content, replay_text(m), *(c.arguments for c in m.tool_calls)]
            n_bytes += sum(len(p.encode("utf-8", "surrogatepass")) for p in pieces)
            media += len(m.media_parts)
        expected = int(n_bytes / 4 + 0.5) + AgentScopeCounter.MEDIA_TOKENS * media
        assert WholePrompt(TOOLS).tokens(history) == expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=histories())
def test_claude_code_rough_estimates_are_each_messages_own(calls: list[list[Message]]) -> None:
    for history in calls:
        assert rough_memo().many(history) == [rough_tokens(m) for m in history]


def test_a_counter_pickles_without_its_per_object_counts() -> None:
    import pickle

    counter = Chars4Counter()
    history = [Message("user", "x" * 40), Message("assistant", "y" * 8)]
    assert counter.message_counts(history) == [10, 2]
    again = pickle.loads(pickle.dumps(counter))
    assert again.message_counts(history) == [10, 2]
