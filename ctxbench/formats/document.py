"""A recorded file opened once: one JSON document, JSON Lines, or a binary table.

Detection looks at the first value only (the whole document for ``.json``, the first line
for JSON Lines), so ``--format auto`` does not parse a large JSONL file twice. Records are
then streamed line by line. Syntax errors name the file and the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ctxbench import jsontext
from ctxbench.errors import TraceFormatError
from ctxbench.formats.canonical import inner_suffix, open_text, reading, trace_file

Layout = Literal["json", "jsonl", "parquet"]

#: Extensions read as JSON Lines without trying the whole-document parse first.
JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class Document:
    """An opened recorded file. ``head`` is the whole value (JSON) or the first line's value
    (JSON Lines); ``head_line`` is that line's number; parquet files have no head."""

    path: Path
    layout: Layout
    head: Any = None
    head_line: int | None = None

    def records(self) -> Iterator[tuple[int | None, Any]]:
        """``(line, value)`` pairs: one for a JSON document, one per non-blank JSONL line."""
        if self.layout == "json":
            yield None, self.head
            return
        if self.layout == "parquet":
            raise TraceFormatError(
                "a parquet file has no JSON records",
                path=self.path,
                hint="import it with --format hf_dataset",
            )
        yield from _jsonl_records(self.path)


def _jsonl_records(path: Path) -> Iterator[tuple[int | None, Any]]:
    with reading(path), open_text(path) as fh:
        yield from jsontext.json_lines(
            jsontext.bounded_lines(fh, path=path, error=TraceFormatError),
            path=path,
            error=TraceFormatError,
            hint="was the file truncated? each JSON Lines line must be one complete JSON value",
        )


def open_document(path: str | Path) -> Document:
    """Open ``path`` and parse what detection needs. JSON Lines is recognised by its suffix,
    or by a whole-document parse that stops at a second value ("Extra data")."""
    path = trace_file(path, inside="give the files inside it")
    with reading(path):
        with path.open("rb") as raw:
            magic = raw.read(4)
        if magic == PARQUET_MAGIC:
            return Document(path, "parquet")
        if inner_suffix(path) in JSONL_SUFFIXES:
            return _first_line(path)
        with open_text(path) as fh:
            text = jsontext.bounded_read(fh, path=path, error=TraceFormatError)
    if not text.strip():
        raise TraceFormatError(
            "the file is empty", path=path, hint="give a file with recorded traces"
        )
    try:
        return Document(path, "json", jsontext.well_formed(json.loads(text), text))
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return _first_line(path)
    except (ValueError, RecursionError):
        pass
    # Not one JSON value, nor JSON Lines: parse again for the error that says why and where.
    value = jsontext.loads(
        text, path=path, error=TraceFormatError, hint="fix the JSON syntax; was the file truncated?"
    )
    return Document(path, "json", value)


def _first_line(path: Path) -> Document:
    for lineno, value in _jsonl_records(path):
        return Document(path, "jsonl", value, lineno)
    raise TraceFormatError("the file is empty", path=path, hint="give a file with recorded traces")
