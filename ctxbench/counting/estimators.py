"""The estimators frameworks really use to decide when to compact.

They are deliberately *not* exact: the gap between them and the provider's tokenizer is what
ctxbench measures. Each follows its source; see docs/sources.md.

- ``chars4``: ``len(text) // 4`` over the text a message carries (content, tool-call names and
  arguments, replay fields); no framing.
- ``dbgpt``: DB-GPT ``ProxyTokenizerWrapper.count_token``: the model's tiktoken encoding over
  message **content only** (no role, no tool envelope); ``len(content) // 4`` when the tokenizer
  is unavailable. Unknown model names use ``cl100k_base``, as DB-GPT does.
- ``agentscope``: AgentScope ``ChatModelBase.count_tokens``: UTF-8 bytes of text, thinking,
  tool-call input and tool-result text, divided by 4 and rounded; plus the ``json.dumps`` of the
  tools; plus 2000 per image/audio block. (ctxbench rounds per message; AgentScope rounds the
  whole prompt once, so the two differ by at most half a token per message.)
- ``hermes``: Hermes ``_estimate_msg_budget_tokens``: ``(len + 3) // 4`` of the content plus 10
  per message, ``len(str(tool_call)) // 4`` for the whole call envelope, the serialised length
  of replay keys // 4, and 1600 per image.
- ``claude_code``: Claude Code's rough estimate, ``chars / 4`` padded by ``4/3`` (so
  ``ceil(chars / 3)``) over the text, tool input and tool-result text of a message. Secondary
  sources only (deobfuscated-code analyses; docs/sources.md), not an official specification.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ctxbench.counting.base import TokenCounter, replay_text, tool_schemas_json
from ctxbench.trace import Message, ToolSpec


class Chars4Counter(TokenCounter):
    """``len(text) // 4``: the rule of thumb most agents start with."""

    kind = "estimator"

    def __init__(self) -> None:
        super().__init__("chars4", "len(text) // 4")

    def count(self, text: str) -> int:
        return len(text) // 4

    def message_tokens(self, message: Message) -> int:
        text = message.content
        for call in message.tool_calls:
            text += call.name + call.arguments
        return (len(text) + len(replay_text(message))) // 4

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        return len(tool_schemas_json(tools)) // 4


class DbgptCounter(TokenCounter):
    """DB-GPT's content-only count with the model's tiktoken encoding (len // 4 fallback)."""

    kind = "estimator"

    def __init__(self, encoding: TokenCounter | None = None) -> None:
        source = "DB-GPT ProxyTokenizerWrapper.count_token (content only)"
        if encoding is not None:
            source += f" with {encoding.name}"
        else:
            source += ", len(content)//4 fallback"
        super().__init__("dbgpt", source)
        self._encoding = encoding

    def count(self, text: str) -> int:
        if self._encoding is None:
            return len(text) // 4
        return self._encoding.count(text)

    def message_tokens(self, message: Message) -> int:
        return self.count(message.content)


def _str_tool_call(call: Any) -> str:
    """``str(tc)`` of an OpenAI-style tool-call dict, as Hermes measures the envelope."""
    return str(
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
    )


class AgentScopeCounter(TokenCounter):
    """AgentScope's UTF-8 bytes / 4 estimate, plus tools JSON and 2000 per media block."""

    kind = "estimator"
    MEDIA_TOKENS = 2000

    def __init__(self) -> None:
        super().__init__("agentscope", "agentscope ChatModelBase.count_tokens: utf-8 bytes / 4")

    @staticmethod
    def _bytes_to_tokens(n_bytes: int) -> int:
        return int(n_bytes / 4 + 0.5)

    def count(self, text: str) -> int:
        return self._bytes_to_tokens(len(text.encode("utf-8", "surrogatepass")))

    def message_tokens(self, message: Message) -> int:
        pieces = [message.content, replay_text(message)]
        pieces.extend(call.arguments for call in message.tool_calls)
        n_bytes = sum(len(p.encode("utf-8", "surrogatepass")) for p in pieces)
        return self._bytes_to_tokens(n_bytes) + self.MEDIA_TOKENS * len(message.media_parts)

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        if not tools:
            return 0
        payload = json.dumps([json.loads(tool_schemas_json([t]))[0] for t in tools])
        return self._bytes_to_tokens(len(payload.encode("utf-8")))


class HermesCounter(TokenCounter):
    """Hermes' char estimate: (len+3)//4 + 10 per message, full call envelope, replay keys."""

    kind = "estimator"
    PER_MESSAGE = 10
    IMAGE_TOKENS = 1600

    def __init__(self) -> None:
        super().__init__("hermes", "hermes-agent context_compressor._estimate_msg_budget_tokens")

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4

    def message_tokens(self, message: Message) -> int:
        tokens = (len(message.content) + 3) // 4 + self.PER_MESSAGE
        tokens += self.IMAGE_TOKENS * len(message.media_parts)
        for call in message.tool_calls:
            tokens += len(_str_tool_call(call)) // 4
        for value in message.replay.values():
            serialised = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            tokens += len(serialised) // 4
        return tokens

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        return (len(tool_schemas_json(tools)) + 3) // 4 if tools else 0


class ClaudeCodeCounter(TokenCounter):
    """Claude Code's ``chars/4 x 4/3`` estimate for messages newer than the last API usage."""

    kind = "estimator"

    def __init__(self) -> None:
        super().__init__("claude_code", "Claude Code roughTokenCountEstimation x 4/3 (secondary)")

    def count(self, text: str) -> int:
        return -(-len(text) // 3)

    def message_tokens(self, message: Message) -> int:
        text = message.content
        for call in message.tool_calls:
            text += call.name + call.arguments
        return self.count(text + replay_text(message))

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        return self.count(tool_schemas_json(tools))
