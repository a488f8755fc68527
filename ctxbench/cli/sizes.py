"""The click type of a window or other token count: ``32768``, ``32k``, ``128K``."""

from __future__ import annotations

from typing import Any

import click

from ctxbench.errors import ConfigError
from ctxbench.sizes import parse_tokens


class TokenCount(click.ParamType):
    """A positive token count; ``32k`` means 32,768 (see :mod:`ctxbench.sizes`)."""

    name = "TOKENS"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            tokens = parse_tokens(value)
        except ConfigError as exc:
            self.fail(f"{exc.message}; {exc.hint}", param, ctx)
        if tokens < 1:
            self.fail(f"{value!r} must be at least 1 token", param, ctx)
        return tokens


TOKENS = TokenCount()
