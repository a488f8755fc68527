"""A one-line progress bar on stderr: done / total, rate, ETA and failures.

On a terminal it redraws in place (at most ten times a second); in a log (stderr not a
terminal) it prints a plain line at most every ``log_every`` seconds, and at the end.
:func:`terminal_bar` is the bar of commands whose output is often piped (``calibrate``,
``drift``, ``count``, ``report``, ``view``): silent under ``--quiet`` and when stderr is not a
terminal.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class ProgressBar:
    """Shows ``label`` progress; ``update(done, total, failed)`` as work completes."""

    def __init__(
        self,
        label: str,
        *,
        stream: TextIO | None = None,
        width: int = 24,
        log_every: float = 10.0,
        silent: bool = False,
    ) -> None:
        self.label = label
        self.silent = silent
        self.stream = stream or sys.stderr
        self.width = width
        self.log_every = log_every
        self.tty = self.stream.isatty()
        self._started = time.monotonic()
        self._first_done: int | None = None
        self._last_draw = 0.0
        self._line = ""

    def update(self, done: int, total: int, failed: int = 0, *, final: bool = False) -> None:
        if self.silent:
            return
        now = time.monotonic()
        if self._first_done is None:
            self._first_done, self._started = done, now
        interval = 0.1 if self.tty else self.log_every
        if not final and now - self._last_draw < interval and done < total:
            return
        self._last_draw = now
        self._line = self.render(done, total, failed, now - self._started)
        if self.tty:
            self.stream.write("\r" + self._line + "\x1b[K")
        else:
            self.stream.write(self._line + "\n")
        self.stream.flush()

    def render(self, done: int, total: int, failed: int, elapsed: float) -> str:
        fraction = done / total if total else 1.0
        filled = int(self.width * fraction)
        bar = "#" * filled + "-" * (self.width - filled)
        ran = done - (self._first_done or 0)
        rate = ran / elapsed if elapsed > 0 else 0.0
        eta = _clock((total - done) / rate) if rate > 0 and done < total else "-"
        text = f"{self.label} [{bar}] {done}/{total} {rate:.1f}/s ETA {eta}"
        return text + (f" failed {failed}" if failed else "")

    def close(self) -> None:
        if not self.silent and self.tty and self._line:
            self.stream.write("\n")
            self.stream.flush()


def terminal_bar(label: str, *, quiet: bool = False, stream: TextIO | None = None) -> ProgressBar:
    """A bar that draws only on a terminal and never under ``--quiet`` (logs stay clean)."""
    out = stream or sys.stderr
    return ProgressBar(label, stream=out, silent=quiet or not out.isatty())


class StageBar:
    """A terminal bar over the stages of one job (``report``, ``drift``): ``stage(name)`` names
    what is running now, ``update(done, total)`` moves the bar (with an ETA)."""

    def __init__(self, label: str, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.label = label
        self._bar = terminal_bar(label, quiet=quiet, stream=stream)
        self._done, self._total = 0, 1

    def stage(self, name: str) -> None:
        self._bar.label = f"{self.label}: {name}"
        self._bar.update(self._done, self._total, final=True)

    def update(self, done: int, total: int) -> None:
        self._done, self._total = done, total
        self._bar.update(done, total)

    def close(self) -> None:
        self._bar.close()
