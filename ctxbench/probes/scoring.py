"""Deterministic probe scoring on the prompt the model would see.

Outcomes, in order of precedence:

- ``in_context``: an accepted answer appears in the prompt;
- ``via_reference``: the prompt cites a snapshot / offload file whose content holds an answer;
- ``stale``: only a superseded value (``stale_answers``) is present;
- ``lost``: none of the above.

Matching normalises case, whitespace and quoting. Answers containing a digit (numbers, ids)
match case-sensitively. Every answer matches only as a whole token: ``12`` does not match inside
``123``, nor ``ORD-4821`` inside ``ORD-48213``. Chinese and Japanese text has no spaces between
words, so ideographs and kana never count as part of a neighbouring token. A cited file that is
JSON (a DB-GPT snapshot) is searched in its decoded strings too, so escaping cannot hide a value.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxbench.counting.base import replay_text
from ctxbench.probes.model import Probe
from ctxbench.trace import Message, message_search_text

OUTCOMES: tuple[str, ...] = ("in_context", "via_reference", "stale", "lost")

_QUOTES = str.maketrans({c: " " for c in "\"'`“”‘’«»"})


def normalise(text: str, *, keep_case: bool = False) -> str:
    """Quotes become spaces, runs of whitespace one space; lower-cased unless ``keep_case``."""
    text = text.translate(_QUOTES)
    text = " ".join(text.split())  # str.split: the same whitespace as \s, several times faster
    return text if keep_case else text.lower()


def _is_exact(answer: str) -> bool:
    return any(ch.isdigit() for ch in answer)


def _is_word_char(ch: str) -> bool:
    """Letters and digits continue a token, except CJK ideographs, kana and hangul (unspaced scripts)."""
    if not ch.isalnum():
        return False
    code = ord(ch)
    return not (
        0x2E80 <= code <= 0x9FFF  # CJK radicals, kana, ideographs
        or 0xAC00 <= code <= 0xD7AF  # hangul syllables
        or 0xF900 <= code <= 0xFAFF  # compatibility ideographs
        or 0xFF66 <= code <= 0xFF9D  # half-width katakana
        or 0x20000 <= code <= 0x2FFFF  # ideograph extensions
    )


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
        left_ok = not (_is_word_char(needle[0]) and _is_word_char(before))
        right_ok = not (_is_word_char(needle[-1]) and _is_word_char(after))
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

    @classmethod
    def of_lines(cls, lines: Sequence[str]) -> TextIndex:
        """``of("\\n".join(lines))``, the same index, each line normalised once per process
        (a sweep scores the same long history under every configuration)."""
        kept = " ".join(
            filter(
                None,
                (
                    _kept(line) if len(line) <= _CACHED_LINE else normalise(line, keep_case=True)
                    for line in lines
                ),
            )
        )
        return cls(kept.lower(), kept)

    def has(self, answer: str) -> bool:
        if _is_exact(answer):
            return _contains(self.kept, normalise(answer, keep_case=True))
        return _contains(self.folded, normalise(answer))

    def has_any(self, answers: Sequence[str]) -> bool:
        return any(self.has(a) for a in answers)


#: Longer lines are normalised each time, so the cache holds at most 2,048 x 16 K characters
#: (a prompt of one trace fits; a sweep moves on to the next trace).
_CACHED_LINE = 16_384


@functools.lru_cache(maxsize=2048)
def _kept(line: str) -> str:
    """A line normalised with its case kept: whitespace only splits tokens, so a joined text
    normalises to its lines' normal forms joined by one space (the empty ones left out)."""
    return normalise(line, keep_case=True)


def prompt_text(messages: Sequence[Message]) -> str:
    """Everything the model reads in a prompt: content, tool calls, replay fields."""
    return "\n".join(prompt_lines(messages))


def prompt_lines(messages: Sequence[Message]) -> list[str]:
    """The text of each message of a prompt (:func:`prompt_text` joins them)."""
    return [message_search_text(m) + replay_text(m) for m in messages]


def file_text(path: str, content: bytes) -> str:
    """The searchable text of a written file; JSON files add their decoded string values."""
    text = content.decode("utf-8", "replace")
    if path.endswith(".json"):
        strings: list[str] = []
        try:
            _collect_strings(json.loads(text), strings)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to walk
            return text
        return text + "\n" + "\n".join(strings)
    return text


def _collect_strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _collect_strings(item, out)
    elif isinstance(value, list):
        for item in value:
            _collect_strings(item, out)


#: past this many places where the paths' common start stands, each path is looked for whole
_MOST_STARTS = 64


def held_paths(paths: Sequence[str], text: str) -> list[str]:
    """The ``paths`` that ``text`` holds (``path in text``), in their order. A run writes
    hundreds of files under one folder and a prompt cites a few: the paths' common start is
    found in ``text`` once, and each path is compared only where it stands."""
    prefix = _common_start(paths)
    starts: list[int] = []
    at = text.find(prefix) if len(prefix) >= 4 else -1
    while at >= 0 and len(starts) < _MOST_STARTS:
        starts.append(at)
        at = text.find(prefix, at + 1)
    if len(prefix) < 4 or at >= 0:  # no common start to go by, or too common
        return [path for path in paths if path in text]
    return [path for path in paths if any(text.startswith(path, s) for s in starts)]


def _common_start(texts: Sequence[str]) -> str:
    """The longest text every one of ``texts`` starts with (that of the first and the last in
    sorted order)."""
    if not texts:
        return ""
    first, last = min(texts), max(texts)
    size = next((i for i, (a, b) in enumerate(zip(first, last)) if a != b), len(first))
    return first[: min(size, len(last))]


class PromptScorer:
    """Scores probes against one prompt (and the files the run wrote so far)."""

    def __init__(self, messages: Sequence[Message], files: Mapping[str, bytes]) -> None:
        lines = prompt_lines(messages)
        self._raw = "\n".join(lines)
        self._index = TextIndex.of_lines(lines)
        self._files = files
        self._cited: list[tuple[str, TextIndex]] | None = None

    @property
    def cited(self) -> list[tuple[str, TextIndex]]:
        """The files the prompt cites, by path, indexed when a probe first needs them (most
        answers are in context, and a DB-GPT prompt cites every snapshot it kept)."""
        if self._cited is None:
            self._cited = [
                (path, TextIndex.of(file_text(path, self._files[path])))
                for path in held_paths(sorted(self._files), self._raw)
            ]
        return self._cited

    def score(self, probe: Probe) -> str:
        return self.verdict(probe)[0]

    def verdict(self, probe: Probe) -> tuple[str, str | None]:
        """The outcome, and for ``via_reference`` the cited file holding the answer (the first
        by path): the file a sweep keeps with ``keep_files = "cited"``."""
        if self._index.has_any(probe.answers):
            return "in_context", None
        cited = next((path for path, f in self.cited if f.has_any(probe.answers)), None)
        if cited is not None:
            return "via_reference", cited
        if probe.stale_answers and self._index.has_any(probe.stale_answers):
            return "stale", None
        return "lost", None


def score_probes(
    probes: Sequence[Probe], messages: Sequence[Message], files: Mapping[str, bytes]
) -> list[tuple[Probe, str]]:
    """Each probe with its outcome on this prompt."""
    if not probes:
        return []
    scorer = PromptScorer(messages, files)
    return [(p, scorer.score(p)) for p in probes]
