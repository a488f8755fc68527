"""The simulated model endpoint: the TRUE window, counted with the TRUE tokenizer.

The strategy decides with its own estimate; the provider rejects any prompt whose true count
exceeds ``window - reserved`` with the error text a real provider returns, so strategies
detect overflows by the same substrings real systems match (DB-GPT looks for
``context_length_exceeded`` / ``maximum context length``; Anthropic's ``prompt is too long``
does not match those, exactly as in production).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ctxbench.errors import ConfigError, ProviderOverflowError

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


def is_overflow_error(text: str) -> bool:
    """True when ``text`` reads as a context-overflow error from any provider."""
    lowered = text.lower()
    return any(marker in lowered for marker in OVERFLOW_MARKERS)


@dataclass(frozen=True)
class SimulatedProvider:
    """A model endpoint with a context ``window`` and an output reservation ``reserved``.

    A prompt is accepted when ``true_tokens <= window - reserved``.
    """

    window: int
    reserved: int = 0
    error_style: str = "openai"

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
