"""The one reader of results: a sweep's directory (finished, running or interrupted), a folder
that ``ctxbench run --out/--events`` wrote, a file of rows, or an events file.

Every failure is a :class:`ResultsError` naming the file, the line (or column) and the fix.
Rows come back as :class:`RunResult` (``results()``, ``result()``, :func:`read_result`),
events as their classes with their run id (``typed_events()``, decoded by
:func:`ctxbench.engine.events.decode`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ctxbench import jsontext
from ctxbench.cell.spec import RunSpec
from ctxbench.engine.events import Event, event_problem
from ctxbench.engine.result import RunResult
from ctxbench.errors import ResultsError
from ctxbench.guard import regular_file, small_file
from ctxbench.results import layout
from ctxbench.results.files import refuse_links
from ctxbench.results.journal import journal_index, read_record
from ctxbench.results.table import read_results, read_rows

#: What to do about a damaged standalone events file.
EVENTS_HINT = "give the --events file of `ctxbench run` or a sweep's events.jsonl"


class ResultsDir:
    """Read a results directory (see :mod:`ctxbench.results.layout`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not any((self.path / name).is_file() for name in layout.MARKERS):
            raise ResultsError(
                f"not a results directory (no {', '.join(layout.MARKERS)})",
                path=self.path,
                hint="give the -o DIR of a `ctxbench sweep` run "
                "(or a folder holding `ctxbench run --out DIR/results.jsonl`)",
            )
        own = sorted({*layout.OWN_FILES, *layout.ROW_FILES} - {layout.FILES})
        refuse_links(self.path, [*own, layout.FILES], error=ResultsError)
        for name in own:  # a FIFO or device among its files would hang or flood a reader
            regular_file(self.path / name, error=ResultsError, hint="restore the results file")

    @property
    def complete(self) -> bool:
        """Whether the sweep finished (its final table is written, parquet or JSON Lines)."""
        return self._row_file is not None

    @property
    def has_events(self) -> bool:
        return any((self.path / n).is_file() for n in (layout.EVENTS, layout.JOURNAL))

    @property
    def _row_file(self) -> Path | None:
        return next((self.path / n for n in layout.ROW_FILES if (self.path / n).is_file()), None)

    def spec(self) -> dict[str, Any]:
        """The resolved sweep spec, as ``sweep.json`` holds it."""
        path = self.path / layout.SPEC_FILE
        hint = "sweep.json is written when a sweep starts: rerun the sweep into a new directory"
        small_file(path, what="a sweep spec", error=ResultsError, hint=hint)
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise ResultsError(
                f"cannot read the sweep spec: {reason}", path=path, hint=hint
            ) from None
        spec = jsontext.loads(text, path=path, hint=hint, error=ResultsError)
        if not isinstance(spec, dict):
            raise ResultsError("the sweep spec is not a JSON object", path=path, key="$", hint=hint)
        return spec

    def _rows(self) -> list[dict[str, Any]]:
        """Every row as the file holds it, sorted by run_id (None stays None: no NaN)."""
        row_file = self._row_file
        if row_file is not None:
            return sorted(read_rows(row_file), key=lambda r: str(r["run_id"]))
        journal = self.path / layout.JOURNAL
        records = journal_index(journal)
        return [read_record(journal, records[rid])["row"] for rid in sorted(records)]

    def results(self) -> list[RunResult]:
        """Every row as a :class:`RunResult`, sorted by run_id; a row without a column is one
        error."""
        return [_result_of(row, self.path) for row in self._rows()]

    def frame(self) -> Any:
        """The rows as a pandas DataFrame."""
        from ctxbench.extras import require

        pd = require("pandas", what="ResultsDir.frame()")
        return pd.DataFrame(self._rows(), columns=RunResult.columns())

    def result(self, run_id: str) -> RunResult:
        """The row of one cell as a :class:`RunResult`; an unknown run id is an error listing
        how to find one."""
        for row in self._rows():
            if row["run_id"] == run_id:
                return _result_of(row, self.path)
        raise ResultsError(
            f"no row with run_id {run_id!r}",
            path=self.path,
            hint="run ids are in the run_id column of results.parquet",
        )

    def _event_records(
        self, run_id: str | None = None, *, skip: tuple[str, ...] = ()
    ) -> Iterator[dict[str, Any]]:
        """Every event line (or those of one cell) as parsed, with ``run_id``, in file order;
        event types in ``skip`` are passed over (before parsing, when the line shows them)."""
        if not (self.path / layout.JOURNAL).is_file() or self.complete:
            events = self.path / layout.EVENTS
            if events.is_file():
                yield from event_lines(events, run_id, skip=skip, hint=layout.REBUILD, stamped=True)
            return
        journal = self.path / layout.JOURNAL
        records = journal_index(journal)
        for rid in sorted(records) if run_id is None else [run_id]:
            if rid in records:
                for e in read_record(journal, records[rid])["events"]:
                    if e["type"] not in skip:
                        yield {"run_id": rid, **e}

    def typed_events(
        self, run_id: str | None = None, *, skip: tuple[str, ...] = ()
    ) -> Iterator[tuple[str, Event]]:
        """``(run_id, Event)`` of every event (or those of one cell), types in ``skip``
        passed over before parsing when the line shows them."""
        for e in self._event_records(run_id, skip=skip):  # stamped: run_id and step checked
            yield str(e.pop("run_id")), Event.from_dict(e)

    def files_dir(self, run_id: str) -> Path:
        """Where the snapshot / offload files of one cell are."""
        return self.path / layout.FILES / run_id


def _result_of(row: Mapping[str, Any], path: Path) -> RunResult:
    try:
        return RunResult.from_row(row)
    except KeyError as exc:
        raise ResultsError(
            f"a row has no column {exc.args[0]!r}",
            path=path,
            hint="it was written by another ctxbench version: rerun the sweep",
        ) from None


def event_lines(
    path: Path,
    run_id: str | None = None,
    *,
    skip: tuple[str, ...] = (),
    hint: str = EVENTS_HINT,
    stamped: bool = False,
) -> Iterator[dict[str, Any]]:
    """The events of an events JSONL file (or one run's), checked line by line; ``stamped``:
    each must carry its run's id and its step too (a results directory's file does)."""
    markers = tuple(f'"type":"{t}"' for t in skip)
    for number, line in jsontext.text_lines(path, error=ResultsError, hint=hint):
        if not line.strip() or (markers and any(m in line[:120] for m in markers)):
            continue
        event = jsontext.loads(line, path=path, line=number, error=ResultsError, hint=hint)
        problem = event_problem(event)
        if problem is None and stamped:
            problem = _stamp_problem(event)
        if problem is not None:
            key, message = problem
            raise ResultsError(message, path=path, line=number, key=key, hint=hint)
        if run_id is None or event.get("run_id") == run_id:
            yield event


def _stamp_problem(event: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(JSON path, what is wrong)`` when an event line lacks its run id or its step."""
    if not isinstance(event.get("run_id"), str):
        return "$.run_id", f"run_id must be a string, not {event.get('run_id')!r}"
    step = event.get("step")
    if not isinstance(step, int) or isinstance(step, bool):
        return "$.step", f"step must be an integer, not {step!r}"
    return None


def spec_of_row(row: RunResult | Mapping[str, Any]) -> RunSpec:
    """The RunSpec a row carries; its run id must match the row's."""
    if isinstance(row, RunResult):
        row = {"run_id": row.run_id, "spec": row.spec}
    try:
        data = json.loads(row["spec"])
    except (KeyError, TypeError, ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise ResultsError(
            "the row has no readable 'spec' column",
            key="spec",
            hint="give a row written by ctxbench",
        )
    spec = RunSpec.from_dict(data)
    if row.get("run_id") not in (None, spec.run_id):
        raise ResultsError(
            f"the row's run_id {row['run_id']!r} does not match its spec ({spec.run_id!r})",
            hint="the row was edited, or written by another ctxbench version",
        )
    return spec


def read_result(path: str | Path, run_id: str | None = None) -> RunResult:
    """One row as a :class:`RunResult` from a results directory (by run id) or a JSON Lines
    file of rows (the only row, or the one with ``run_id``)."""
    path = Path(path)
    if path.is_dir():
        if not run_id:
            raise ResultsError(
                "a results directory holds many rows", path=path, hint="add --run-id RUN_ID"
            )
        return ResultsDir(path).result(run_id)
    rows = [r for r in read_results(path) if not run_id or r.run_id == run_id]
    if len(rows) != 1:
        raise ResultsError(
            f"expected one row, found {len(rows)}" + (f" with run_id {run_id!r}" if run_id else ""),
            path=path,
            hint="give --run-id to pick one row of a JSON Lines file",
        )
    return rows[0]
