"""Hermes' own compressor tests, ported to ``hermes`` at ``release="0.19.0"``.

From NousResearch/hermes-agent ``tests/agent/test_context_compressor.py`` at 0033ed5 (the only
version the source index stores; the repository snapshot is too large to fetch, so its 0.19.0
tag could not be checked out). Same messages and assertions; a ``MagicMock`` summary client is
a summarizer returning the same text, "no client" is a failing summarizer. Tests of Hermes
internals without a counterpart (``get_status``, ``summarization_count``,
``estimated_tokens_saved``, ``update_from_response``'s completion fields) are not ported.
"""

from __future__ import annotations

from typing import Any

from ctxbench.counting.base import TokenCounter
from ctxbench.strategies import build_strategy
from ctxbench.strategies.hermes import HermesStrategy
from ctxbench.summarizers.base import Summarizer, SummaryRequest
from ctxbench.summarizers.failing import FailingSummarizer
from ctxbench.trace import Message, ToolCall
from tests.upstream.helpers import context_with, release

pytestmark = release("hermes-agent==0.19.0")
WINDOW = 100_000  # resolve_model_capabilities -> context_length 100000


class Fixed(Summarizer):
    """The mocked summary client: always the same text."""

    name = "fixed"

    def __init__(self, text: str) -> None:
        self.text = text

    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        return self.text


def compressor(**params: Any) -> HermesStrategy:
    strategy = build_strategy("hermes", {"release": "0.19.0", **params})
    assert isinstance(strategy, HermesStrategy)
    return strategy


def fixture() -> HermesStrategy:
    return compressor(threshold_percent=0.85, protect_first_n=2, protect_last_n=2)


def compress(
    strategy: HermesStrategy, msgs: list[Message], summarizer: Summarizer | None = None
) -> list[Message]:
    ctx = context_with(strategy, msgs, window=WINDOW, summarizer=summarizer or FailingSummarizer())
    strategy.on_start(ctx)
    return strategy.compress(tuple(msgs), ctx)[0]


def _make_messages(n: int) -> list[Message]:
    return [Message("user" if i % 2 == 0 else "assistant", f"msg {i}") for i in range(n)]


class TestShouldCompress:
    def _should(self, tokens: int) -> bool:
        strategy = fixture()
        ctx = context_with(strategy, [], window=WINDOW)
        strategy.on_start(ctx)
        return strategy._should_compress(tokens, strategy._limits(ctx))

    def test_below_threshold(self) -> None:
        assert self._should(50_000) is False

    def test_above_threshold(self) -> None:
        assert self._should(90_000) is True

    def test_exact_threshold(self) -> None:
        assert self._should(85_000) is True


class TestShouldCompressPreflight:
    def test_short_and_long_messages(self) -> None:
        from ctxbench.strategies.hermes.measure import rough_request_tokens

        assert rough_request_tokens([Message("user", "short")], ()) < 85_000
        assert rough_request_tokens([Message("user", "x" * 400_000)], ()) >= 85_000


class TestCompress:
    def test_too_few_messages_returns_unchanged(self) -> None:
        msgs = _make_messages(4)
        assert compress(fixture(), msgs) == msgs

    def test_truncation_fallback_no_client(self) -> None:
        strategy = fixture()
        msgs = [Message("system", "System prompt"), *_make_messages(10)]
        result = compress(strategy, msgs)
        assert len(result) < len(msgs)
        assert result[0].role == "system"
        assert strategy.compression_count == 1

    def test_compression_increments_count(self) -> None:
        strategy = fixture()
        msgs = _make_messages(10)
        compress(strategy, msgs)
        assert strategy.compression_count == 1
        compress(strategy, msgs)
        assert strategy.compression_count == 2

    def test_protects_first_and_last(self) -> None:
        msgs = _make_messages(10)
        result = compress(fixture(), msgs)
        assert result[-1].content == msgs[-1].content
        assert result[-2].content == msgs[-2].content


class TestGenerateSummaryNoneContent:
    def test_none_content_in_system_message_compress(self) -> None:
        strategy = compressor(protect_first_n=2, protect_last_n=2)
        msgs = [Message("system", ""), *_make_messages(10)]
        assert len(compress(strategy, msgs)) < len(msgs)


