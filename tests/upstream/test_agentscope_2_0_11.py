"""AgentScope's own compression tests, ported to ``agentscope`` at ``release="2.0.11"``.

From agentscope-ai/agentscope ``tests/compress_tool_result_test.py`` and
``tests/compress_context_test.py`` at da00849f2 (2.0.6: the repository snapshot has no tag
after v2.0.6, so 2.0.11's own copies could not be read). Same blocks, same counts (the tests'
``mock_count_tokens`` is a counter of text length), same assertions. Not ported: the
``MockModel`` structured-output plumbing, the Read-tool cache tests (no file cache in a
replay), the image tests with an offloader (2.0.11 has none by default) and
``test_offload_reminder_is_not_duplicated`` (its ``FixedPathOffloader`` path).
"""

from __future__ import annotations

from ctxbench.counting.base import TokenCounter
from ctxbench.strategies import build_strategy
from ctxbench.strategies.agentscope import TRUNCATED_SUMMARY, AgentScopeStrategy, split_tool_result
from ctxbench.summarizers.failing import FailingSummarizer
from ctxbench.trace import Message, Part
from tests.upstream.helpers import context_with, release

pytestmark = release("agentscope==2.0.11")
LIMIT = 100  # ContextConfig(tool_result_limit=100)


class Fixed(TokenCounter):
    """``mock_count_tokens`` returning a fixed count."""

    kind = "estimator"

    def __init__(self, value: int) -> None:
        super().__init__("fixed", "test")
        self.value = value

    def count(self, text: str) -> int:
        return self.value

    def message_tokens(self, message: Message) -> int:
        return self.value


class TextLength(TokenCounter):
    """``mock_count_tokens`` summing the text length of the blocks."""

    kind = "estimator"

    def __init__(self) -> None:
        super().__init__("text-length", "test")

    def count(self, text: str) -> int:
        return len(text)

    def message_tokens(self, message: Message) -> int:
        if message.parts is None:
            return len(message.content)
        return sum(len(p.text) for p in message.parts if p.is_text)


def result(*texts: str) -> Message:
    return Message.from_parts("tool", [Part("text", t) for t in texts], tool_call_id="test")


def texts(message: Message) -> list[str]:
    return [p.text for p in message.parts or () if p.is_text]


class TestToolResultCompression:
    def test_below_limit(self) -> None:
        tool_result = result("Short text 1", "Short text 2")
        assert split_tool_result(tool_result, LIMIT, Fixed(50)) == (tool_result, [])

    def test_equal_to_limit(self) -> None:
        tool_result = result("Text at limit")
        assert split_tool_result(tool_result, LIMIT, Fixed(100)) == (tool_result, [])

    def test_boundary_last_block_text(self) -> None:
        kept, offloaded = split_tool_result(
            result("A" * 20, "B" * 20, "C" * 100), LIMIT, TextLength()
        )
        assert kept.tool_call_id == "test"
        assert texts(kept) == ["A" * 20, "B" * 20 + "C" * 60]
        assert [p.text for p in offloaded] == ["C" * 40]

    def test_boundary_first_block_text(self) -> None:
        kept, offloaded = split_tool_result(
            result("A" * 100, "B" * 20, "C" * 20), LIMIT, TextLength()
        )
        assert texts(kept) == ["A" * 100]
        assert [p.text for p in offloaded] == ["B" * 20, "C" * 20]

    def test_boundary_middle_block_text(self) -> None:
        kept, offloaded = split_tool_result(
            result("A" * 20, "B" * 100, "C" * 20), LIMIT, TextLength()
        )
        assert texts(kept) == ["A" * 20 + "B" * 80]
        assert [p.text for p in offloaded] == ["B" * 20 + "C" * 20]


class TestContextCompression:
    def test_summary_failure_truncates_context(self) -> None:
        """``_make_failing_compression_agent``: context_size 100, trigger 0.7, reserve 0.4."""
        strategy = build_strategy(
            "agentscope", {"context_size": 100, "trigger_ratio": 0.7, "reserve_ratio": 0.4}
        )
        assert isinstance(strategy, AgentScopeStrategy)
        msgs = [
            Message("system", "0" * (20 * 4)),
            Message("user", "1" * (30 * 4)),
            Message("assistant", "2" * (10 * 4)),
            Message("user", "3" * (10 * 4)),
        ]
        ctx = context_with(strategy, msgs, window=100, summarizer=FailingSummarizer())
        strategy.compress(ctx)
        assert strategy.summary_text == TRUNCATED_SUMMARY
        view = ctx.view.messages
        assert [m.content for m in view] == [
            msgs[0].content,
            TRUNCATED_SUMMARY,
            msgs[2].content,
            msgs[3].content,
        ]
        assert not ctx.files, "2.0.11 has no offloader by default"
