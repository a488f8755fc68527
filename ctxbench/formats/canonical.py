"""Read and write the canonical ``ctxbench.trace/1`` format.

JSON Lines, one trace per line (``.jsonl``, optionally ``.gz``), or a single trace in a
``.json`` file. Reading streams: traces are parsed one line at a time, so memory does not
grow with the number of traces in a file. Errors name the file, the line and the JSON path.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import IO, Any

from ctxbench import jsontext
from ctxbench.atomic_file import AtomicFile
from ctxbench.errors import TraceFormatError
from ctxbench.trace import SCHEMA, Trace


def schema() -> dict[str, Any]:
    """The JSON Schema of one canonical trace (shipped in the package)."""
    text = resources.files("ctxbench.formats").joinpath("trace.schema.json").read_text("utf-8")
    result: dict[str, Any] = json.loads(text)
    return result


def open_text(path: Path) -> IO[str]:
    """A trace file's text, gunzipped (and bounded) when it ends in ``.gz``, a byte-order mark
    skipped; a FIFO or device is refused (:func:`ctxbench.guard.open_text`)."""
    from ctxbench.guard import open_text as guarded

    return guarded(path, error=TraceFormatError)


def inner_suffix(path: Path) -> str:
    """The suffix under a ``.gz`` (``.jsonl`` of ``a.jsonl.gz``), else the file's own."""
    return Path(path.stem).suffix if path.suffix == ".gz" else path.suffix


def trace_file(path: str | Path, *, inside: str) -> Path:
    """``path``, refused when missing, a directory (``inside``: what to give instead) or a
    device, before anything opens it."""
    path = Path(path)
    if not os.path.exists(path):  # never raises (a name too long, a NUL byte)
        raise TraceFormatError("no such file", path=path, hint="check the path")
    if path.is_dir():
        raise TraceFormatError("is a directory, not a trace file", path=path, hint=inside)
    jsontext.refuse_device(path, TraceFormatError)
    return path


def parse_trace(data: Any, *, path: str | Path, line: int | None = None) -> Trace:
    """One canonical trace from parsed JSON; shape errors name the file, line and JSON path."""
    if not isinstance(data, dict):
        raise TraceFormatError(
            f"expected a trace object, got {type(data).__name__}",
            path=path,
            line=line,
            hint="each line of a .jsonl trace file holds one JSON object",
        )
    declared = data.get("schema", SCHEMA)
    if declared != SCHEMA:
        raise TraceFormatError(
            f"schema is {declared!r}, expected {SCHEMA!r}",
            path=path,
            line=line,
            key="$.schema",
            hint="import recorded traces with `ctxbench import FILE -o traces.jsonl` first",
        )
    for key in ("id", "messages"):
        if key not in data:
            raise TraceFormatError(
                f"missing required key {key!r}",
                path=path,
                line=line,
                key="$",
                hint="a canonical trace needs 'id' and 'messages'; see `ctxbench.formats.canonical.schema()`",
            )
    try:
        return Trace.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceFormatError(
            f"invalid trace: {_describe(exc)}",
            path=path,
            line=line,
            key=_locate(data, exc),
            hint="compare with the ctxbench.trace/1 JSON schema (ctxbench.formats.schema())",
        ) from None


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing key {exc.args[0]!r}"
    return str(exc)


def _locate(data: dict[str, Any], exc: Exception) -> str:
    """Best-effort JSON path of the failing element, by re-parsing element by element."""
    from ctxbench.probes.model import Probe
    from ctxbench.trace import Message, RecordedCompaction, ToolSpec

    for key, cls in (
        ("messages", Message),
        ("tools", ToolSpec),
        ("probes", Probe),
        ("recorded_compactions", RecordedCompaction),
    ):
        items = data.get(key)
        if not isinstance(items, list):
            continue
        for i, item in enumerate(items):
            try:
                cls.from_dict(item)
            except (KeyError, TypeError, ValueError, AttributeError):
                return f"$.{key}[{i}]"
    return "$"


@contextmanager
def reading(path: str | Path) -> Iterator[None]:
    """I/O and decoding failures while reading ``path`` become a TraceFormatError naming it."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise TraceFormatError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})",
            path=path,
            hint="re-encode the file as UTF-8",
        ) from None
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceFormatError(
            f"cannot read: {exc}", path=path, hint="is the file complete and readable?"
        ) from None


def read_traces(path: str | Path) -> Iterator[Trace]:
    """Stream the traces of a canonical ``.jsonl`` / ``.jsonl.gz`` / ``.json`` file."""
    path = trace_file(path, inside="give the .jsonl files inside it")
    with reading(path):
        if inner_suffix(path) == ".json":
            with open_text(path) as fh:
                text = jsontext.bounded_read(fh, path=path, error=TraceFormatError)
            if not text.strip():
                raise TraceFormatError("the file is empty", path=path, hint="give a trace file")
            data = jsontext.loads(text, path=path, error=TraceFormatError)
            items = data if isinstance(data, list) else [data]
            for item in items:
                yield parse_trace(item, path=path)
            return
        with open_text(path) as fh:
            lines = jsontext.bounded_lines(fh, path=path, error=TraceFormatError)
            for lineno, data in jsontext.json_lines(
                lines,
                path=path,
                error=TraceFormatError,
                hint="each line must be one complete JSON object; was the file truncated?",
            ):
                yield parse_trace(data, path=path, line=lineno)


def trace_line(trace: Trace) -> str:
    """One trace as a canonical JSON line (deterministic key order, no trailing newline)."""
    return json.dumps(trace.to_dict(), ensure_ascii=False, separators=(",", ":"))


def write_traces(path: str | Path, traces: Iterable[Trace]) -> int:
    """Write traces to ``path`` atomically (temp file + rename): a failed write (disk full,
    read-only folder) raises OutputError and leaves no partial file. Returns how many were
    written."""
    path = Path(path)
    count = 0
    with AtomicFile(path, "wb") as raw:
        stream: Any = (
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if path.suffix == ".gz" else raw
        )
        single_json = path.suffix == ".json"
        for trace in traces:
            if single_json and count:
                raise TraceFormatError(
                    "a .json file holds one trace",
                    path=path,
                    hint="write several traces to a .jsonl file",
                )
            stream.write(trace_line(trace).encode("utf-8", "backslashreplace") + b"\n")
            count += 1
        if stream is not raw:
            stream.close()
    return count
