"""Output files written whole or not at all.

A result file is written under a temporary name beside it and renamed into place when
every byte is in, so a full disk or a read-only folder never leaves half a file, nor clobbers
the previous one: the failure is an :class:`~ctxbench.errors.OutputError` naming the file,
the OS's reason and what to do, and the temporary file is removed.

Durability (issue 22): the temporary file is fsync'ed before the rename and its folder after,
so after a power loss the file is the old one or the whole new one. The temporary name holds
the writer's pid (``.NAME.PID.tmp``); one left by a killed process (its pid no longer alive)
is removed by the next write of the same file. The temporary file is created exclusively and
never through a symbolic link.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Any

from ctxbench.errors import OutputError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def fsync_folder(path: Path) -> None:
    """Make a rename or a new file in ``path`` durable (a no-op where directories cannot be
    opened, as on Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - file systems that refuse fsync on a directory
        pass
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    """Flush a written file to the disk (before the rename that publishes it)."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_stale(path: Path) -> None:
    """Remove the temporary files of ``path`` whose writer is dead (killed mid-write)."""
    prefix = f".{path.name}."
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            name = entry.name
            middle = name[len(prefix) : -len(".tmp")]
            ours = name.startswith(prefix) and name.endswith(".tmp") and middle.isdigit()
            if ours and not _alive(int(middle)):
                discard(Path(entry.path))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process is not writing it: a leftover of a recycled pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def discard(path: Path) -> None:
    """Remove a temporary file, if there is one and the OS lets us."""
    with contextlib.suppress(OSError):
        path.unlink()


class AtomicFile:
    """``with AtomicFile(path) as out: out.write(...)``: ``path`` appears when the block ends
    without an error. ``mode`` is ``"w"`` (UTF-8 text) or ``"wb"``; ``then`` ends the hint of
    a failed write (the next step for the user)."""

    def __init__(
        self, path: str | Path, mode: str = "w", *, then: str = "run the command again"
    ) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        self.mode = mode
        self.then = then
        self._fh: IO[Any] | None = None

    def _error(self, exc: OSError) -> OutputError:
        return OutputError.from_os_error(exc, self.path, then=self.then)

    def __enter__(self) -> AtomicFile:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            remove_stale(self.path)
            discard(self.tmp)  # a leftover of this pid's earlier life
            fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
            if "b" in self.mode:
                self._fh = os.fdopen(fd, self.mode)
            else:
                # backslashreplace: a lone surrogate read from a JSON escape is written back
                # as that escape, so the file stays valid UTF-8 (JSON and CSV alike)
                self._fh = os.fdopen(
                    fd, self.mode, encoding="utf-8", errors="backslashreplace", newline=""
                )
        except OSError as exc:
            raise self._error(exc) from None
        return self

    def write(self, data: Any) -> int:
        assert self._fh is not None, "write() outside the with block"
        try:
            written: int = self._fh.write(data)
        except OSError as exc:
            raise self._error(exc) from None
        return written

    def flush(self) -> None:
        assert self._fh is not None, "flush() outside the with block"
        try:
            self._fh.flush()
        except OSError as exc:
            raise self._error(exc) from None

    def __exit__(self, exc_type: object, *rest: object) -> None:
        assert self._fh is not None
        try:
            if exc_type is None:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            self._fh.close()
            if exc_type is None:
                os.replace(self.tmp, self.path)
                fsync_folder(self.path.parent)
                return
        except OSError as exc:
            discard(self.tmp)
            if exc_type is None:
                raise self._error(exc) from None
        discard(self.tmp)


__all__ = ["AtomicFile", "discard", "fsync_file", "fsync_folder", "remove_stale"]
