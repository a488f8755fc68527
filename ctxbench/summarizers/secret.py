"""An API key read from the environment, and the scrubbing that keeps it out of every output.

A key is stripped of surrounding whitespace (a Windows ``.env`` leaves a ``\\r``) and must then
be printable ASCII without spaces, or it is refused before any request: an invalid header value
would otherwise fail inside ``http.client`` with the whole key in its message. Scrubbing
replaces the key and every fragment of it of :data:`FRAGMENT` characters or more, raw or as JSON
writes it (``\\/``, ``\\u00e9``, ``\\"``), because a server that echoes a request may echo only
part of it, or echo it JSON-escaped (issue 22).
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass

from ctxbench.errors import SummarizerError

#: The shortest piece of a key that is scrubbed (shorter pieces are too common to matter).
FRAGMENT = 8
MASK = "***"
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")


@dataclass(frozen=True)
class Secret:
    """The value of a key variable; ``scrub`` removes it from any text."""

    value: str

    @classmethod
    def from_env(cls, variable: str, endpoint: str) -> Secret:
        """The key in ``$variable`` (stripped), or a SummarizerError that never holds it."""
        value = os.environ.get(variable, "").strip() if variable else ""
        if variable and not value:
            raise SummarizerError(
                f"environment variable {variable} is not set (the API key for {endpoint})",
                kind="auth",
            )
        if value and not _HEADER_SAFE.fullmatch(value):
            raise SummarizerError(
                f"environment variable {variable} does not hold a valid API key: it has "
                "spaces, control characters or non-ASCII characters inside",
                kind="auth",
            )
        return cls(value)

    def scrub(self, text: str) -> str:
        """``text`` with the key and every :data:`FRAGMENT`-character piece of it masked."""
        if not self.value or not text:
            return text
        pattern = _fragments(self.value)
        covered = bytearray(len(text))
        for match in pattern.finditer(text):
            start, end = match.start(), match.start() + len(match.group(1))
            covered[start:end] = b"\x01" * (end - start)
        if not any(covered):
            return text
        out, i = [], 0
        while i < len(text):
            if covered[i]:
                while i < len(text) and covered[i]:
                    i += 1
                out.append(MASK)
            else:
                out.append(text[i])
                i += 1
        return "".join(out)


@functools.lru_cache(maxsize=8)
def _fragments(value: str) -> re.Pattern[str]:
    """A lookahead matching, at every position, any piece of ``value`` (or of a JSON-escaped
    form of it) of FRAGMENT characters or more."""
    forms = {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        value.replace("/", "\\/"),
        json.dumps(value)[1:-1].replace("/", "\\/"),
    }
    size = min(FRAGMENT, len(value))
    grams = {form[i : i + size] for form in forms for i in range(len(form) - size + 1)}
    alternatives = "|".join(re.escape(g) for g in sorted(grams, key=lambda g: (-len(g), g)))
    return re.compile(f"(?=({alternatives}))")


__all__ = ["FRAGMENT", "MASK", "Secret"]
