"""Token counts as model cards write them: ``32k``, ``128K``, ``1m`` or plain ``32768``.

``k`` is 1,024 and ``m`` 1,048,576, the convention of the windows people type (Qwen 2.5 "32k"
is 32,768, Llama 3.1 "128k" is 131,072); write the exact number for a decimal window
(``128000``) or a model name (:mod:`ctxbench.windows`), which warns about a ``k`` size near a
decimal window.
"""

from __future__ import annotations

import re

from ctxbench.errors import ConfigError

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*")
_UNITS = {"": 1, "k": 1024, "m": 1024 * 1024}
HELP = "tokens, or 32k / 128k (k = 1,024)"


def is_size(text: str) -> bool:
    """Whether ``text`` is written as a token count (``32768``, ``32k``), not a name."""
    return _SIZE.fullmatch(text) is not None


def parse_tokens(value: int | str, *, key: str | None = None) -> int:
    """A token count from an int or a ``32k``-style string (see the module docstring)."""
    if isinstance(value, bool):
        raise ConfigError(f"not a token count: {value!r}", key=key, hint=f"give {HELP}")
    if isinstance(value, int):
        return value
    match = _SIZE.fullmatch(str(value))
    if not match:
        raise ConfigError(f"not a token count: {value!r}", key=key, hint=f"give {HELP}")
    number, unit = match.groups()
    tokens = float(number) * _UNITS[unit.lower()]
    if tokens != int(tokens):
        raise ConfigError(
            f"{value!r} is not a whole number of tokens", key=key, hint=f"give {HELP}"
        )
    return int(tokens)
