"""The journal of a sweep, ``cells.jsonl``: one ``{"run_id", "row", "events"}`` line per
finished cell. Written by the sweep's store (a line is a cell's commit), read here by the one
results reader while a sweep runs or after it was interrupted.

Lines are bounded by :data:`ctxbench.limits.MAX_LINE_CHARS` (in bytes here) both ways: a
cell whose record would be longer is journalled as a failed cell saying so (its events are
dropped, its metrics kept), and a longer line is never read into memory: recovery skips it
by line number, readers refuse it by line number."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ctxbench import limits
from ctxbench.engine.events import Event, event_problem
from ctxbench.engine.result import RunResult
from ctxbench.errors import CtxbenchError, ResultsError
from ctxbench.jsontext import compact_json
from ctxbench.results.table import column_types

RUN_ID = re.compile(rb'^\{"run_id":"([^"]+)"')


_ENCODE = compact_json
#: what stands before each event of a record: JSON white space no other text of the line holds
#: (the encoder writes no white space between tokens, and a tab in a string as ``\t``)
EVENT_MARK = "\t"
_MARKED = "," + EVENT_MARK


def record_line(result: RunResult, events: Sequence[Mapping[str, object] | Event]) -> str:
    """The journal record of a cell: ``{"run_id", "row", "events"}`` as one JSON line; over
    the line limit, the record of a failed cell that says so (no events, the same metrics).

    Each event stands after a tab (:data:`EVENT_MARK`, white space to a JSON reader), so the
    events file is written from the line without decoding the events (:func:`split_record`)."""
    head = f'{{"run_id":{_ENCODE(result.run_id)},"row":{_ENCODE(result.to_row())},"events":['
    texts = (e.to_json() if isinstance(e, Event) else _ENCODE(e) for e in events)
    # each event after a mark: the first's mark, then the others' after their commas
    line = head + (EVENT_MARK if events else "") + _MARKED.join(texts) + "]}"
    # a character is at most 6 bytes here (a lone surrogate's backslash escape): a line that
    # short is within the limit without encoding it to count
    if len(line) * 6 <= limits.MAX_LINE_CHARS:
        return line
    size = len(line.encode("utf-8", "backslashreplace"))
    if size <= limits.MAX_LINE_CHARS:
        return line
    error = (
        f"JournalLimit: the cell's journal record is {size:,} bytes, over the limit of one "
        f"line ({limits.MAX_LINE_CHARS:,}, ctxbench.limits.MAX_LINE_CHARS); its "
        f"{len(events):,} events were not kept"
    )
    row = dataclasses.replace(result, error=error).to_row()
    return json.dumps(
        {"run_id": result.run_id, "row": row, "events": []},
        ensure_ascii=False,
        separators=(",", ":"),
    )


@dataclass(frozen=True)
class JournalLine:
    """One line of a journal as read: where it is, and its bytes (only the first
    ``MAX_LINE_CHARS + 1`` of a line over the limit, which is never read whole)."""

    number: int
    offset: int
    length: int
    data: bytes
    complete: bool

    @property
    def too_long(self) -> bool:
        return self.length > limits.MAX_LINE_CHARS

    @property
    def run_id(self) -> str | None:
        match = RUN_ID.match(self.data)
        return match.group(1).decode("utf-8", "replace") if match else None


def too_long_problem() -> str:
    return (
        f"longer than {limits.MAX_LINE_CHARS:,} bytes, the limit of one line "
        "(ctxbench.limits.MAX_LINE_CHARS)"
    )


def journal_lines(fh: IO[bytes]) -> Iterator[JournalLine]:
    """Every line of an open journal, in order; memory stays within the line limit."""
    number = offset = 0
    while True:
        data = fh.readline(limits.MAX_LINE_CHARS + 1)
        if not data:
            return
        number += 1
        length, last = len(data), data
        while len(last) and not last.endswith(b"\n") and length > limits.MAX_LINE_CHARS:
            last = fh.readline(_SKIP_CHUNK)  # past the rest of a line over the limit
            length += len(last)
        yield JournalLine(number, offset, length, data, last.endswith(b"\n"))
        offset += length


_SKIP_CHUNK = 1 << 20


def journal_index(journal: Path) -> dict[str, tuple[int, int]]:
    """run_id -> (offset, length) of its complete journal line (the last one wins)."""
    index: dict[str, tuple[int, int]] = {}
    if not journal.exists():
        return index
    with journal.open("rb") as fh:
        for line in journal_lines(fh):
            rid = line.run_id
            if line.complete and rid is not None:
                index[rid] = (line.offset, line.length)
    return index


def parse_line(line: bytes) -> tuple[Any, str]:
    """One journal line parsed, and what is wrong with it ("" if nothing): the sweep's
    recovery skips a damaged line, readers raise on it."""
    record: Any = None
    try:
        record = json.loads(line)
        problem = _record_problem(record)
    except UnicodeDecodeError:
        problem = "not UTF-8 text"
    except RecursionError:
        problem = "JSON nested too deeply"
    except ValueError as exc:  # malformed JSON, or a number too long to read
        problem = getattr(exc, "msg", "a number has too many digits")
    if not problem:
        match = RUN_ID.match(line)
        if match is None or match.group(1).decode("utf-8", "replace") != record.get("run_id"):
            problem = "its run_id is damaged"
    return record, problem


def split_record(line: str) -> tuple[dict[str, Any], list[str]] | None:
    """(the row, each event's JSON text) of a journal line :func:`record_line` wrote (its
    newline included), the events left undecoded; None for a record with no events, or one
    written without the marks (then decode it whole)."""
    start = line.find(EVENT_MARK)
    body = line[:-1] if line.endswith("\n") else line
    if start < 0 or not body.endswith("]}"):
        return None
    row: dict[str, Any] = json.loads(line[:start] + "]}")["row"]
    return row, body[start + 1 : -2].split("," + EVENT_MARK)


def read_line(journal: Path, where: tuple[int, int], written: bytes) -> str | None:
    """The journal line at ``where`` as text when its bytes are the line this process wrote
    (``written``: its :func:`line_digest`), else None (then :func:`read_record` checks it)."""
    if where[1] > limits.MAX_LINE_CHARS:
        return None
    with journal.open("rb") as fh:
        fh.seek(where[0])
        line = fh.read(where[1])
    return line.decode("utf-8") if line_digest(line) == written else None


def line_digest(line: bytes) -> bytes:
    """What tells a journal line from any other (its newline included)."""
    return hashlib.blake2b(line, digest_size=16).digest()


def read_record(
    journal: Path, where: tuple[int, int], *, written: bytes | None = None
) -> dict[str, Any]:
    """One journal record; a corrupt line, or one over the line limit (not read), is an
    error naming its line number. ``written``: the :func:`line_digest` of the line as this
    process wrote it; when the bytes read match, their shape is not checked again."""
    record: Any = None
    if where[1] > limits.MAX_LINE_CHARS:
        problem = too_long_problem()
    else:
        with journal.open("rb") as fh:
            fh.seek(where[0])
            line = fh.read(where[1])
        if written is not None and line_digest(line) == written:
            parsed: dict[str, Any] = json.loads(line)
            return parsed
        record, problem = parse_line(line)
    if problem:
        with journal.open("rb") as fh:
            lineno = fh.read(where[0]).count(b"\n") + 1
        raise ResultsError(
            f"corrupt journal line: {problem}",
            path=journal,
            line=lineno,
            hint="delete that line and rerun with --resume (the cell runs again)",
        )
    result: dict[str, Any] = record
    return result


def _record_problem(record: Any) -> str:
    """What is wrong with a parsed journal record ("" if nothing): readers of the rows and
    events rely on their shape and column types, as they do for the parquet table."""
    if not (
        isinstance(record, dict)
        and isinstance(record.get("row"), dict)
        and isinstance(record.get("events"), list)
        and all(isinstance(e, dict) for e in record["events"])
    ):
        return "not a {run_id, row, events} record"
    for column, tp in column_types().items():
        if column not in record["row"]:
            return f"the row has no column {column}"
        value = record["row"][column]
        allowed = (int, float) if tp is float else tp
        if value is not None and (
            not isinstance(value, allowed) or (isinstance(value, bool) and tp is not bool)
        ):
            return f"row column {column} holds {value!r}"
    spec_problem = row_spec_problem(record["row"])
    if spec_problem:
        return spec_problem
    for i, event in enumerate(record["events"]):
        problem = event_problem(event)
        if problem is None and not isinstance(event.get("step"), int):
            problem = "$.step", "step must be an integer"
        if problem is not None:
            return f"event {i}: {problem[1]}"
    return ""


def row_spec_problem(row: Mapping[str, Any]) -> str:
    """What is wrong with a row's ``spec`` column ("" if nothing): ``run --from-row`` and
    ``check`` read it as a run spec, so its shape is checked with the rest of the row (a row
    is data: issue 22)."""
    from ctxbench.results.reader import spec_of_row

    try:
        spec_of_row(row)
    except CtxbenchError as exc:
        return f"row column spec: {exc.message}"
    return ""
