"""The results directory of a sweep: append-only while it runs, a sorted table when it ends.

Layout of ``DIR``::

    sweep.json          the resolved sweep spec (written when the sweep starts)
    cells.jsonl         the journal: one line per finished cell, in completion order,
                        {"run_id": ..., "row": {...result row...}, "events": [{...}, ...]}
    files/<run_id>/     snapshot and offload files a cell wrote (written before its line)
    results.parquet     the final table: one row per cell of the sweep, sorted by run_id
    results.csv         the same table as CSV (``--csv``)
    events.jsonl        every event of every cell, ``run_id`` first on each line, sorted by
                        run_id, then in the order the replay emitted them
    .lock               held (flock) while a sweep writes, so two sweeps never share a dir

Crash safety: the journal line is a cell's commit. The lines of a task's cells are written
with one ``os.write`` and fsync'ed after the cells' files, so a SIGKILL or power loss leaves at worst a torn last line
(no trailing newline), which ``--resume`` cuts off before it appends; a cell is finished when
and only when its line is complete. The three final files are derived from the journal and
replaced atomically (temp file + rename) when the sweep ends; a resumed sweep removes them
first, so their presence means the last run finished. Rows and events are the same bytes
whichever executor and worker count produced them; only ``replay_seconds`` differs.

:class:`ResultsDir` is the read API the report, ``check`` and ``ctxbench run --from-row``
use: it reads the final files when present, the journal otherwise (a running or killed sweep).
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ctxbench.engine.events import Event, event_line
from ctxbench.engine.result import RunResult
from ctxbench.engine.spec import RunSpec
from ctxbench.errors import ConfigError, OutputError

SPEC_FILE = "sweep.json"
JOURNAL = "cells.jsonl"
FILES = "files"
RESULTS = "results.parquet"
RESULTS_CSV = "results.csv"
EVENTS = "events.jsonl"
LOCK = ".lock"
FINAL_FILES = (RESULTS, RESULTS_CSV, EVENTS)

_RUN_ID = re.compile(rb'^\{"run_id":"([^"]+)"')
#: Rows per parquet row group when writing the final table.
ROW_GROUP = 10_000


class ResultsDir:
    """Read a sweep's results directory (finished, running or interrupted)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not (self.path / SPEC_FILE).is_file() and not (self.path / JOURNAL).is_file():
            raise ConfigError(
                "not a ctxbench results directory (no sweep.json, no cells.jsonl)",
                path=self.path,
                hint="give the -o DIR of a `ctxbench sweep` run",
            )

    @property
    def complete(self) -> bool:
        """Whether the sweep finished (its final table is written)."""
        return (self.path / RESULTS).is_file()

    def spec(self) -> dict[str, Any]:
        """The resolved sweep spec, as ``sweep.json`` holds it."""
        spec: dict[str, Any] = json.loads((self.path / SPEC_FILE).read_text("utf-8"))
        return spec

    def rows(self) -> list[dict[str, Any]]:
        """Every row, sorted by run_id (None stays None: no NaN)."""
        if self.complete:
            import pyarrow.parquet as pq

            rows: list[dict[str, Any]] = pq.read_table(self.path / RESULTS).to_pylist()
            return rows
        records = _journal_index(self.path / JOURNAL)
        return [_read_record(self.path / JOURNAL, records[rid])["row"] for rid in sorted(records)]

    def frame(self) -> Any:
        """The rows as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=RunResult.columns())

    def row(self, run_id: str) -> dict[str, Any]:
        """The row of one cell; an unknown run id is an error listing how to find one."""
        for row in self.rows():
            if row["run_id"] == run_id:
                return row
        raise ConfigError(
            f"no row with run_id {run_id!r}",
            path=self.path,
            hint="run ids are in the run_id column of results.parquet",
        )

    def events(self, run_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Every event (or those of one cell) as dicts with ``run_id``, in file order."""
        if self.complete:
            with (self.path / EVENTS).open("r", encoding="utf-8") as fh:
                for line in fh:
                    event: dict[str, Any] = json.loads(line)
                    if run_id is None or event["run_id"] == run_id:
                        yield event
            return
        journal = self.path / JOURNAL
        records = _journal_index(journal)
        for rid in sorted(records) if run_id is None else [run_id]:
            if rid in records:
                for e in _read_record(journal, records[rid])["events"]:
                    yield {"run_id": rid, **e}

    def files_dir(self, run_id: str) -> Path:
        """Where the snapshot / offload files of one cell are."""
        return self.path / FILES / run_id


