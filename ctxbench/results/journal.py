"""The journal of a sweep, ``cells.jsonl``: one ``{"run_id", "row", "events"}`` line per
finished cell. Written by the sweep's store (a line is a cell's commit), read here by the one
results reader while a sweep runs or after it was interrupted."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ctxbench.engine.events import event_problem
from ctxbench.engine.result import RunResult
from ctxbench.errors import CtxbenchError, ResultsError
from ctxbench.results.table import column_types

RUN_ID = re.compile(rb'^\{"run_id":"([^"]+)"')


def record_line(result: RunResult, events: Sequence[Mapping[str, object]]) -> str:
    """The journal record of a cell: ``{"run_id", "row", "events"}`` as one JSON line."""
    payload = {"run_id": result.run_id, "row": result.to_row(), "events": list(events)}
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def journal_index(journal: Path) -> dict[str, tuple[int, int]]:
    """run_id -> (offset, length) of its complete journal line (the last one wins)."""
    index: dict[str, tuple[int, int]] = {}
    if not journal.exists():
        return index
    offset = 0
    with journal.open("rb") as fh:
        for line in fh:
            match = RUN_ID.match(line)
            if line.endswith(b"\n") and match is not None:
                index[match.group(1).decode("utf-8", "replace")] = (offset, len(line))
            offset += len(line)
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


def read_record(journal: Path, where: tuple[int, int]) -> dict[str, Any]:
    """One journal record; a corrupt line is an error naming its line number."""
    with journal.open("rb") as fh:
        fh.seek(where[0])
        line = fh.read(where[1])
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
