"""The reader guard: what every path ctxbench opens must be, and the outputs it never writes.

Every reader opens its path through here (issue 38), so one rule and one error hold everywhere:

- :func:`regular_file`: regular files only (links followed). A FIFO hangs its reader forever,
  ``/dev/zero`` never ends, a socket cannot be read: each is refused in one line before it is
  opened. A missing path or a directory is left to the caller, which knows what to ask for.
- :func:`small_file`, :func:`read_limited`: a small file read whole (a TOML or JSON spec, a
  baseline, a profile), refused past :data:`MAX_SPEC_BYTES` before it is read into memory.
- :func:`open_text`: a text file, gunzipped when it ends in ``.gz``; the unpacked bytes and
  lines are counted as they are read and refused past :func:`unpacked_limits` (a 2 MB
  ``.jsonl.gz`` of blank lines unpacks to 2 GB). The limits are set by ``ctxbench
  --max-unpacked BYTES --max-unpacked-lines N`` (or :data:`BYTES_ENV`, :data:`LINES_ENV`,
  which workers inherit), and their error names the flag.
- :func:`refuse_links_on_path`, :func:`refuse_own_files`: an output is never a path through a
  symbolic link (a planted ``viewer -> ..``), and never one of a results directory's own
  files (``report res -o res/cells.jsonl`` would replace the journal).
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ctxbench.errors import ConfigError, CtxbenchError, OutputError

#: The largest spec file (TOML, JSON) or baseline read whole (the largest shipped is ~20 KB).
MAX_SPEC_BYTES = 64 * 2**20
#: Defaults of the unpacked size and line count of one compressed input.
DEFAULT_MAX_UNPACKED_BYTES = 2**30
DEFAULT_MAX_UNPACKED_LINES = 1_000_000
BYTES_ENV = "CTXBENCH_MAX_UNPACKED"
LINES_ENV = "CTXBENCH_MAX_UNPACKED_LINES"
BYTES_FLAG = "--max-unpacked"
LINES_FLAG = "--max-unpacked-lines"
#: Compressed suffixes ctxbench unpacks.
COMPRESSED = (".gz",)

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(path: str | Path) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a directory (links
    followed): "a FIFO (named pipe)", "a character device", ...; None otherwise."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, unreadable, a NUL byte: the reader says so
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def regular_file(
    path: str | Path,
    *,
    error: type[CtxbenchError] = ConfigError,
    hint: str = "give a regular file",
) -> Path:
    """``path``, refused when it is a FIFO, a device or a socket (see the module doc)."""
    kind = special_kind(path)
    if kind is not None:
        raise error(f"is {kind}, not a regular file", path=path, hint=hint)
    return Path(path)


def small_file(
    path: str | Path,
    *,
    what: str,
    error: type[CtxbenchError] = ConfigError,
    limit: int = MAX_SPEC_BYTES,
    hint: str = "give the right file",
) -> Path:
    """``path`` checked before a reader reads it whole: a regular file (when it exists) of at
    most ``limit`` bytes (``what``: "a sweep spec", "a baseline"); the reader reports a
    missing or unreadable file itself."""
    path = regular_file(path, error=error, hint=hint)
    try:
        size = os.stat(path).st_size if path.is_file() else 0
    except (OSError, ValueError):
        return path
    if size > limit:
        raise error(
            f"is larger than {limit:,} bytes, the limit of {what} (ctxbench.guard.MAX_SPEC_BYTES)",
            path=path,
            hint=f"is this {what}? {hint}",
        )
    return path


def read_limited(
    path: str | Path,
    *,
    what: str,
    error: type[CtxbenchError] = ConfigError,
    limit: int = MAX_SPEC_BYTES,
    hint: str = "give the right file",
) -> bytes:
    """The bytes of a small file (``what``: "a sweep spec", "a baseline"), refused past
    ``limit`` bytes or when not a regular file; a missing or unreadable file raises ``error``."""
    path = regular_file(path, error=error, hint=hint)
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise error("no such file", path=path, hint=hint) from None
    except IsADirectoryError:
        raise error("is a directory, not a file", path=path, hint=hint) from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", path=path, hint=hint) from None
    if len(data) > limit:
        raise error(
            f"is larger than {limit:,} bytes, the limit of {what} (ctxbench.guard.MAX_SPEC_BYTES)",
            path=path,
            hint=f"is this {what}? {hint}",
        )
    return data


def unpacked_limits() -> tuple[int, int]:
    """(bytes, lines) one compressed input may unpack to (see the module doc)."""
    return (
        _env_int(BYTES_ENV, DEFAULT_MAX_UNPACKED_BYTES),
        _env_int(LINES_ENV, DEFAULT_MAX_UNPACKED_LINES),
    )


@contextmanager
def unpacked_limits_set(max_bytes: int | None, max_lines: int | None) -> Iterator[None]:
    """The limits set for this process and the workers it starts while the block runs
    (``ctxbench --max-unpacked BYTES --max-unpacked-lines N``); restored after it."""
    saved = {name: os.environ.get(name) for name in (BYTES_ENV, LINES_ENV)}
    for name, value in ((BYTES_ENV, max_bytes), (LINES_ENV, max_lines)):
        if value is not None:
            os.environ[name] = str(value)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip().replace("_", "")
    if not text:
        return default
    if not text.isdigit() or int(text) <= 0:
        raise ConfigError(
            f"{name}={os.environ[name]!r} is not a positive whole number",
            hint=f"set it to a number of {'bytes' if name == BYTES_ENV else 'lines'}, or unset it",
        )
    return int(text)


class _Bounded(io.RawIOBase):
    """A decompressed stream that counts what it yields and stops past the limits."""

    def __init__(self, inner: gzip.GzipFile, path: Path, error: type[CtxbenchError]) -> None:
        self._inner = inner
        self._path = path
        self._error = error
        self._max_bytes, self._max_lines = unpacked_limits()
        self._bytes = 0
        self._lines = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        try:
            data = self._inner.read(len(buffer))
        except (OSError, EOFError, zlib.error) as exc:
            raise self._error(
                f"cannot unpack: {exc}",
                path=self._path,
                hint="the file is not a complete gzip file: was it truncated?",
            ) from None
        n = len(data)
        buffer[:n] = data
        self._bytes += n
        self._lines += data.count(b"\n")
        if self._bytes > self._max_bytes:
            raise self._too_much(f"{self._max_bytes:,} bytes", BYTES_FLAG, "BYTES")
        if self._lines > self._max_lines:
            raise self._too_much(f"{self._max_lines:,} lines", LINES_FLAG, "N")
        return n

    def _too_much(self, limit: str, flag: str, metavar: str) -> CtxbenchError:
        return self._error(
            f"unpacks to more than {limit}, the limit of one compressed input",
            path=self._path,
            hint=f"if the file is what you meant, raise the limit: `ctxbench {flag} {metavar} ...`",
        )

    def close(self) -> None:
        self._inner.close()
        super().close()


def open_text(path: str | Path, *, error: type[CtxbenchError] = ConfigError) -> IO[str]:
    """A text file for reading (UTF-8, a byte-order mark skipped), gunzipped and bounded when it
    ends in ``.gz``; a FIFO, device or socket is refused before it is opened."""
    path = regular_file(path, error=error)
    if path.suffix not in COMPRESSED:
        return path.open("r", encoding="utf-8-sig")
    raw = _Bounded(gzip.GzipFile(path, "rb"), path, error)  # closed with the text stream
    return io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8-sig")


# -- outputs ------------------------------------------------------------------------------------


def refuse_links_on_path(path: str | Path, *, what: str = "the output") -> None:
    """An error if any part of ``path`` that exists is a symbolic link: a link planted on an
    output path (``viewer -> ..``) would make a writer write, or replace, outside it."""
    absolute = Path(os.path.abspath(path))
    for part in (absolute, *absolute.parents):
        if part.is_symlink():
            raise OutputError(
                f"is a symbolic link on the path of {what}: ctxbench does not write through links",
                path=part,
                hint="remove the link, or give a path without one",
            )
