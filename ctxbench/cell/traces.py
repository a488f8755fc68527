"""Where a cell's trace comes from, and the one front door every command reads traces through.

:func:`open_traces` reads a file of canonical traces or of any importable recorded format,
auto-detected (``TraceFile.format`` says which). A cell names its trace by *address*,
``SOURCE#INDEX``, and whoever runs it loads the trace again through :func:`load_trace`:

- ``file:/abs/traces.jsonl#3``: the fourth trace of a file (``?format=swe_agent`` for a
  recorded format, ``?probes=/abs/p.jsonl`` to attach probes);
- ``scenario:coding_agent?seed=0&count=2#1``: the second trace generated from a scenario;
- ``hf:org/dataset:train#17``: row 17 of a Hugging Face dataset split.

An address is also what a result row's ``spec.trace_source`` holds, so a row can be re-run
alone. Loaders cache per source for the life of the process: the line offsets of a canonical
``.jsonl`` file (random access), the position of a sequential reader (compressed or recorded
files, datasets, scenarios), and the last trace loaded, by address and trace id (a bare file
address names all its traces). Memory never holds a whole corpus.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ctxbench import jsontext
from ctxbench.errors import CtxbenchError, TraceFormatError
from ctxbench.trace import Trace

KINDS = ("file", "scenario", "hf")
#: The canonical trace format (read by the fast, streamed reader); others go through importers.
CANONICAL = "canonical"
#: Detect the format of a file.
AUTO = "auto"


@dataclass(frozen=True)
class TraceFile:
    """A file of traces, its format (detected or given), opened lazily."""

    path: Path
    format: str
    detected: bool

    @property
    def canonical(self) -> bool:
        return self.format == CANONICAL

    def traces(self, messages_column: str | None = None) -> Iterator[Trace]:
        if self.canonical:
            from ctxbench.formats.canonical import read_traces

            yield from read_traces(self.path)
            return
        from ctxbench.formats.importer import ImportOptions
        from ctxbench.formats.importing import open_source

        options = ImportOptions(messages_column=messages_column)
        yield from open_source(self.path, self.format).traces(options)

    @property
    def address(self) -> str:
        """How a row's ``trace_source`` names this file, with its format."""
        return str(SourceRef("file", str(self.path), (("format", self.format),)))


def detected_format(path: str | Path, *, strict: bool = False) -> str | None:
    """The format detection finds for ``path``; None when it finds none (or cannot read the
    file), unless ``strict``, which raises the detector's error listing what it expected."""
    from ctxbench.formats.document import open_document
    from ctxbench.formats.importing import detect_format

    try:
        return detect_format(open_document(path)).name
    except CtxbenchError:
        if strict:
            raise
        return None


def open_traces(path: str | Path, format: str = AUTO, *, strict: bool = False) -> TraceFile:
    """The front door for trace files: canonical or any recorded format, ``auto``-detected.

    A file detection cannot place is read as canonical (so its error names the line that is
    wrong), or with ``strict`` refused by the detector. Asked for ``canonical``, a recorded file
    is refused in one line that names its format and the ``ctxbench import`` command to run."""
    if format == AUTO:
        found = detected_format(path, strict=strict)
        return TraceFile(Path(path), found or CANONICAL, detected=True)
    if format == CANONICAL:
        found = detected_format(path)
        if found not in (None, CANONICAL):
            name = Path(path).name
            raise TraceFormatError(
                f"this is a {found} recorded file, not canonical traces",
                path=path,
                hint=f"convert it with `ctxbench import {name} -o {Path(name).stem}.jsonl`, "
                'or give format = "auto"',
            )
    return TraceFile(Path(path), format, detected=False)


def _quote(text: str) -> str:
    return text.replace("%", "%25").replace("?", "%3F").replace("#", "%23").replace("&", "%26")


@dataclass(frozen=True)
class SourceRef:
    """One concrete source: a file, one scenario seed, or one dataset split."""

    kind: str
    location: str
    options: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        text = f"{self.kind}:{_quote(self.location)}"
        if self.options:
            text += "?" + "&".join(f"{k}={_quote(v)}" for k, v in sorted(self.options))
        return text

    @classmethod
    def parse(cls, text: str) -> SourceRef:
        """The inverse of ``str()``; a bare path (as ``ctxbench run`` records) is a file."""
        kind, sep, rest = text.partition(":")
        if not sep or kind not in KINDS:
            return cls("file", text)
        location, _, query = rest.partition("?")
        options = []
        for item in query.split("&") if query else []:
            key, _, value = item.partition("=")
            options.append((unquote(key), unquote(value)))
        return cls(kind, unquote(location), tuple(sorted(options)))

    def option(self, key: str, default: str = "") -> str:
        return dict(self.options).get(key, default)

    @property
    def random_access(self) -> bool:
        """Whether any trace loads without reading the ones before it."""
        if self.kind == "scenario":
            return self.option("count", "1") == "1"
        return self.kind == "file" and _is_plain_jsonl(self)


def _is_plain_jsonl(ref: SourceRef) -> bool:
    return ref.option("format", CANONICAL) == CANONICAL and Path(ref.location).suffix in (
        ".jsonl",
        ".ndjson",
    )


def split_address(address: str) -> tuple[SourceRef, int | None]:
    """``SOURCE#INDEX`` -> (source, index); an address without ``#INDEX`` has no index."""
    head, sep, tail = address.rpartition("#")
    if sep and tail.isdigit():
        return SourceRef.parse(head), int(tail)
    return SourceRef.parse(address), None


def iter_traces(ref: SourceRef) -> Iterator[Trace]:
    """The traces of one source, in order, one at a time (probes attached, limit applied)."""
    limit = int(ref.option("limit", "0"))
    for index, trace in enumerate(_raw_traces(ref)):
        if limit and index >= limit:
            return
        yield _with_external_probes(trace, ref)


