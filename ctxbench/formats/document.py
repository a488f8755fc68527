"""A recorded file opened once: one JSON document, JSON Lines, or a binary table.

Detection looks at the first value only (the whole document for ``.json``, the first line
for JSON Lines), so ``--format auto`` does not parse a large JSONL file twice. Records are
then streamed line by line. Syntax errors name the file and the line.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from ctxbench import jsontext
from ctxbench.errors import TraceFormatError
from ctxbench.formats.canonical import reading

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


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig")
    return path.open("r", encoding="utf-8-sig")


def _inner_suffix(path: Path) -> str:
    return Path(path.stem).suffix if path.suffix == ".gz" else path.suffix


def _jsonl_records(path: Path) -> Iterator[tuple[int | None, Any]]:
    with reading(path), _open(path) as fh:
        for lineno, line in jsontext.bounded_lines(fh, path=path, error=TraceFormatError):
            if not line.strip():
                continue
            yield lineno, _loads(line, path, lineno)


def _loads(text: str, path: Path, lineno: int | None) -> Any:
    return jsontext.loads(
        text,
        path=path,
        line=lineno,
        error=TraceFormatError,
        hint="was the file truncated? each JSON Lines line must be one complete JSON value",
    )


def open_document(path: str | Path) -> Document:
    """Open ``path`` and parse what detection needs. JSON Lines is recognised by its suffix,
    or by a whole-document parse that stops at a second value ("Extra data")."""
    path = Path(path)
    if not os.path.exists(path):  # never raises (a name too long, a NUL byte)
        raise TraceFormatError("no such file", path=path, hint="check the path")
    if path.is_dir():
        raise TraceFormatError(
            "is a directory, not a trace file", path=path, hint="give the files inside it"
        )
    jsontext.refuse_device(path, TraceFormatError)
    with reading(path):
        with path.open("rb") as raw:
            magic = raw.read(4)
        if magic == PARQUET_MAGIC:
            return Document(path, "parquet")
        if _inner_suffix(path) in JSONL_SUFFIXES:
            return _first_line(path)
        with _open(path) as fh:
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
