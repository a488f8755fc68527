"""Importing recorded files: pick the format (or detect it), read canonical traces, and count
what was mapped.

``open_source(path, format)`` opens a file once and chooses its importer; ``Source.traces()``
streams the traces. A :class:`Tally` counts traces, messages, model calls, calls with
recorded usage, the unmapped keys kept in ``meta`` (by level) and the structural problems
:func:`ctxbench.validation.validate` finds, into an :class:`ImportReport`.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ctxbench.errors import CtxbenchError, TraceFormatError
from ctxbench.formats import FORMATS
from ctxbench.formats.canonical import parse_trace
from ctxbench.formats.document import Document, open_document
from ctxbench.formats.importer import Importer, ImportOptions
from ctxbench.formats.location import At, kind_of
from ctxbench.jsontext import attrs
from ctxbench.trace import SCHEMA, Message, RecordedCompaction, Trace
from ctxbench.validation import validate

AUTO = "auto"
#: Detection order: the most specific shapes first, generic chat messages and tables last.
DETECTION_ORDER = (
    "canonical",
    "tau2_bench",
    "mini_swe_agent",
    "swe_agent",
    "openhands",
    "openhands_completions",
    "claude_code",
    "codex",
    "tau_bench",
    "openai_chat",
    "hf_dataset",
)
#: Trace meta key the importer adds itself (not an unmapped source key).
IMPORTED_FROM = "imported_from"
#: Trace meta key where importers count the source entries that are not model input.
UNMAPPED_ENTRIES = "unmapped_entries"


class SessionLog:
    """What a session-log importer (Claude Code, Codex) builds from one file's entries, in
    order: the messages, the compactions the agent recorded, and the entry kinds it left out
    (``meta.unmapped_entries``)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.messages: list[Message] = []
        self.calls = 0
        self.compactions: list[RecordedCompaction] = []
        self.unmapped: Counter[str] = Counter()

    def add(self, record: dict[str, Any], line: int | None, at: At) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Finish what the last entries left open."""

    def read(self, doc: Document, format_name: str) -> None:
        for line, value in doc.records():
            at = At.start(doc.path, line=line, format=format_name)
            self.add(at.obj(value), line, at)
        self.close()

    def trace(self, trace_id: str, meta: dict[str, Any]) -> Trace:
        if self.unmapped:
            meta[UNMAPPED_ENTRIES] = dict(sorted(self.unmapped.items()))
        return Trace(
            trace_id,
            tuple(self.messages),
            meta=meta,
            recorded_compactions=tuple(self.compactions),
        )


DEFAULT_OPTIONS = ImportOptions()


# -- the canonical format as an importer (so `ctxbench import` accepts canonical files too) ----


def _is_canonical(value: Any) -> bool:
    return isinstance(value, dict) and value.get("schema") == SCHEMA


def _detect_canonical(doc: Document) -> bool:
    head = doc.head
    if isinstance(head, list):
        return bool(head) and _is_canonical(head[0])
    return _is_canonical(head)


def _read_canonical(doc: Document, options: ImportOptions) -> Iterator[Trace]:
    for line, value in doc.records():
        items = value if isinstance(value, list) else [value]
        for item in items:
            yield parse_trace(item, path=doc.path, line=line)


CANONICAL = Importer(
    name="canonical",
    expects=f'canonical traces {{"schema": "{SCHEMA}", "id", "messages", ...}}',
    detect=_detect_canonical,
    read=_read_canonical,
)


# -- choosing an importer ------------------------------------------------------------------------


def importer(name: str) -> Importer:
    """The importer registered as ``name`` (did-you-mean on typos)."""
    loaded = FORMATS.load(name)
    if not isinstance(loaded, Importer):
        raise TraceFormatError(
            f"format {name!r} is not an Importer",
            key="--format",
            hint="a plug-in format must be a ctxbench.formats.importer.Importer",
        )
    return loaded


def detect_format(doc: Document) -> Importer:
    """The first importer, in :data:`DETECTION_ORDER`, whose detector accepts ``doc``."""
    for name in DETECTION_ORDER:
        candidate = importer(name)
        if candidate.detect(doc):
            return candidate
    expected = "\n".join(f"    {name}: {importer(name).expects}" for name in DETECTION_ORDER)
    shape = kind_of(doc.head)
    line = f" (first record on line {doc.head_line})" if doc.head_line else ""
    raise TraceFormatError(
        f"cannot tell the format of this {doc.layout} file{line}: its top level is {shape}"
        f"{_keys_hint(doc.head)}; expected one of:\n{expected}",
        path=doc.path,
        line=doc.head_line,
        key="$",
        hint="give the format with --format NAME if it is one of these",
    )


def _keys_hint(head: Any) -> str:
    if isinstance(head, dict):
        return " with keys " + ", ".join(sorted(head)[:12])
    if isinstance(head, list) and head and isinstance(head[0], dict):
        return " of objects with keys " + ", ".join(sorted(head[0])[:12])
    return ""


@dataclass(frozen=True)
class Source:
    """A recorded file, opened, and the importer chosen for it."""

    document: Document
    importer: Importer
    detected: bool

    @property
    def path(self) -> Path:
        return self.document.path

    def traces(self, options: ImportOptions = DEFAULT_OPTIONS) -> Iterator[Trace]:
        """The file's canonical traces. Every failure is a CtxbenchError naming the file."""
        name = self.importer.name
        try:
            for trace in self.importer.read(self.document, options):
                if name != CANONICAL.name:
                    trace = replace(
                        unique_call_ids(trace),
                        meta={
                            **trace.meta,
                            IMPORTED_FROM: {"format": name, "file": self.path.name},
                        },
                    )
                yield trace
        except CtxbenchError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
            raise TraceFormatError(
                f"{name}: unexpected shape ({type(exc).__name__}: {exc})",
                path=self.path,
                hint=f"is this really a {name} file? try --format auto",
            ) from None


