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

Crash safety (the contract, issue 22): the journal line is a cell's commit. A task's cells are
written as: their files (each fsync'ed, then their folders), then their journal lines in one
``os.write`` and one fsync. So after a SIGKILL or a power loss:

- a cell whose line is complete is finished, and its files are on disk;
- at worst the last line is torn (no newline): ``--resume`` cuts it off before it appends,
  and that cell runs again; a line damaged some other way (a flipped byte) is skipped and
  reported by its line number, the lines after it still count, and its cell runs again;
- ``sweep.json`` and the three final files are written to a temporary file, fsync'ed, renamed
  into place and the directory fsync'ed, so each is the old file or the whole new one; the
  final files are derived from the journal, so a power loss before the rename loses nothing
  but the time to rebuild them; a resumed sweep removes them first, so their presence means
  the last run finished;
- temporary files a killed run left (``.NAME.PID.tmp``) are removed by the next run.

What a power loss can lose: the cells of tasks whose journal write had not returned from its
fsync (they run again). Rows and events are the same bytes whichever executor and worker count
produced them; only ``replay_seconds`` differs.

The directory is ctxbench's own: a new sweep refuses a directory holding other files, and
nothing in it is followed through a symbolic link (a link planted at ``files/`` or the journal
would write outside it). ``--resume`` refuses a changed sweep spec (naming what changed) unless
``--reset``, which keeps the finished cells the new spec still has and drops the others.
Failed cells (error rows) are run again by ``--resume`` unless ``--no-retry-failed``.

:class:`ResultsDir` is the read API the report, ``check`` and ``ctxbench run --from-row``
use: it reads the final files when present, the journal otherwise (a running or killed sweep).
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any

from ctxbench import jsontext
from ctxbench.atomic_file import AtomicFile, discard, fsync_folder
from ctxbench.engine.events import Event, event_line, event_problem
from ctxbench.engine.result import RunResult
from ctxbench.engine.spec import RunSpec
from ctxbench.errors import ConfigError, CtxbenchError, OutputError
from ctxbench.escaping import csv_cell

SPEC_FILE = "sweep.json"
JOURNAL = "cells.jsonl"
FILES = "files"
RESULTS = "results.parquet"
RESULTS_CSV = "results.csv"
EVENTS = "events.jsonl"
LOCK = ".lock"
FINAL_FILES = (RESULTS, RESULTS_CSV, EVENTS)
#: Every name a sweep writes at the top of its directory (temporary files aside).
OWN_FILES = frozenset({SPEC_FILE, JOURNAL, FILES, LOCK, *FINAL_FILES})

_RUN_ID = re.compile(rb'^\{"run_id":"([^"]+)"')
#: Rows per parquet row group when writing the final table.
ROW_GROUP = 10_000
#: The next step after a failed write: finished cells are in the journal, nothing is lost.
RESUME = "rerun with --resume (finished cells are kept)"


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
        path = self.path / SPEC_FILE
        hint = "sweep.json is written when a sweep starts: rerun the sweep into a new directory"
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise ConfigError(
                f"cannot read the sweep spec: {reason}", path=path, hint=hint
            ) from None
        spec = jsontext.loads(text, path=path, hint=hint)
        if not isinstance(spec, dict):
            raise ConfigError("the sweep spec is not a JSON object", path=path, key="$", hint=hint)
        return spec

    def rows(self) -> list[dict[str, Any]]:
        """Every row, sorted by run_id (None stays None: no NaN)."""
        if self.complete:
            return _read_table(self.path / RESULTS)
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
            yield from _read_events(self.path / EVENTS, run_id)
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
    except (KeyError, TypeError, ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise ConfigError(
            "the row has no readable 'spec' column",
            key="spec",
            hint="give a row written by ctxbench",
        )
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
    hint = "give a results directory, or a JSON / JSON Lines file of result rows"
    try:
        lines = path.read_text("utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"cannot read: {reason}", path=path, hint=hint) from None
    rows = [
        jsontext.loads(line, path=path, line=lineno, hint=hint)
        for lineno, line in enumerate(lines, start=1)
        if line.strip()
    ]
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
    """The writing side, used by one sweep at a time (it holds ``DIR/.lock``).

    ``finished`` are the cells the journal holds (failed ones left out when ``retry_failed``),
    ``skipped_lines`` the damaged journal lines ``(line number, problem)`` that were skipped."""

    def __init__(self, path: str | Path, *, resume: bool, retry_failed: bool = True) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._lock: IO[bytes] | None = None
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            refuse_links(self.path, sorted(OWN_FILES))
            self._lock = _lock(self.path / LOCK)
        except OSError as exc:
            raise OutputError.from_os_error(exc, self.path) from None
        journal = self.path / JOURNAL
        if journal.exists() and not resume:
            self.close()
            raise OutputError(
                "already holds the results of a sweep",
                path=self.path,
                hint="add --resume to continue it, or give an empty directory",
            )
        if not journal.exists():
            foreign = sorted(
                p.name for p in self.path.iterdir() if p.name != LOCK and not _temporary(p.name)
            )
            if foreign:
                self.close()
                raise OutputError(
                    f"holds files ctxbench did not write ({', '.join(foreign[:3])}"
                    + (", ..." if len(foreign) > 3 else "")
                    + "): a sweep needs a directory of its own",
                    path=self.path,
                    hint="give a new or empty directory with -o",
                )
        try:
            remove_temporaries(self.path)
            for name in FINAL_FILES:
                (self.path / name).unlink(missing_ok=True)
            recovered = _recover(journal)
            self._fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644)
            fsync_folder(self.path)
        except OSError as exc:
            self.close()
            raise OutputError.from_os_error(exc, journal) from None
        self.skipped_lines = recovered.skipped
        self.failed_before = {rid for rid, failed in recovered.cells.items() if failed}
        self.finished = {
            rid for rid, failed in recovered.cells.items() if not (failed and retry_failed)
        }

    def previous_spec(self) -> dict[str, Any] | None:
        """What ``sweep.json`` held when this run started (None if there was none)."""
        if not (self.path / SPEC_FILE).exists():
            return None
        return ResultsDir(self.path).spec()

    def write_spec(self, spec: Mapping[str, Any]) -> None:
        _atomic_text(self.path / SPEC_FILE, json.dumps(spec, indent=2, sort_keys=True) + "\n")

    def keep_only(self, run_ids: Iterable[str]) -> int:
        """Rewrite the journal with the finished cells of ``run_ids`` only (``--reset``): the
        last good line of each, in journal order; the other cells' files are removed. Returns
        how many cells were dropped."""
        import shutil

        keep = set(run_ids)
        journal = self.path / JOURNAL
        index = _journal_index(journal)
        chosen = sorted(
            (where for rid, where in index.items() if rid in keep and rid in self.finished),
            key=lambda where: where[0],
        )
        dropped = set(index) - keep
        assert self._fd is not None, "keep_only() after close()"
        with journal.open("rb") as src, AtomicFile(journal, "wb", then=RESUME) as out:
            for offset, length in chosen:
                src.seek(offset)
                out.write(src.read(length))
        os.close(self._fd)
        self._fd = os.open(journal, os.O_WRONLY | os.O_APPEND | _NOFOLLOW)
        for rid in dropped:
            folder = self.path / FILES / rid
            if folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder, ignore_errors=True)
        self.finished &= keep
        self.failed_before &= keep
        return len(dropped)

    def append(self, cells: Sequence[tuple[str, str, Mapping[str, bytes]]]) -> None:
        """Persist finished cells ``(run_id, record, files)``: their files first (fsync'ed),
        then their journal lines in one write and one fsync (a line is a cell's commit)."""
        from ctxbench.engine.runner import write_files

        for run_id, _, files in cells:
            if files:
                root = self.path / FILES / run_id
                refuse_links(self.path, [FILES, f"{FILES}/{run_id}", *_folders(run_id, files)])
                written = write_files(root, files, then=RESUME)
                try:
                    for target in written:
                        fsync_file(target)
                    for folder in sorted({t.parent for t in written} | {root, root.parent}):
                        fsync_folder(folder)
                except OSError as exc:
                    raise OutputError.from_os_error(exc, root, then=RESUME) from None
        # backslashreplace: a lone surrogate (from a JSON escape in a trace) stays an escape
        data = "".join(record + "\n" for _, record, _ in cells).encode("utf-8", "backslashreplace")
        assert self._fd is not None, "append() after close()"
        try:
            written_bytes = os.write(self._fd, data)
            while written_bytes < len(data):
                written_bytes += os.write(self._fd, data[written_bytes:])
            os.fsync(self._fd)
        except OSError as exc:
            raise OutputError.from_os_error(exc, self.path / JOURNAL, then=RESUME) from None
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
            AtomicFile(self.path / EVENTS, then=RESUME) as events_out,
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


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def refuse_links(root: Path, names: Iterable[str]) -> None:
    """An OutputError if any of ``names`` (relative to ``root``) is a symbolic link: a link
    planted in a results directory would make a sweep write outside it."""
    for name in names:
        path = root / name
        if path.is_symlink():
            raise OutputError(
                "is a symbolic link: ctxbench does not follow links inside a results directory",
                path=path,
                hint="remove the link, or give another -o DIR",
            )


def _folders(run_id: str, files: Mapping[str, bytes]) -> set[str]:
    """Every folder (relative to the results directory) a cell's files go into."""
    out = set()
    for relative in files:
        parts = Path(relative).parts[:-1]
        for i in range(1, len(parts) + 1):
            out.add("/".join((FILES, run_id, *parts[:i])))
    return out


def _temporary(name: str) -> bool:
    """Whether ``name`` is a temporary file ctxbench writes before a rename."""
    return name.startswith(".") and name.endswith(".tmp")


def remove_temporaries(root: Path) -> int:
    """Remove the temporary files a killed run left in a results directory (the caller holds
    its lock, so no live sweep owns them). Returns how many were removed."""
    removed = 0
    folders = [root]
    files_root = root / FILES
    if files_root.is_dir() and not files_root.is_symlink():
        folders += [Path(d) for d, _, _ in os.walk(files_root)]
    for folder in folders:
        for entry in os.scandir(folder):
            if _temporary(entry.name) and entry.is_file(follow_symlinks=False):
                discard(Path(entry.path))
                removed += 1
    return removed


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _lock(path: Path) -> IO[bytes] | None:
    """An exclusive lock on ``path`` (Unix); a second sweep on the same dir is an error."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock
        return None
    handle = os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | _NOFOLLOW, 0o644), "wb")
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


@dataclass(frozen=True)
class Recovered:
    """What the journal holds: run id -> whether its row is an error (the last line of each
    cell wins), and the damaged lines that were skipped."""

    cells: dict[str, bool]
    skipped: list[tuple[int, str]]


def _recover(journal: Path) -> Recovered:
    """Read the journal: a torn last line (no newline) is cut off; a damaged complete line is
    skipped and reported by line number, and the lines after it still count."""
    cells: dict[str, bool] = {}
    skipped: list[tuple[int, str]] = []
    if not journal.exists():
        return Recovered(cells, skipped)
    good = 0
    with journal.open("rb") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.endswith(b"\n"):
                break
            good += len(line)
            if not line.strip():
                continue
            match = _RUN_ID.match(line)
            record, problem = _parse_line(line)
            rid = match.group(1).decode("utf-8", "replace") if match else None
            if problem or rid is None:
                skipped.append((lineno, problem or "no run_id at the start"))
                if rid is not None:
                    cells.pop(rid, None)  # its last line is damaged: the cell runs again
                continue
            cells[rid] = record["row"]["error"] is not None
    if good < journal.stat().st_size:
        with journal.open("r+b") as fh:
            fh.truncate(good)
            os.fsync(fh.fileno())
    return Recovered(cells, skipped)


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
                index[match.group(1).decode("utf-8", "replace")] = (offset, len(line))
            offset += len(line)
    return index


def _parse_line(line: bytes) -> tuple[Any, str]:
    """One journal line parsed, and what is wrong with it ("" if nothing)."""
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
        match = _RUN_ID.match(line)
        if match is None or match.group(1).decode("utf-8", "replace") != record.get("run_id"):
            problem = "its run_id is damaged"
    return record, problem


def _read_record(journal: Path, where: tuple[int, int]) -> dict[str, Any]:
    """One journal record; a corrupt line is an error naming its line number."""
    with journal.open("rb") as fh:
        fh.seek(where[0])
        line = fh.read(where[1])
    record, problem = _parse_line(line)
    if problem:
        with journal.open("rb") as fh:
            lineno = fh.read(where[0]).count(b"\n") + 1
        raise OutputError(
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
    for column, tp in _column_types().items():
        if column not in record["row"]:
            return f"the row has no column {column}"
        value = record["row"][column]
        if value is not None and (
            not isinstance(value, tp) or (isinstance(value, bool) and tp is not bool)
        ):
            return f"row column {column} holds {value!r}"
    spec_problem = _spec_problem(record["row"])
    if spec_problem:
        return spec_problem
    for i, event in enumerate(record["events"]):
        problem = event_problem(event)
        if problem is None and not isinstance(event.get("step"), int):
            problem = "$.step", "step must be an integer"
        if problem is not None:
            return f"event {i}: {problem[1]}"
    return ""


def _spec_problem(row: Mapping[str, Any]) -> str:
    """What is wrong with a row's ``spec`` column ("" if nothing): ``run --from-row`` and
    ``check`` read it as a run spec, so its shape is checked with the rest of the row."""
    try:
        spec_of_row(row)
    except CtxbenchError as exc:
        return f"row column spec: {exc.message}"
    return ""


@cache
def _column_types() -> dict[str, type | tuple[type, ...]]:
    """Result column -> the Python types its values may have (None is always allowed)."""
    import typing

    out: dict[str, type | tuple[type, ...]] = {}
    for name, tp in typing.get_type_hints(RunResult).items():
        base = next((a for a in typing.get_args(tp) if a is not type(None)), tp)
        out[name] = (int, float) if base is float else base
    return out


#: How to rebuild a damaged final file: a resumed sweep rewrites them from the journal.
_REBUILD = (
    "delete it and rerun the sweep with --resume: the final files are rebuilt from cells.jsonl"
)


def _read_table(path: Path) -> list[dict[str, Any]]:
    """The rows of ``results.parquet``; a damaged file or a foreign table is a ConfigError."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise ConfigError(
            f"cannot read the results table: {exc}", path=path, hint=_REBUILD
        ) from None
    missing = [c for c in RunResult.columns() if c not in table.column_names]
    if missing:
        raise ConfigError(
            f"not a ctxbench results table: no column {missing[0]!r}",
            path=path,
            key=missing[0],
            hint=_REBUILD,
        )
    rows: list[dict[str, Any]] = table.to_pylist()
    for i, row in enumerate(rows):
        problem = _spec_problem(row)
        if problem:
            raise ConfigError(
                f"row {i} (run {row.get('run_id')!r}): {problem}",
                path=path,
                key="spec",
                hint=_REBUILD,
            )
    return rows