def spec_of_row(row: Mapping[str, Any]) -> RunSpec:
    """The RunSpec a row carries; its run id must match the row's."""
    try:
        data = json.loads(row["spec"])
    except (KeyError, TypeError, json.JSONDecodeError):
        raise ConfigError(
            "the row has no readable 'spec' column", hint="give a row written by ctxbench"
        ) from None
    spec = RunSpec.from_dict(data)
    if row.get("run_id") not in (None, spec.run_id):
        raise ConfigError(
            f"the row's run_id {row['run_id']!r} does not match its spec ({spec.run_id!r})",
            hint="the row was edited, or written by another ctxbench version",
        )
    return spec


def read_row(path: str | Path, run_id: str | None = None) -> dict[str, Any]:
    """One row from a results directory (by run id) or a JSON / JSON Lines file of rows
    (the only row, or the one with ``run_id``)."""
    path = Path(path)
    if path.is_dir():
        if not run_id:
            raise ConfigError(
                "a results directory holds many rows", path=path, hint="add --run-id RUN_ID"
            )
        return ResultsDir(path).row(run_id)
    try:
        lines = [line for line in path.read_text("utf-8").splitlines() if line.strip()]
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", path=path) from None
    rows = []
    for lineno, line in enumerate(lines, start=1):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"malformed JSON: {exc.msg}", path=path, line=lineno) from None
    if run_id:
        rows = [r for r in rows if isinstance(r, dict) and r.get("run_id") == run_id]
    if len(rows) != 1 or not isinstance(rows[0], dict):
        raise ConfigError(
            f"expected one row, found {len(rows)}" + (f" with run_id {run_id!r}" if run_id else ""),
            path=path,
            hint="give --run-id to pick one row of a JSON Lines file",
        )
    row: dict[str, Any] = rows[0]
    return row


# -- writing -------------------------------------------------------------------------------------