def open_source(path: str | Path, format: str = AUTO) -> Source:
    """Open ``path`` and choose its importer: ``format``, or detection when it is ``auto``."""
    doc = open_document(path)
    if format == AUTO:
        return Source(doc, detect_format(doc), detected=True)
    return Source(doc, importer(format), detected=False)


def unique_call_ids(trace: Trace) -> Trace:
    """The trace with reused tool-call ids made unique.

    Some recorders reuse a call id in a later turn (tau-bench v1, hand-edited SWE-agent
    demonstrations). Each result directly follows the call it answers, so the pairing is
    unambiguous; the later call becomes ``id~2`` (``~3``...) and so do its results, with the
    recorded id kept in meta as ``recorded_id``. Without this, every replay would report
    pairing violations that compaction did not cause.
    """
    seen: set[str] = set()
    queues: dict[str, deque[str]] = {}
    out: list[Message] = []
    changed = False
    for msg in trace.messages:
        if msg.role == "assistant":
            queues = {}
            calls = []
            renamed = False
            for call in msg.tool_calls:
                new_id, n = call.id, 1
                while new_id in seen:
                    n += 1
                    new_id = f"{call.id}~{n}"
                seen.add(new_id)
                queues.setdefault(call.id, deque()).append(new_id)
                if new_id != call.id:
                    call = replace(call, id=new_id, meta={**call.meta, "recorded_id": call.id})
                    renamed = changed = True
                calls.append(call)
            out.append(replace(msg, tool_calls=tuple(calls)) if renamed else msg)
        elif msg.role == "tool" and msg.tool_call_id in queues and queues[msg.tool_call_id]:
            new_id = queues[msg.tool_call_id].popleft()
            if new_id != msg.tool_call_id:
                msg = replace(
                    msg, tool_call_id=new_id, meta={**msg.meta, "recorded_id": msg.tool_call_id}
                )
            out.append(msg)
        else:
            if msg.role not in ("tool", "system"):
                queues = {}
            out.append(msg)
    return replace(trace, messages=tuple(out)) if changed else trace


# -- counting what was mapped --------------------------------------------------------------------


