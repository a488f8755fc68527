"""Hostile files for every command's file arguments (issue 38): a FIFO, a device, a link to a
device, a compressed bomb, the wrong encoding, a damaged gzip. Each command is run through the
console entry point under an alarm: a hang or a traceback is a failure, a one-line ``error:``
with exit 2 is the answer."""

from __future__ import annotations

import gzip
import os
import signal
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.hardening import run_main

#: No command may run longer than this on any hostile input (the issue's bound).
SECONDS = 10.0
#: Lines of the blank-line bomb: past the default limit (1,000,000), 16 MB packed in 16 KB.
BOMB_LINES = 16_000_000


def blank_line_bomb(path: Path, lines: int = BOMB_LINES) -> Path:
    """``path`` (a ``.gz``): ``lines`` blank lines, about 1,000 times smaller packed."""
    chunk = b"\n" * 2**20
    with gzip.open(path, "wb", compresslevel=9) as out:
        for _ in range(lines // len(chunk)):
            out.write(chunk)
        out.write(b"\n" * (lines % len(chunk)))
    return path


#: The kinds of hostile file :func:`hostile_files` makes.
KINDS = ("fifo", "device", "link-to-device", "utf-16", "gzip-bomb", "damaged-gzip", "not-gzip")


def hostile_files(folder: Path, suffix: str) -> dict[str, Path]:
    """The hostile inputs standing for a file that ends in ``suffix``, by name."""
    folder.mkdir(parents=True, exist_ok=True)
    fifo = folder / f"fifo{suffix}"
    os.mkfifo(fifo)
    link = folder / f"zero-link{suffix}"
    link.symlink_to("/dev/zero")
    utf16 = folder / f"utf16{suffix}"
    utf16.write_bytes('{"id": "a", "messages": []}\n'.encode("utf-16"))
    out = {"fifo": fifo, "device": Path("/dev/zero"), "link-to-device": link, "utf-16": utf16}
    bomb = blank_line_bomb(folder / f"bomb{suffix}.gz")
    damaged = folder / f"damaged{suffix}.gz"
    damaged.write_bytes(gzip.compress(b'{"id": "a"}\n' * 1000)[:200])
    garbage = folder / f"garbage{suffix}.gz"
    garbage.write_bytes(zlib.compress(b"not gzip") * 10)
    out.update({"gzip-bomb": bomb, "damaged-gzip": damaged, "not-gzip": garbage})
    return out


class TooSlow(Exception):
    """A command ran past :data:`SECONDS`."""


@contextmanager
def alarm(seconds: float) -> Iterator[None]:
    """Interrupt the block after ``seconds`` (a blocking open of a FIFO included)."""

    def ring(signum: int, frame: object) -> None:
        raise TooSlow(f"ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_bounded(argv: list[str]) -> tuple[int, str, float]:
    """(exit code, stderr, seconds) of ``ctxbench ARGV``; :class:`TooSlow` past the bound."""
    started = time.perf_counter()
    with alarm(SECONDS):
        code, err = run_main(argv)
    return code, err, time.perf_counter() - started