class TestCompressWithClient:
    def test_summarization_path(self) -> None:
        msgs = _make_messages(10)
        result = compress(compressor(), msgs, Fixed("[CONTEXT SUMMARY]: stuff happened"))
        assert any("CONTEXT SUMMARY" in m.content for m in result)
        assert len(result) < len(msgs)

    def test_summarization_does_not_split_tool_call_pairs(self) -> None:
        calls = (ToolCall("call_a", "skill_view", "{}"), ToolCall("call_b", "skill_view", "{}"))
        msgs = [
            Message("user", "Could you address the reviewer comments in PR#71"),
            Message("assistant", "", tool_calls=calls),
            Message("tool", "output a", tool_call_id="call_a"),
            Message("tool", "output b", tool_call_id="call_b"),
            Message("user", "later 1"),
            Message("assistant", "later 2"),
            Message("tool", "later output", tool_call_id="call_x"),
            Message("assistant", "later 3"),
            Message("user", "later 4"),
        ]
        result = compress(
            compressor(protect_first_n=3, protect_last_n=4),
            msgs,
            Fixed("[CONTEXT SUMMARY]: compressed middle"),
        )
        answered = {m.tool_call_id for m in result if m.role == "tool" and m.tool_call_id}
        for m in result:
            for call in m.tool_calls:
                assert call.id in answered

    def test_summarization_does_not_start_tail_with_tool_outputs(self) -> None:
        msgs = [
            Message("user", "earlier 1"),
            Message("assistant", "earlier 2"),
            Message("user", "earlier 3"),
            Message("assistant", "", tool_calls=(ToolCall("call_c", "search_files", "{}"),)),
            Message("tool", "output c", tool_call_id="call_c"),
            Message("user", "latest user"),
        ]
        result = compress(
            compressor(protect_first_n=2, protect_last_n=3),
            msgs,
            Fixed("[CONTEXT SUMMARY]: compressed middle"),
        )
        called = {c.id for m in result for c in m.tool_calls}
        for m in result:
            if m.role == "tool" and m.tool_call_id:
                assert m.tool_call_id in called


# -- what docs/sources.md adds for 0.19.0 -----------------------------------------------------------


def test_0_19_0_reserves_nothing_for_max_tokens_none() -> None:
    strategy = compressor()
    ctx = context_with(strategy, [], window=200_000, reserved=20_000)
    strategy.on_start(ctx)
    assert strategy._limits(ctx).max_tokens == 0


def test_0_19_0_does_not_note_the_compaction_in_the_system_prompt() -> None:
    msgs = [Message("system", "You are Hermes."), *_make_messages(12)]
    result = compress(compressor(protect_first_n=1, protect_last_n=2), msgs, Fixed("stuff"))
    assert result[0].content == "You are Hermes."


def test_0_19_0_has_none_of_the_later_knobs() -> None:
    import pytest

    from ctxbench.errors import ConfigError

    with pytest.raises(ConfigError, match=r"not in hermes-agent 0\.19\.0"):
        build_strategy("hermes", {"threshold_tokens_cap": 40_000})
    assert build_strategy("hermes", {"release": "0000416b", "threshold_tokens_cap": 40_000})


def test_0_19_0_stores_tool_calls_with_call_id_and_response_item_id() -> None:
    from ctxbench.strategies.hermes.measure import BudgetCounter, stored_call

    call = ToolCall("call_abc", "bash", '{"cmd": "ls"}')
    assert stored_call(call)["call_id"] == "call_abc"
    assert stored_call(call)["response_item_id"] == "fc_abc"
    message = Message("assistant", "x" * 7, tool_calls=(call,))
    assert BudgetCounter().message_tokens(message) == 7 // 4 + 10 + len(str(stored_call(call))) // 4


def test_0_19_0_reinserts_the_last_real_user_turn() -> None:
    from ctxbench.strategies.hermes.strategy import ensure_user_turn

    task = Message("user", "fix the bug")
    original = [Message("system", "s"), task, Message("assistant", "a"), Message("user", "")]
    compressed = [
        Message("system", "s"),
        Message("assistant", "summary"),
        Message("assistant", "b"),
    ]
    assert ensure_user_turn(original, compressed) == [compressed[0], task, *compressed[1:]]
    kept = [Message("system", "s"), task, Message("assistant", "b")]
    assert ensure_user_turn(original, kept) == kept


def test_0_19_0_defers_estimate_driven_compaction_until_real_usage() -> None:
    from ctxbench.strategies.hermes.strategy import AgentLoop

    loop = AgentLoop()
    assert not loop.defer(90_000, 85_000)
    loop.compacted(rough_after=60_000)
    assert loop.defer(90_000, 85_000), "#36718: no second compaction before usage arrives"
    assert not loop.defer(80_000, 85_000), "under the threshold there is nothing to defer"


def test_0_19_0_an_exhausted_overflow_ends_the_turn() -> None:
    """compression_exhausted: the run returns failed, so the turn's later calls are not made."""
    from ctxbench.counting import get_counter
    from ctxbench.engine.provider import SimulatedProvider
    from ctxbench.engine.replay import replay
    from ctxbench.summarizers.extractive import ExtractiveSummarizer
    from ctxbench.synth import generate, load_scenario

    trace = next(generate(load_scenario("coding_agent"), 0))
    out = replay(
        trace,
        compressor(),
        SimulatedProvider(32_768, 1024),
        true_counter=get_counter("tiktoken:o200k_base"),
        estimator=get_counter("hermes"),
        summarizer=ExtractiveSummarizer(),
    )
    failed = [e for e in out.events if e.type == "call.failed"]
    assert failed and failed[0]["kind"] == "overflow"
    assert failed[1]["kind"] == "aborted" and failed[1].call == failed[0].call + 1
    aborted = {e.call for e in failed if e["kind"] == "aborted"}
    assert not [e for e in out.events if e.type == "provider.call" and e.call in aborted]
