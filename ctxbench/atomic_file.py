"""Output files written whole or not at all.

A result file is written under a temporary name beside it and renamed into place when
every byte is in, so a full disk or a read-only folder never leaves half a file, nor clobbers
the previous one: the failure is an :class:`~ctxbench.errors.OutputError` naming the file,
the OS's reason and what to do, and the temporary file is removed.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Any

from ctxbench.errors import OutputError


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
            if "b" in self.mode:
                self._fh = self.tmp.open(self.mode)
            else:
                # backslashreplace: a lone surrogate read from a JSON escape is written back
                # as that escape, so the file stays valid UTF-8 (JSON and CSV alike)
                self._fh = self.tmp.open(
                    self.mode, encoding="utf-8", errors="backslashreplace", newline=""
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
            self._fh.close()
            if exc_type is None:
                os.replace(self.tmp, self.path)
                return
        except OSError as exc:
            discard(self.tmp)
            if exc_type is None:
                raise self._error(exc) from None
        discard(self.tmp)


__all__ = ["AtomicFile", "discard"]
