"""The writing side of a sweep's results directory: append-only while it runs, a sorted table
when it ends (the layout is :mod:`ctxbench.results.layout`; the reader is
:class:`ctxbench.results.ResultsDir`).

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
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ctxbench.atomic_file import AtomicFile, discard, fsync_file, fsync_folder
from ctxbench.engine.events import UnknownEvent, event_line
from ctxbench.errors import OutputError
from ctxbench.jsontext import compact_json
from ctxbench.results.files import refuse_links, write_files
from ctxbench.results.journal import (
    journal_index,
    journal_lines,
    line_digest,
    parse_line,
    read_line,
    read_record,
    split_record,
    too_long_problem,
)
from ctxbench.results.layout import (
    EVENTS,
    FILES,
    FINAL_FILES,
    JOURNAL,
    LOCK,
    OWN_FILES,
    RESULTS_CSV,
    RESUME,
    SPEC_FILE,
    final_table,
)
from ctxbench.results.reader import ResultsDir
from ctxbench.results.table import TableWriter


class ResultsWriter:
    """The writing side, used by one sweep at a time (it holds ``DIR/.lock``).

    ``finished`` are the cells the journal holds (failed ones left out when ``retry_failed``),
    ``skipped_lines`` the damaged journal lines ``(line number, problem)`` that were skipped."""

    def __init__(self, path: str | Path, *, resume: bool, retry_failed: bool = True) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._lock: IO[bytes] | None = None
        #: the digest of each journal line this writer appended (``finalize`` reads those back
        #: without checking their shape again: the same bytes are the same valid record)
        self._written: dict[str, bytes] = {}
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
        index = journal_index(journal)
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
        lines = [(record + "\n").encode("utf-8", "backslashreplace") for _, record, _ in cells]
        data = b"".join(lines)
        assert self._fd is not None, "append() after close()"
        try:
            written_bytes = os.write(self._fd, data)
            while written_bytes < len(data):
                written_bytes += os.write(self._fd, data[written_bytes:])
            os.fsync(self._fd)
        except OSError as exc:
            raise OutputError.from_os_error(exc, self.path / JOURNAL, then=RESUME) from None
        self.finished.update(run_id for run_id, _, _ in cells)
        for (run_id, _, _), line in zip(cells, lines):
            self._written[run_id] = line_digest(line)

    def finalize(
        self,
        run_ids: Iterable[str],
        *,
        with_csv: bool = False,
        on_cell: Callable[[dict[str, Any], Sequence[str | Mapping[str, Any]]], None] | None = None,
        table_name: str | None = None,
    ) -> int:
        """Write the final table (``table_name``, else :func:`final_table`'s) and events for
        ``run_ids`` (the sweep's cells), sorted by run id, from the journal. Returns the number
        of error rows. ``on_cell(row, events)`` sees each cell as it is written (its events as
        JSON texts or dicts), so what the sweep reports is worked out without reading the
        files back."""
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
                self.path / (table_name or final_table()),
                self.path / RESULTS_CSV if with_csv else None,
            ) as table,
        ):
            for rid in wanted:
                row, events = self._copy_events(journal, rid, index[rid], events_out)
                table.add(row)
                if on_cell is not None:
                    on_cell(row, events)
                failed += row["error"] is not None
        return failed

    def _copy_events(
        self, journal: Path, run_id: str, where: tuple[int, int], out: AtomicFile
    ) -> tuple[dict[str, Any], Sequence[str | Mapping[str, Any]]]:
        """Write a cell's events to the events file and return its row and events. A line this process
        wrote is split where its events start (the events copied as text, with the run id put
        first); any other is read and checked whole."""
        written = self._written.get(run_id)
        line = None if written is None else read_line(journal, where, written)
        parts = None if line is None else split_record(line)
        if parts is not None:
            prefix = '{"run_id":' + _ENCODE(run_id) + ","
            row, events = parts
            out.write("".join([prefix + event[1:] + "\n" for event in events]))
            return row, events
        record = read_record(journal, where, written=written)
        out.write("".join(_event_lines(run_id, record["events"])))
        return dict(record["row"]), record["events"]

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
_ENCODE = compact_json


def _event_lines(run_id: str, events: Sequence[Mapping[str, Any]]) -> Iterator[str]:
    """The events file's lines of one cell's journal events: ``event_line`` of each, the same
    bytes; a journal event already in its order (type, data, call, step: what the worker
    wrote) is encoded as it is, with the run id put first."""
    prefix = '{"run_id":' + _ENCODE(run_id) + ","
    for e in events:
        keys = list(e)
        if keys[0] == "type" and keys[-2:] == ["call", "step"]:
            yield prefix + _ENCODE(e)[1:] + "\n"
        else:
            data = {k: v for k, v in e.items() if k not in ("type", "call", "step")}
            kept = UnknownEvent(name=str(e["type"]), payload=data, call=e["call"], step=e["step"])
            yield event_line(kept, run_id=run_id) + "\n"  # its fields as they are, in order


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
        for line in journal_lines(fh):
            if not line.complete:
                break
            good += line.length
            if not line.data.strip():
                continue
            rid = line.run_id
            record: Any = None
            if line.too_long:  # never parsed: it is not even in memory whole
                problem = too_long_problem()
            else:
                record, problem = parse_line(line.data)
            if problem or rid is None:
                skipped.append((line.number, problem or "no run_id at the start"))
                if rid is not None:
                    cells.pop(rid, None)  # its last line is damaged: the cell runs again
                continue
            cells[rid] = record["row"]["error"] is not None
    if good < journal.stat().st_size:
        with journal.open("r+b") as fh:
            fh.truncate(good)
            os.fsync(fh.fileno())
    return Recovered(cells, skipped)


def _atomic_text(path: Path, text: str) -> None:
    with AtomicFile(path, then=RESUME) as fh:
        fh.write(text)
