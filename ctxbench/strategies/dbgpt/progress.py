"""``TaskProgress``: the ReAct agent's ``_task_progress`` (a line per successful step) and the
system prompt 0.8.2 renders with it (``role.py:212-240``, ``_REACT_SYSTEM_TEMPLATE``).

The agent renders that prompt again at every call, a line longer each step: its fingerprint
is worked out from the hash of the lines so far (:class:`~ctxbench.trace.GrowingFingerprints`),
and counters cut it again only where it grew (:func:`~ctxbench.counting.chunking.grown_segments`),
so a call costs its new line, not the whole progress again."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from itertools import count

from ctxbench.engine.prompt import PROMPTS
from ctxbench.strategies.dbgpt.memory import (
    PROGRESS_HEADING,
    PROGRESS_TAIL,
    progress_head,
)
from ctxbench.trace import GrowingFingerprints, Message


class TaskProgress:
    """The progress lines of a run (step, action, snapshot), and the token naming them
    (:func:`_progressed`: equal lines give equal tokens in every replay of the process)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.token = 0
        #: ``task_progress(lines)``, grown a line at a time (not joined again at every call)
        self.text = PROGRESS_HEADING
        #: the fingerprints of the heads of one system prompt, and how many lines they hashed
        self._fingerprints: tuple[Message | None, GrowingFingerprints] | None = None
        self._hashed = 0

    def __len__(self) -> int:
        return len(self.lines)

    def add(self, line: str) -> None:
        """A step succeeded: its line is the progress's last."""
        self.lines.append(line)
        self.text += f"\n{line}"
        self.token = _progressed(self.token, line)

    def head(self, system: Message | None) -> Message | None:
        """``system`` (the memory's first system prompt, or None) with the task progress so
        far (None without progress): one object for the same system prompt and lines in the
        sweep's caches (a prompt of its table, weighed by its text, so the heads of a long run,
        each a line longer than the last, go with the prompts that hold them), so a sweep's
        replays rebuild the same prompt."""
        if not self.lines:
            return None

        def build() -> list[Message]:
            head = self._fingerprinted(progress_head(system, self.text), system)
            return [head] if system is None else [head, system]

        # the prompt holds the system prompt, so its id stays its own while the key is known
        key = ("dbgpt.head", id(system), self.token)
        return PROMPTS.get(key, build, _head_size)[0]

    def _fingerprinted(self, head: Message, system: Message | None) -> Message:
        """``head`` (``system`` with the progress) with its fingerprint, from the hash of the
        system prompt and the lines hashed for the last head, grown by the lines since."""
        held = self._fingerprints
        if held is None or held[0] is not system:
            fingerprints = GrowingFingerprints(head)
            fingerprints.grow(
                PROGRESS_HEADING if system is None else f"{system.content}\n{PROGRESS_HEADING}"
            )
            held = self._fingerprints = (system, fingerprints)
            self._hashed = 0
        for line in self.lines[self._hashed :]:
            held[1].grow(f"\n{line}")
        self._hashed = len(self.lines)
        return held[1].give(head, f"\n{PROGRESS_TAIL}")


#: the task progress of the process: (a token, a line) -> the token of its lines and that line
_PROGRESS: dict[tuple[int, str], int] = {}
_PROGRESS_LIMIT = 1_000_000
_progress_tokens = count(1)


def _head_size(prompt: Sequence[Message]) -> int:
    """The bytes of a progress head's text (the prompt holding it made it)."""
    return sys.getsizeof(prompt[0].content)


def _progressed(token: int, line: str) -> int:
    """The token of the progress lines ``token`` names with ``line`` appended: equal lines give
    equal tokens in every replay of the process."""
    found = _PROGRESS.get((token, line))
    if found is None:
        if len(_PROGRESS) >= _PROGRESS_LIMIT:
            _PROGRESS.clear()  # tokens are never given twice: old ones just stop matching
        found = _PROGRESS[(token, line)] = next(_progress_tokens)
    return found


__all__ = ["TaskProgress"]
