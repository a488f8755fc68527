"""The simulated model endpoint: the TRUE window, counted with the TRUE tokenizer.

The strategy decides with its own estimate; the provider rejects any prompt whose true count
exceeds ``window - reserved`` with the error text a real provider returns, so strategies
detect overflows by the same substrings real systems match (DB-GPT looks for
``context_length_exceeded`` / ``maximum context length``; Anthropic's ``prompt is too long``
does not match those, exactly as in production).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ctxbench.errors import ConfigError, ProviderOverflowError
from ctxbench.trace import Message

ErrorStyle = Literal["openai", "anthropic", "vllm"]
ERROR_STYLES: tuple[str, ...] = ("openai", "anthropic", "vllm")

#: Lower-cased substrings that identify a context overflow in any provider's message.
OVERFLOW_MARKERS: tuple[str, ...] = (
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "context_too_long",
)


def overflow_message(style: str, *, window: int, reserved: int, prompt_tokens: int) -> str:
    """The provider's error text for a prompt of ``prompt_tokens`` over ``window``."""
    requested = prompt_tokens + reserved
    if style == "openai":
        inner = (
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{requested} tokens ({prompt_tokens} in the messages, {reserved} in the completion). "
            "Please reduce the length of the messages or completion."
        )
        return (
            "Error code: 400 - {'error': {'message': \"" + inner + "\", 'type': "
            "'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}"
        )
    if style == "anthropic":
        return (
            "Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', "
            f"'message': 'prompt is too long: {requested} tokens > {window} maximum'}}}}"
        )
    if style == "vllm":
        return (
            f"Error code: 400 - {{'object': 'error', 'message': \"This model's maximum context length is "
            f"{window} tokens. However, you requested {requested} tokens ({prompt_tokens} in the messages, "
            f'{reserved} in the completion). Please reduce the length of the messages or completion.", '
            "'type': 'BadRequestError', 'param': None, 'code': 400}"
        )
    raise ConfigError(
        f"unknown provider error style {style!r}", hint=f"use one of {', '.join(ERROR_STYLES)}"
    )


def pairing_rejection(messages: Sequence[Message], style: str) -> str | None:
    """The provider's 400 text for a prompt that breaks tool pairing, or None when it is valid.

    Providers reject a tool result that does not follow the assistant turn whose call it
    answers, and an assistant turn with calls not all answered before the next message. The
    first defect is reported, as the providers do. Wording: OpenAI's (its own spelling,
    "preceeding"), Anthropic's ``tool_use``/``tool_result`` messages (indices without the system
    prompt, which Anthropic takes apart), and vLLM's OpenAI-compatible error object.
    """
    return PairingCheck(style).rejection(tuple(messages))


class PairingCheck:
    """:func:`pairing_rejection` for the successive prompts of one replay: a prompt that
    extends the last valid one is checked from where that one ended (the prefix is compared
    as a tuple, element identity first), so a replay does not rescan its whole history at
    every call."""

    def __init__(self, style: str) -> None:
        self.style = style
        self._valid: tuple[Message, ...] = ()
        self._open: tuple[str, ...] = ()
        self._owner = -1

    def rejection(self, messages: tuple[Message, ...]) -> str | None:
        start = len(self._valid)
        if len(messages) >= start and messages[:start] == self._valid:
            open_calls, owner = list(self._open), self._owner
        else:
            start, open_calls, owner = 0, [], -1
        for i in range(start, len(messages)):
            msg = messages[i]
            if msg.role == "tool":
                if msg.tool_call_id in open_calls:
                    open_calls.remove(msg.tool_call_id)
                    continue
                return _pairing_text(self.style, i, messages, orphan=msg.tool_call_id or "")
            if open_calls:
                return _pairing_text(self.style, owner, messages, missing=open_calls)
            if msg.role == "assistant":
                open_calls, owner = [c.id for c in msg.tool_calls], i
        self._valid, self._open, self._owner = messages, tuple(open_calls), owner
        if open_calls:  # the next message (the model's turn) comes before the results
            return _pairing_text(self.style, owner, messages, missing=open_calls)
        return None


