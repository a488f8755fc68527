"""The token-counter protocol and its per-process message cache.

A counter answers three questions:

- ``count(text)``: tokens of a bare string;
- ``count_message(message)``: tokens one message adds to a prompt: its content, the whole
  tool-call envelope, per-message framing (role markers) and provider replay fields such as
  ``reasoning_content`` / thinking blocks;
- ``count_prompt(messages, tools)``: a whole request.

For every counter ``count_prompt == prompt_overhead(tools) + sum(count_message(m))`` unless the
counter documents otherwise (chat-template counters render the request exactly). The replay
engine relies on that sum: it keeps per-call totals incrementally and counts each distinct
message once per counter per process, because ``count_message`` is cached by the message's
content fingerprint.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ctxbench.memo import ContentMemo, ObjectMemo
from ctxbench.trace import Message, ToolSpec

#: ``fitted``: a tokenizer plus framing fitted to provider usage (``profile:``); for models
#: without a public tokenizer (Claude) the tokenizer is a proxy, so the count is fitted, not exact.
CounterKind = Literal["exact", "estimator", "fitted"]

#: Messages whose count is cached per counter; past this the cache is cleared (bounded memory).
MESSAGE_CACHE_LIMIT = 1_000_000
#: What a counter's memo of long texts' segment counts may hold (then it starts again).
SEGMENT_MEMO_BYTES = 16 * 2**20


class TokenCounter(ABC):
    """Base class of every counter. Subclasses implement ``count`` and ``message_tokens``."""

    kind: ClassVar[CounterKind]

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.source = source
        self._message_cache: dict[str, int] = {}
        #: the counts of long texts' segments, for counters that count in them
        #: (:func:`~ctxbench.counting.chunking.count_in_segments`)
        self._segments: ContentMemo[str, int] = ContentMemo(limit=SEGMENT_MEMO_BYTES)
        self.cache_hits = 0
        self.cache_misses = 0
        #: :meth:`count_message` of each message object while it lives (made when first used)
        self._by_object: ObjectMemo[Message, int] | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    @property
    def tokenizer_name(self) -> str:
        """The registered counter whose tokenizer this one counts with (a profile's base)."""
        return self.name

    @abstractmethod
    def count(self, text: str) -> int:
        """Tokens of a bare string (no framing)."""

    @abstractmethod
    def message_tokens(self, message: Message) -> int:
        """Uncached tokens of one message in a prompt (content, envelope, framing, replay)."""

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        """Tokens a request costs besides its messages: reply priming, tool schemas."""
        return 0

    def count_message(self, message: Message) -> int:
        """Cached :meth:`message_tokens`, keyed by the message's content fingerprint."""
        key = message.fingerprint
        cached = self._message_cache.get(key)
        if cached is not None:
            self.cache_hits += 1
            return cached
        self.cache_misses += 1
        value = self.message_tokens(message)
        if len(self._message_cache) >= MESSAGE_CACHE_LIMIT:
            self._message_cache.clear()
        self._message_cache[key] = value
        return value

    def message_counts(self, messages: Sequence[Message]) -> list[int]:
        """``[count_message(m) for m in messages]``: a strategy that measures its whole history
        at every call asks it of the same message objects again, so each object's count is
        kept while the object lives and a list's counts are looked up in C."""
        memo = getattr(self, "_by_object", None)  # a plug-in may not call __init__
        if memo is None:
            memo = self._by_object = ObjectMemo(self.count_message)
        return memo.many(messages)

    def count_prompt(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
        """Tokens of a whole request."""
        return self.prompt_overhead(tools) + sum(self.count_message(m) for m in messages)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_by_object"] = None  # weak references do not pickle; counts come back
        return state

    def clear_cache(self) -> None:
        self._message_cache.clear()
        self._by_object = None
        self._segments.clear()
        self.cache_hits = self.cache_misses = 0

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "source": self.source}


def tool_schemas(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tools as the OpenAI ``tools`` request field (function schemas)."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            },
        }
        for t in tools
    ]


def tool_schemas_json(tools: Sequence[ToolSpec]) -> str:
    """Tools as the OpenAI ``tools`` request field, serialised compactly and deterministically."""
    if not tools:
        return ""
    return json.dumps(
        tool_schemas(tools), ensure_ascii=False, separators=(",", ":"), sort_keys=False
    )


def replay_text(message: Message) -> str:
    """Provider replay fields serialised as they travel back to the provider (strings as-is)."""
    pieces = []
    for value in message.replay.values():
        pieces.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return "".join(pieces)


@dataclass(frozen=True)
class Framing:
    """Chat framing of an exact counter: tokens added around the text of each part.

    The defaults are OpenAI's published rule for chat models (3 tokens per message, 1 per
    ``name``, 3 to prime the reply). ``ctxbench calibrate --save-profile`` fits these numbers
    to provider-reported usage; chat-template counters derive them from the template.
    """

    per_message: int = 3
    per_name: int = 1
    per_tool_call: int = 3
    per_tool_result: int = 0
    per_image: int = 765
    per_prompt: int = 3
    per_tool_schema: int = 0
    role_tokens: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)