@dataclass(frozen=True)
class ImportReport:
    """What one import mapped: counts, unmapped keys kept in ``meta`` and problems found."""

    source: str
    format: str
    detected: bool
    traces: int
    messages: int
    model_calls: int
    calls_with_usage: int
    unmapped: Mapping[str, int] = field(default_factory=dict)
    problems: Mapping[str, int] = field(default_factory=dict)
    tool_calls: int = 0
    #: replayed reasoning items: thinking blocks, reasoning items, reasoning text fields
    thinking_blocks: int = 0
    recorded_compactions: int = 0
    #: source entries that are not model input (progress, snapshots, events), by type
    unmapped_entries: Mapping[str, int] = field(default_factory=dict)

    @property
    def problem_count(self) -> int:
        return sum(self.problems.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            **attrs(self, "source format detected traces messages model_calls calls_with_usage"),
            "unmapped": dict(self.unmapped),
            "problems": dict(self.problems),
            "tool_calls": self.tool_calls,
            "thinking_blocks": self.thinking_blocks,
            "recorded_compactions": self.recorded_compactions,
            "unmapped_entries": dict(self.unmapped_entries),
        }


class Tally:
    """Counts traces as they stream past (the CLI writes them while counting)."""

    def __init__(self, source: str, format: str, detected: bool) -> None:
        self.source, self.format, self.detected = source, format, detected
        self.traces = self.messages = self.model_calls = self.calls_with_usage = 0
        self.tool_calls = self.thinking_blocks = self.recorded_compactions = 0
        self.unmapped: Counter[str] = Counter()
        self.problems: Counter[str] = Counter()
        self.unmapped_entries: Counter[str] = Counter()

    def add(self, trace: Trace) -> Trace:
        self.traces += 1
        self.messages += len(trace.messages)
        self.recorded_compactions += len(trace.recorded_compactions)
        entries = trace.meta.get(UNMAPPED_ENTRIES)
        if isinstance(entries, Mapping):
            self.unmapped_entries.update(
                {str(k): v for k, v in entries.items() if isinstance(v, int)}
            )
        self.unmapped.update(
            f"trace.{k}" for k in trace.meta if k not in (IMPORTED_FROM, UNMAPPED_ENTRIES)
        )
        self.unmapped.update(f"tool.{k}" for t in trace.tools for k in t.meta)
        for msg in trace.messages:
            self.unmapped.update(f"message.{k}" for k in msg.meta)
            self.unmapped.update(f"tool_call.{k}" for c in msg.tool_calls for k in c.meta)
            self.tool_calls += len(msg.tool_calls)
            self.thinking_blocks += thinking_blocks(msg)
            if msg.role == "assistant":
                self.model_calls += 1
                if msg.usage is not None and msg.usage.prompt_tokens is not None:
                    self.calls_with_usage += 1
            if msg.usage is not None:
                self.unmapped.update(f"usage.{k}" for k in msg.usage.meta)
        self.problems.update(p.code for p in validate(trace))
        return trace

    def count(self, traces: Iterable[Trace]) -> Iterator[Trace]:
        for trace in traces:
            yield self.add(trace)

    def report(self) -> ImportReport:
        return ImportReport(
            self.source,
            self.format,
            self.detected,
            self.traces,
            self.messages,
            self.model_calls,
            self.calls_with_usage,
            dict(sorted(self.unmapped.items())),
            dict(sorted(self.problems.items())),
            self.tool_calls,
            self.thinking_blocks,
            self.recorded_compactions,
            dict(sorted(self.unmapped_entries.items())),
        )


def thinking_blocks(message: Message) -> int:
    """Reasoning items a message replays: each block of a list field, one per text field."""
    return sum(
        len(value) if isinstance(value, list) else 1
        for key, value in message.replay.items()
        if key not in ("codex_message_items",)
    )


def import_file(
    path: str | Path, format: str = AUTO, options: ImportOptions = DEFAULT_OPTIONS
) -> tuple[list[Trace], ImportReport]:
    """All traces of one recorded file, and the report of what was mapped."""
    source = open_source(path, format)
    tally = Tally(str(path), source.importer.name, source.detected)
    traces = list(tally.count(source.traces(options)))
    return traces, tally.report()


def unique_ids(
    traces: Iterable[Trace], seen: set[str], renamed: list[tuple[str, str]]
) -> Iterator[Trace]:
    """Traces with ids made unique across files (``id~2``, ``id~3``...); renames are recorded."""
    for trace in traces:
        new_id, n = trace.id, 1
        while new_id in seen:
            n += 1
            new_id = f"{trace.id}~{n}"
        seen.add(new_id)
        if new_id != trace.id:
            renamed.append((trace.id, new_id))
            trace = replace(trace, id=new_id)
        yield trace
