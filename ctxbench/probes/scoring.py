"""Deterministic probe scoring on the prompt the model would see.

Outcomes, in order of precedence:

- ``in_context``: an accepted answer appears in the prompt;
- ``via_reference``: the prompt cites a snapshot / offload file whose content holds an answer;
- ``stale``: only a superseded value (``stale_answers``) is present;
- ``lost``: none of the above.

Matching normalises case, whitespace and quoting. Answers containing a digit (numbers, ids)
match case-sensitively and only as whole tokens: ``12`` does not match inside ``123``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ctxbench.counting.base import replay_text
from ctxbench.probes.model import Probe
from ctxbench.trace import Message, message_search_text

OUTCOMES: tuple[str, ...] = ("in_context", "via_reference", "stale", "lost")

_QUOTES = str.maketrans({c: " " for c in "\"'`“”‘’«»"})
_SPACE = re.compile(r"\s+")


def normalise(text: str, *, keep_case: bool = False) -> str:
    """Quotes become spaces, runs of whitespace one space; lower-cased unless ``keep_case``."""
    text = text.translate(_QUOTES)
    text = _SPACE.sub(" ", text).strip()
    return text if keep_case else text.lower()


def _is_exact(answer: str) -> bool:
    return any(ch.isdigit() for ch in answer)


def _contains(haystack: str, needle: str) -> bool:
    """Whole-token containment: the match may not continue an alphanumeric run on either side."""
    if not needle:
        return False
    start = 0
    n = len(needle)
    while True:
        at = haystack.find(needle, start)
        if at < 0:
            return False
        before = haystack[at - 1] if at > 0 else " "
        after = haystack[at + n] if at + n < len(haystack) else " "
        left_ok = not (needle[0].isalnum() and before.isalnum())
        right_ok = not (needle[-1].isalnum() and after.isalnum())
        if left_ok and right_ok:
            return True
        start = at + 1


@dataclass
class TextIndex:
    """A text normalised once for many answer lookups (case-folded and case-kept forms)."""

    folded: str
    kept: str

    @classmethod
    def of(cls, text: str) -> TextIndex:
        kept = normalise(text, keep_case=True)
        return cls(kept.lower(), kept)

    def has(self, answer: str) -> bool:
        if _is_exact(answer):
            return _contains(self.kept, normalise(answer, keep_case=True))
        return _contains(self.folded, normalise(answer))

    def has_any(self, answers: Sequence[str]) -> bool:
        return any(self.has(a) for a in answers)


def prompt_text(messages: Sequence[Message]) -> str:
    """Everything the model reads in a prompt: content, tool calls, replay fields."""
    return "\n".join(message_search_text(m) + replay_text(m) for m in messages)


class PromptScorer:
    """Scores probes against one prompt (and the files the run wrote so far)."""

    def __init__(self, messages: Sequence[Message], files: Mapping[str, bytes]) -> None:
        raw = prompt_text(messages)
        self._index = TextIndex.of(raw)
        self._cited = [
            TextIndex.of(content.decode("utf-8", "replace"))
            for path, content in sorted(files.items())
            if path in raw
        ]

    def score(self, probe: Probe) -> str:
        if self._index.has_any(probe.answers):
            return "in_context"
        if any(f.has_any(probe.answers) for f in self._cited):
            return "via_reference"
        if probe.stale_answers and self._index.has_any(probe.stale_answers):
            return "stale"
        return "lost"


def score_probes(
    probes: Sequence[Probe], messages: Sequence[Message], files: Mapping[str, bytes]
) -> list[tuple[Probe, str]]:
    """Each probe with its outcome on this prompt."""
    if not probes:
        return []
    scorer = PromptScorer(messages, files)
    return [(p, scorer.score(p)) for p in probes]
