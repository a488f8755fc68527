"""The few errors ctxbench raises on purpose.

Every error says *where* (file, line, key or JSON path) and *what to do*. The CLI prints
``str(error)`` and exits with code 2; it never shows a traceback for these.
"""

from __future__ import annotations

import errno
from pathlib import Path


class CtxbenchError(Exception):
    """Base class: a problem with the user's input or environment, never a bug in ctxbench."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.key = key
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        text = where
        if self.key is not None:
            text += f"{self.key}: "
        text += self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class TraceFormatError(CtxbenchError):
    """A trace file (canonical or recorded) cannot be read as the format it claims to be."""


class ConfigError(CtxbenchError):
    """A TOML file, ``--set`` value or config field is unknown or has the wrong type."""


class UnknownNameError(CtxbenchError):
    """A registry name (strategy, counter, format, summarizer) does not exist."""


class TokenizerNotFoundError(CtxbenchError):
    """A vendored tokenizer file is missing or does not match its recorded sha256."""


class ProviderOverflowError(CtxbenchError):
    """The simulated provider rejected a prompt as longer than its context window.

    ``str(error)`` is a realistic provider message (OpenAI, Anthropic or vLLM wording), so
    strategies detect overflows by the same substrings the real systems match.
    """

    def __init__(self, provider_message: str, *, prompt_tokens: int, limit: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.limit = limit
        super().__init__(provider_message)


class SummarizerError(CtxbenchError):
    """A summarizer failed (timeout, HTTP error, empty or malformed response)."""

    def __init__(self, message: str, *, kind: str = "error") -> None:
        self.kind = kind
        super().__init__(message)


class PluginError(CtxbenchError):
    """A plug-in (a strategy or summarizer the user wrote) misbehaved during a replay: it
    raised, or a hook returned the wrong type. The message names the plug-in, the hook, the
    trace and the model call; ``plugin_traceback`` holds the plug-in's own frames (ctxbench's
    left out), "" when it returned a wrong value."""

    def __init__(
        self, message: str, *, hint: str | None = None, plugin_traceback: str = ""
    ) -> None:
        self.plugin_traceback = plugin_traceback
        super().__init__(message, hint=hint)

    def _render(self) -> str:
        head, _, hint = super()._render().partition("\n  hint: ")
        frames = "\n" + self.plugin_traceback if self.plugin_traceback else ""
        return head + frames + (f"\n  hint: {hint}" if hint else "")


class OutputError(CtxbenchError):
    """Results could not be written (read-only directory, disk full); finished results are intact."""

    @classmethod
    def from_os_error(
        cls, exc: OSError, path: str | Path, *, then: str = "run the command again"
    ) -> OutputError:
        """The error for ``exc``, raised while writing ``path``: the OS's reason, and a hint
        chosen by its errno (space, permissions, a file in the way) ending with ``then``."""
        return cls(
            f"cannot write: {exc.strerror or exc}", path=path, hint=f"{_fix(exc)}, then {then}"
        )


#: What to do about a failed write, by errno.
_WRITE_FIXES: tuple[tuple[frozenset[int], str], ...] = (
    (
        frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT}),
        "the disk is full or a file size limit was reached: free some space",
    ),
    (
        frozenset({errno.EACCES, errno.EPERM, errno.EROFS}),
        "the location is read-only: fix its permissions or give a writable path",
    ),
    (
        frozenset({errno.ENOTDIR, errno.EEXIST, errno.EISDIR}),
        "a file or folder is in the way of this path: give another path",
    ),
    (frozenset({errno.ENAMETOOLONG}), "the path is too long: give a shorter one"),
)


def _fix(exc: OSError) -> str:
    for codes, fix in _WRITE_FIXES:
        if exc.errno in codes:
            return fix
    return "check free space and permissions of the output location"


class ResultsError(ConfigError):
    """A results directory or file cannot be read: names the file, the line, and the fix."""
