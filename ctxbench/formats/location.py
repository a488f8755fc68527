"""Where a value sits in a recorded file, and typed reads that fail there.

Importers read third-party JSON whose shape they do not control. Every read goes through
:class:`At`, so a wrong type or a missing key becomes a :class:`TraceFormatError` that names
the file, the line (JSON Lines) and the JSON path, instead of a ``KeyError`` deep inside.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ctxbench.errors import TraceFormatError

_KINDS = {
    dict: "an object",
    list: "a list",
    str: "a string",
    int: "an integer",
    bool: "true or false",
}


def kind_of(value: Any) -> str:
    """The JSON name of a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    for cls, name in _KINDS.items():
        if isinstance(value, cls):
            return name
    return type(value).__name__


@dataclass(frozen=True)
class At:
    """A position in a recorded file: file, optional line, and a JSON path."""

    file: str
    line: int | None = None
    path: str = "$"
    format: str = ""

    @classmethod
    def start(cls, file: str | Path, *, line: int | None = None, format: str = "") -> At:
        return cls(str(file), line, "$", format)

    def key(self, name: str) -> At:
        return replace(self, path=f"{self.path}.{name}")

    def index(self, i: int) -> At:
        return replace(self, path=f"{self.path}[{i}]")

    def error(self, message: str, hint: str | None = None) -> TraceFormatError:
        prefix = f"{self.format}: " if self.format else ""
        hint = hint or (
            f"fix the value at {self.path}, or give the file's real format with --format"
            " (see `ctxbench import --help`)"
        )
        return TraceFormatError(
            prefix + message, path=self.file, line=self.line, key=self.path, hint=hint
        )

    # -- typed reads -------------------------------------------------------------------------

    def obj(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(f"expected an object, got {kind_of(value)}")
        return value

    def arr(self, value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise self.error(f"expected a list, got {kind_of(value)}")
        return value

    def opt_arr(self, value: Any) -> list[Any]:
        """A list, with null meaning empty."""
        return [] if value is None else self.arr(value)

    def text(self, value: Any) -> str:
        if not isinstance(value, str):
            raise self.error(f"expected a string, got {kind_of(value)}")
        return value

    def opt_text(self, value: Any) -> str | None:
        return None if value is None else self.text(value)

    def ident(self, value: Any) -> str:
        """An identifier: a string or an integer (some recorders write numeric ids)."""
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        raise self.error(f"expected a string or integer id, got {kind_of(value)}")

    def opt_int(self, value: Any) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"expected an integer or null, got {kind_of(value)}")
        return value

    def need(self, data: Mapping[str, Any], name: str) -> Any:
        """``data[name]``; a missing key is an error naming this path and the key."""
        if name not in data:
            raise self.error(
                f"missing required key {name!r}",
                hint=f"keys present: {', '.join(sorted(data)) or 'none'}",
            )
        return data[name]

    def arguments(self, value: Any) -> str:
        """Tool-call arguments as JSON text: strings stay as sent, objects are serialised."""
        if isinstance(value, str):
            return value
        if value is None:
            return "{}"
        if isinstance(value, (dict, list)):
            return json.dumps(value, ensure_ascii=False)
        raise self.error(
            f"expected tool-call arguments as a JSON string or object, got {kind_of(value)}"
        )


def rest(data: Mapping[str, Any], mapped: tuple[str, ...] | frozenset[str]) -> dict[str, Any]:
    """The keys an importer did not map: they go to ``meta`` so nothing is dropped silently."""
    return {k: v for k, v in data.items() if k not in mapped}
