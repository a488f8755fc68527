"""The writing side of a sweep's results directory: append-only while it runs, a sorted table
when it ends (the layout is :mod:`ctxbench.results.layout`; the reader is
:class:`ctxbench.results.ResultsDir`).

Crash safety: the journal line is a cell's commit. The lines of a task's cells are written
with one ``os.write`` and fsync'ed after the cells' files, so a SIGKILL or power loss leaves at worst a torn last line
(no trailing newline), which ``--resume`` cuts off before it appends; a cell is finished when
and only when its line is complete. The three final files are derived from the journal and
replaced atomically (temp file + rename) when the sweep ends; a resumed sweep removes them
first, so their presence means the last run finished. Rows and events are the same bytes
whichever executor and worker count produced them; only ``replay_seconds`` differs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ctxbench.atomic_file import AtomicFile
from ctxbench.engine.events import Event, event_line
from ctxbench.errors import OutputError
from ctxbench.results.files import write_files
from ctxbench.results.journal import RUN_ID, journal_index, read_record
from ctxbench.results.layout import (
    EVENTS,
    FILES,
    FINAL_FILES,
    JOURNAL,
    LOCK,
    RESULTS,
    RESULTS_CSV,
    RESUME,
    SPEC_FILE,
)
from ctxbench.results.table import TableWriter


class ResultsWriter:
    """The writing side, used by one sweep at a time (it holds ``DIR/.lock``)."""

    def __init__(self, path: str | Path, *, resume: bool) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._lock: IO[bytes] | None = None
        try:
            self.path.mkdir(parents=True, exist_ok=True)
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
        try:
            for name in FINAL_FILES:
                (self.path / name).unlink(missing_ok=True)
            self.finished = _recover(journal)
            self._fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            self.close()
            raise OutputError.from_os_error(exc, journal) from None

    def write_spec(self, spec: Mapping[str, Any]) -> None:
        _atomic_text(self.path / SPEC_FILE, json.dumps(spec, indent=2, sort_keys=True) + "\n")

    def append(self, cells: Sequence[tuple[str, str, Mapping[str, bytes]]]) -> None:
        """Persist finished cells ``(run_id, record, files)``: their files first, then their
        journal lines in one write and one fsync (a line is a cell's commit)."""
        for run_id, _, files in cells:
            if files:
                write_files(self.path / FILES / run_id, files, then=RESUME)
        # backslashreplace: a lone surrogate (from a JSON escape in a trace) stays an escape
        data = "".join(record + "\n" for _, record, _ in cells).encode("utf-8", "backslashreplace")
        assert self._fd is not None, "append() after close()"
        try:
            written = os.write(self._fd, data)
            while written < len(data):
                written += os.write(self._fd, data[written:])
            os.fsync(self._fd)
        except OSError as exc:
            raise OutputError.from_os_error(exc, self.path / JOURNAL, then=RESUME) from None
        self.finished.update(run_id for run_id, _, _ in cells)

    def finalize(self, run_ids: Iterable[str], *, with_csv: bool = False) -> int:
        """Write the final table and events for ``run_ids`` (the sweep's cells), sorted by run
        id, from the journal. Returns the number of error rows."""
        journal = self.path / JOURNAL
        index = journal_index(journal)
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
            TableWriter(
                self.path / RESULTS, self.path / RESULTS_CSV if with_csv else None
            ) as table,
        ):
            for rid in wanted:
                record = read_record(journal, index[rid])
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
            match = RUN_ID.match(line)
            if match is None:
                break
            finished.add(match.group(1).decode("utf-8", "replace"))
            good += len(line)
    if good < journal.stat().st_size:
        with journal.open("r+b") as fh:
            fh.truncate(good)
    return finished


def _atomic_text(path: Path, text: str) -> None:
    with AtomicFile(path, then=RESUME) as fh:
        fh.write(text)