class ResultsWriter:
    """The writing side, used by one sweep at a time (it holds ``DIR/.lock``)."""

    def __init__(self, path: str | Path, *, resume: bool) -> None:
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create: {exc.strerror or exc}", path=self.path) from None
        self._fd: int | None = None
        self._lock = _lock(self.path / LOCK)
        journal = self.path / JOURNAL
        if journal.exists() and not resume:
            self.close()
            raise OutputError(
                "already holds the results of a sweep",
                path=self.path,
                hint="add --resume to continue it, or give an empty directory",
            )
        for name in FINAL_FILES:
            (self.path / name).unlink(missing_ok=True)
        self.finished = _recover(journal)
        self._fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write_spec(self, spec: Mapping[str, Any]) -> None:
        _atomic_text(self.path / SPEC_FILE, json.dumps(spec, indent=2, sort_keys=True) + "\n")

    def append(self, cells: Sequence[tuple[str, str, Mapping[str, bytes]]]) -> None:
        """Persist finished cells ``(run_id, record, files)``: their files first, then their
        journal lines in one write and one fsync (a line is a cell's commit)."""
        from ctxbench.engine.runner import write_files

        for run_id, _, files in cells:
            if files:
                write_files(self.path / FILES / run_id, files)
        data = "".join(record + "\n" for _, record, _ in cells).encode("utf-8", "surrogatepass")
        assert self._fd is not None, "append() after close()"
        try:
            written = os.write(self._fd, data)
            while written < len(data):
                written += os.write(self._fd, data[written:])
            os.fsync(self._fd)
        except OSError as exc:
            raise OutputError(
                f"cannot append to the journal: {exc.strerror or exc}",
                path=self.path / JOURNAL,
                hint="free some space, then rerun with --resume",
            ) from None
        self.finished.update(run_id for run_id, _, _ in cells)

    def finalize(self, run_ids: Iterable[str], *, with_csv: bool = False) -> int:
        """Write the final table and events for ``run_ids`` (the sweep's cells), sorted by run
        id, from the journal. Returns the number of error rows."""
        journal = self.path / JOURNAL
        index = _journal_index(journal)
        wanted = sorted(set(run_ids))
        missing = [rid for rid in wanted if rid not in index]
        if missing:
            raise OutputError(
                f"{len(missing)} cells have no result (first: {missing[0]})",
                path=journal,
                hint="rerun with --resume to run them",
            )
        failed = 0
        with (
            _AtomicFile(self.path / EVENTS, "w") as events_out,
            _TableWriter(
                self.path / RESULTS, self.path / RESULTS_CSV if with_csv else None
            ) as table,
        ):
            for rid in wanted:
                record = _read_record(journal, index[rid])
                for e in record["events"]:
                    events_out.write(event_line(Event.from_dict(e), run_id=rid) + "\n")
                table.add(record["row"])
                failed += record["row"]["error"] is not None
        return failed

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lock(path: Path) -> IO[bytes] | None:
    """An exclusive lock on ``path`` (Unix); a second sweep on the same dir is an error."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock
        return None
    handle = path.open("wb")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise OutputError(
            "another sweep is writing this directory",
            path=path.parent,
            hint="wait for it to finish, or give another -o DIR",
        ) from None
    return handle


def _recover(journal: Path) -> set[str]:
    """The run ids finished so far; a torn last line (no newline) is cut off."""
    if not journal.exists():
        return set()
    finished = set()
    good = 0
    with journal.open("rb") as fh:
        for line in fh:
            if not line.endswith(b"\n"):
                break
            match = _RUN_ID.match(line)
            if match is None:
                break
            finished.add(match.group(1).decode("ascii"))
            good += len(line)
    if good < journal.stat().st_size:
        with journal.open("r+b") as fh:
            fh.truncate(good)
    return finished


def _journal_index(journal: Path) -> dict[str, tuple[int, int]]:
    """run_id -> (offset, length) of its complete journal line (the last one wins)."""
    index: dict[str, tuple[int, int]] = {}
    if not journal.exists():
        return index
    offset = 0
    with journal.open("rb") as fh:
        for line in fh:
            match = _RUN_ID.match(line)
            if line.endswith(b"\n") and match is not None:
                index[match.group(1).decode("ascii")] = (offset, len(line))
            offset += len(line)
    return index


def _read_record(journal: Path, where: tuple[int, int]) -> dict[str, Any]:
    with journal.open("rb") as fh:
        fh.seek(where[0])
        line = fh.read(where[1])
    try:
        record: dict[str, Any] = json.loads(line)
    except json.JSONDecodeError as exc:
        raise OutputError(
            f"corrupt journal line at byte {where[0]}: {exc.msg}",
            path=journal,
            hint="delete that line and rerun with --resume",
        ) from None
    return record


def _atomic_text(path: Path, text: str) -> None:
    with _AtomicFile(path, "w") as fh:
        fh.write(text)


class _AtomicFile:
    """A file written under a temporary name and renamed into place on success."""

    def __init__(self, path: Path, mode: str) -> None:
        self.path = path
        self.tmp = path.with_name(f".{path.name}.tmp")
        self.mode = mode
        self._fh: Any = None

    def __enter__(self) -> Any:
        try:
            self._fh = self.tmp.open(self.mode, encoding="utf-8", newline="")
        except OSError as exc:
            raise OutputError(f"cannot write: {exc.strerror or exc}", path=self.path) from None
        return self._fh

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._fh.close()
        if exc_type is None:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


def _arrow_schema() -> Any:
    """The parquet schema, from the RunResult field types (stable whatever the values)."""
    import typing

    import pyarrow as pa

    types = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
    fields = []
    for name, tp in typing.get_type_hints(RunResult).items():
        base = next((a for a in typing.get_args(tp) if a is not type(None)), tp)
        fields.append(pa.field(name, types[base]))
    return pa.schema(fields)


class _TableWriter:
    """Rows to parquet (in row groups) and optionally CSV, both written atomically."""

    def __init__(self, parquet: Path, csv_path: Path | None) -> None:
        self.parquet = parquet
        self.parquet_tmp = parquet.with_name(f".{parquet.name}.tmp")
        self.csv = _AtomicFile(csv_path, "w") if csv_path else None
        self._batch: list[dict[str, Any]] = []

    def __enter__(self) -> _TableWriter:
        import pyarrow.parquet as pq

        self.schema = _arrow_schema()
        self._parquet_writer = pq.ParquetWriter(str(self.parquet_tmp), self.schema)
        self._csv_writer = None
        if self.csv is not None:
            self._csv_writer = csv.DictWriter(self.csv.__enter__(), RunResult.columns())
            self._csv_writer.writeheader()
        return self

    def add(self, row: dict[str, Any]) -> None:
        self._batch.append(row)
        if self._csv_writer is not None:
            self._csv_writer.writerow(row)
        if len(self._batch) >= ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self._batch:
            self._parquet_writer.write_table(pa.Table.from_pylist(self._batch, self.schema))
            self._batch = []

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            if exc_type is None:
                self._flush()
        finally:
            self._parquet_writer.close()
            if self.csv is not None:
                self.csv.__exit__(exc_type, *rest)
        if exc_type is None:
            os.replace(self.parquet_tmp, self.parquet)
        else:
            self.parquet_tmp.unlink(missing_ok=True)