def _raw_traces(ref: SourceRef) -> Iterator[Trace]:
    if ref.kind == "scenario":
        from ctxbench.synth import generate

        spec = _scenario_spec(ref.location)
        yield from generate(spec, int(ref.option("seed", "0")), count=int(ref.option("count", "1")))
    elif ref.kind == "hf":
        from ctxbench.formats.hf_dataset import read_hub
        from ctxbench.formats.importer import ImportOptions

        column = ref.option("messages_column") or None
        yield from read_hub(ref.location, ImportOptions(messages_column=column))
    else:
        source = open_traces(ref.location, ref.option("format", CANONICAL), strict=True)
        yield from source.traces(ref.option("messages_column") or None)


@cache
def _scenario_spec(location: str) -> Any:
    """Scenario files are parsed once per process."""
    from ctxbench.synth import load_scenario

    return load_scenario(location)


@cache
def _external_probes(path: str) -> dict[str, Any]:
    from ctxbench.probes.probe_file import load_probes

    return dict(load_probes(path))


def _with_external_probes(trace: Trace, ref: SourceRef) -> Trace:
    """The trace with the probes the source's probe file lists for it (added to its own)."""
    path = ref.option("probes")
    if not path:
        return trace
    probes = _external_probes(path).get(trace.id)
    if not probes:
        return trace
    from ctxbench.probes.probe_file import with_probes

    return with_probes(trace, probes)


class TraceLoader:
    """Loads traces by address inside a worker, caching per source (see the module doc).

    Thread-safe: a Dask worker may run several tasks at once in threads of one process."""

    def __init__(self) -> None:
        self._offsets: dict[str, list[tuple[int, int]]] = {}
        self._readers: dict[str, tuple[Iterator[Trace], int]] = {}
        #: the last trace loaded, by (address, trace id): an address without ``#INDEX`` (a
        #: bare file, as ``ctxbench run`` records) names every trace of its file
        self._last: tuple[tuple[str, str], Trace] | None = None
        self._lock = threading.Lock()

    def load(self, address: str, trace_id: str = "", trace_hash: str = "") -> Trace:
        """The trace at ``address``; checks its id and, when given, its content hash."""
        with self._lock:
            key = (address, trace_id)
            if self._last is not None and self._last[0] == key:
                trace = self._last[1]
            else:
                ref, index = split_address(address)
                trace = self._find(ref, index, trace_id)
                self._last = (key, trace)
        if trace_id and trace.id != trace_id:
            raise TraceFormatError(
                f"expected trace {trace_id!r} at {address}, found {trace.id!r}",
                hint="the source changed since the sweep was planned; start a new results dir",
            )
        if trace_hash and trace.content_hash != trace_hash:
            raise TraceFormatError(
                f"trace {trace.id!r} at {address} changed since the sweep was planned "
                "(content hash differs)",
                hint="restore the source or start a new results directory",
            )
        return trace

    def _find(self, ref: SourceRef, index: int | None, trace_id: str) -> Trace:
        if index is None:
            for trace in iter_traces(ref):
                if trace.id == trace_id:
                    return trace
            raise TraceFormatError(f"no trace {trace_id!r} in {ref}", hint="check the source")
        if ref.kind == "file" and _is_plain_jsonl(ref):
            return self._at_offset(ref, index)
        return self._sequential(ref, index)

    def _at_offset(self, ref: SourceRef, index: int) -> Trace:
        from ctxbench.formats.canonical import parse_trace

        offsets = self._offsets.get(ref.location)
        if offsets is None:
            offsets = self._offsets[ref.location] = _line_offsets(Path(ref.location))
        if index >= len(offsets):
            raise TraceFormatError(
                f"has {len(offsets)} traces, no trace #{index}", path=ref.location
            )
        offset, lineno = offsets[index]
        with open(ref.location, "rb") as fh:
            fh.seek(offset)
            line = fh.readline()
        data = jsontext.loads(
            line,
            path=ref.location,
            line=lineno,
            error=TraceFormatError,
            hint="the file changed since the sweep was planned; restore it or start a new results dir",
        )
        return _with_external_probes(parse_trace(data, path=ref.location, line=lineno), ref)

    def _sequential(self, ref: SourceRef, index: int) -> Trace:
        key = str(ref)
        reader, position = self._readers.get(key, (iter(()), 0))
        if index < position or key not in self._readers:
            reader, position = iter_traces(ref), 0
        for trace in reader:
            position += 1
            if position == index + 1:
                self._readers[key] = (reader, position)
                return trace
        self._readers.pop(key, None)
        raise TraceFormatError(f"has {position} traces, no trace #{index}", path=str(ref))


def _line_offsets(path: Path) -> list[tuple[int, int]]:
    """(byte offset, line number) of every non-blank line of a JSON Lines file."""
    from ctxbench.guard import regular_file

    regular_file(path, error=TraceFormatError, hint="give a trace file")
    out = []
    offset = 0
    try:
        with path.open("rb") as fh:
            for lineno, line in enumerate(fh, start=1):
                if line.strip():
                    out.append((offset, lineno))
                offset += len(line)
    except OSError as exc:
        raise TraceFormatError(f"cannot read: {exc.strerror or exc}", path=path) from None
    return out


@cache
def process_loader() -> TraceLoader:
    """The loader of this process: its caches serve every task the process runs."""
    return TraceLoader()


def load_trace(address: str, trace_id: str = "", trace_hash: str = "") -> Trace:
    """Load one trace by its address (``RunSpec.trace_source``), through the process cache."""
    return process_loader().load(address, trace_id, trace_hash)