def _read_events(path: Path, run_id: str | None) -> Iterator[dict[str, Any]]:
    """The events of ``events.jsonl`` (or one cell's); damaged lines are errors."""
    try:
        with path.open("r", encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                event = jsontext.loads(line, path=path, line=lineno, hint=_REBUILD)
                if not isinstance(event, dict) or not isinstance(event.get("run_id"), str):
                    raise ConfigError(
                        "not an event with a run_id", path=path, line=lineno, hint=_REBUILD
                    )
                if run_id is None or event["run_id"] == run_id:
                    yield event
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"cannot read the events: {reason}", path=path, hint=_REBUILD) from None


def _atomic_text(path: Path, text: str) -> None:
    with AtomicFile(path, then=RESUME) as fh:
        fh.write(text)


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
        self.csv = AtomicFile(csv_path, then=RESUME) if csv_path else None
        self._batch: list[dict[str, Any]] = []

    def __enter__(self) -> _TableWriter:
        import pyarrow.parquet as pq

        self.schema = _arrow_schema()
        try:
            self._parquet_writer = pq.ParquetWriter(str(self.parquet_tmp), self.schema)
        except OSError as exc:
            raise OutputError.from_os_error(exc, self.parquet, then=RESUME) from None
        self._csv_writer = None
        if self.csv is not None:
            self._csv_writer = csv.DictWriter(self.csv.__enter__(), RunResult.columns())
            self._csv_writer.writeheader()
        return self

    def add(self, row: dict[str, Any]) -> None:
        self._batch.append(row)
        if self._csv_writer is not None:
            self._csv_writer.writerow({k: csv_cell(v) for k, v in row.items()})
        if len(self._batch) >= ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self._batch:
            try:
                self._parquet_writer.write_table(pa.Table.from_pylist(self._batch, self.schema))
            except OSError as exc:
                raise OutputError.from_os_error(exc, self.parquet, then=RESUME) from None
            self._batch = []

    def __exit__(self, exc_type: object, *rest: object) -> None:
        """Close both files; rename them into place only when every row was written."""
        error: OutputError | None = None
        try:
            if exc_type is None:
                self._flush()
        except OutputError as exc:
            error = exc
        try:
            self._parquet_writer.close()
        except OSError as exc:
            error = error or OutputError.from_os_error(exc, self.parquet, then=RESUME)
        if exc_type is None and error is None:
            try:
                if self.csv is not None:
                    self.csv.__exit__(None)
                fsync_file(self.parquet_tmp)
                os.replace(self.parquet_tmp, self.parquet)
                fsync_folder(self.parquet.parent)
                return
            except OutputError as exc:
                error = exc
            except OSError as exc:
                error = OutputError.from_os_error(exc, self.parquet, then=RESUME)
        elif self.csv is not None:
            self.csv.__exit__(OutputError)
        discard(self.parquet_tmp)
        if error is not None and exc_type is None:
            raise error