def _pairing_text(
    style: str,
    index: int,
    messages: Sequence[Message],
    *,
    orphan: str | None = None,
    missing: Sequence[str] = (),
) -> str:
    if style == "anthropic":
        n = index - sum(1 for m in messages[:index] if m.role == "system")
        inner = (
            f"messages.{n}.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
            f"{orphan}. Each `tool_result` block must have a corresponding `tool_use` block in "
            "the previous message."
            if orphan is not None
            else f"messages.{n}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message."
        )
        return (
            "Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', "
            f"'message': '{inner}'}}}}"
        )
    inner = (
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
        "message with 'tool_calls'."
        if orphan is not None
        else "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not have response "
        f"messages: {', '.join(missing)}"
    )
    if style == "vllm":
        return (
            f"Error code: 400 - {{'object': 'error', 'message': \"{inner}\", "
            "'type': 'BadRequestError', 'param': None, 'code': 400}"
        )
    return (
        "Error code: 400 - {'error': {'message': \"" + inner + "\", 'type': "
        f"'invalid_request_error', 'param': 'messages.[{index}].role', 'code': None}}}}"
    )


def is_overflow_error(text: str) -> bool:
    """True when ``text`` reads as a context-overflow error from any provider."""
    lowered = text.lower()
    return any(marker in lowered for marker in OVERFLOW_MARKERS)


@dataclass(frozen=True)
class PromptCache:
    """How a provider bills a prompt's cached prefix: in whole ``block``-token units, from
    ``minimum`` tokens on, and whether the previous call's reply is part of the cached prefix.

    The default bills the shared prefix exactly. DeepSeek (:data:`DEEPSEEK_CACHE`) stores
    context on disk in 64-token units (https://api-docs.deepseek.com/guides/kv_cache, the
    2024-2025 edition: "the cache storage unit is 64 tokens; content under 64 tokens is not
    cached") and persists a prefix unit at the end of the model output, so the reply is cached
    with its prompt; on the shared mini-swe-agent deepseek-v4-flash run, floor64(previous
    prompt + reply) equals the recorded ``prompt_cache_hit_tokens`` on 32 of 63 calls and
    sums to 0.9993 of them (the prompt alone, unrounded: 0 of 63, 0.985).
    """

    block: int = 1
    minimum: int = 0
    includes_reply: bool = False

    def billed(self, shared_tokens: int) -> int:
        """The cache-hit tokens of a shared prefix of ``shared_tokens``."""
        if shared_tokens < max(self.minimum, 1):
            return 0
        return shared_tokens // self.block * self.block


DEEPSEEK_CACHE = PromptCache(block=64, minimum=64, includes_reply=True)


def prompt_cache_for(counter: str) -> PromptCache:
    """The cache model of the provider whose tokenizer ``counter`` is (exact otherwise)."""
    return DEEPSEEK_CACHE if counter.startswith("hf:deepseek") else PromptCache()


@dataclass(frozen=True)
class SimulatedProvider:
    """A model endpoint with a context ``window`` and an output reservation ``reserved``.

    A prompt is accepted when ``true_tokens <= window - reserved``.
    """

    window: int
    reserved: int = 0
    error_style: str = "openai"
    prompt_cache: PromptCache = field(default_factory=PromptCache)

    def __post_init__(self) -> None:
        if self.window <= 0:
            raise ConfigError(
                f"window must be a positive number of tokens, not {self.window}",
                key="window",
                hint="give the model's context window in tokens, e.g. 32768",
            )
        if self.reserved < 0 or self.reserved >= self.window:
            raise ConfigError(
                f"reserved ({self.reserved}) must be >= 0 and smaller than the window ({self.window})",
                key="reserved",
                hint="lower the output reservation (--reserved) or raise the window",
            )
        if self.error_style not in ERROR_STYLES:
            raise ConfigError(
                f"unknown error style {self.error_style!r}",
                hint=f"use one of {', '.join(ERROR_STYLES)}",
            )

    @property
    def limit(self) -> int:
        """Largest accepted prompt, in true tokens."""
        return self.window - self.reserved

    def check(self, true_tokens: int) -> None:
        """Accept the prompt, or raise :class:`ProviderOverflowError` with the provider's text."""
        if true_tokens > self.limit:
            raise ProviderOverflowError(
                overflow_message(
                    self.error_style,
                    window=self.window,
                    reserved=self.reserved,
                    prompt_tokens=true_tokens,
                ),
                prompt_tokens=true_tokens,
                limit=self.limit,
            )
