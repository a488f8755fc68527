"""The click type of a window or other token count: ``32768``, ``32k``, ``128K``."""

from __future__ import annotations

from typing import Any

import click

from ctxbench.errors import ConfigError
from ctxbench.sizes import parse_tokens


class TokenCount(click.ParamType):
    """A token count of at least ``minimum``; ``32k`` means 32,768 (see :mod:`ctxbench.sizes`)."""

    name = "TOKENS"

    def __init__(self, minimum: int = 1) -> None:
        self.minimum = minimum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            tokens = parse_tokens(value)
        except ConfigError as exc:
            self.fail(f"{exc.message}; {exc.hint}", param, ctx)
        if tokens < self.minimum:
            self.fail(f"{value!r} must be at least {self.minimum} tokens", param, ctx)
        return tokens


class WindowSize(TokenCount):
    """A window: a token count or a model name (``claude-sonnet-4-5``, ``gpt-4o``); a ``k``
    size near a model's decimal window is warned about on stderr (:mod:`ctxbench.windows`)."""

    name = "WINDOW"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        from ctxbench.windows import parse_window, window_warning

        if isinstance(value, int):
            return value
        try:
            tokens = parse_window(value)
        except ConfigError as exc:
            self.fail(f"{exc.message}; {exc.hint}", param, ctx)
        warning = window_warning(value)
        if warning:
            click.echo(f"warning: {warning}", err=True)
        return super().convert(tokens, param, ctx)


#: A window: at least one token, or a model name.
TOKENS = WindowSize()
#: An output reservation: zero or more tokens.
RESERVED_TOKENS = TokenCount(minimum=0)
