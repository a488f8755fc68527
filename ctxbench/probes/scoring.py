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

An answer also counts in the forms a person reading the prompt would accept as the same fact
(:func:`answer_forms`): a file path as absolute, cwd-relative or repo-relative (any tail of two
or more components: ``lib/x/annotation.ex`` for ``/home/u/repo/lib/x/annotation.ex``, and the
file name alone when it names one file: ``pane_view_live.ex``, ``.dialyzerignore``); a shell
command's core without a leading ``cd X &&`` and without the redirections ``2>&1``,
``>/dev/null``, ``2>/dev/null``; an error line with or without its exception-class prefix
(``unsupported operand ...`` for ``TypeError: unsupported operand ...``). Still whole tokens,
still deterministic. An answer kept only as a bare list item (``- lib/x.py`` with no words
around it, as a summary may list it) is in context, and :meth:`PromptScorer.is_bare` says so:
the ``probe`` event carries ``bare`` so the report can show it apart.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxbench.counting.base import replay_text
from ctxbench.memo import ObjectMemo
from ctxbench.probes.model import Probe
from ctxbench.trace import Message, message_search_text

OUTCOMES: tuple[str, ...] = ("in_context", "via_reference", "stale", "lost")

_QUOTES = str.maketrans({c: " " for c in "\"'`“”‘’«»"})


def normalise(text: str, *, keep_case: bool = False) -> str:
    """Quotes become spaces, runs of whitespace one space; lower-cased unless ``keep_case``."""
    text = text.translate(_QUOTES)
    text = " ".join(text.split())  # str.split: the same whitespace as \s, several times faster
    return text if keep_case else text.lower()


_DIGIT = re.compile(r"\d")


def _is_exact(answer: str) -> bool:
    return _DIGIT.search(answer) is not None


def _is_word_char(ch: str) -> bool:
    """Letters, digits and ``_`` continue a token (``session_registry.ex`` is not inside
    ``active_session_registry.ex``), except CJK ideographs, kana and hangul (unspaced scripts)."""
    if ch == "_":
        return True
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
        """``of("\\n".join(lines))``, the same index built line by line (whitespace only splits
        tokens, so a joined text normalises to its lines' normal forms joined by one space,
        the empty ones left out; and lower-casing never looks past a space)."""
        kept = [normalise(line, keep_case=True) for line in lines]
        return cls.joined(kept, [k.lower() for k in kept])

    @classmethod
    def joined(cls, kept: Sequence[str], folded: Sequence[str]) -> TextIndex:
        """The index of lines from each line's normal form (case kept) and its lower case."""
        return cls(" ".join(filter(None, folded)), " ".join(filter(None, kept)))

    def has(self, answer: str) -> bool:
        """Whether the text holds ``answer`` in any of its :func:`answer_forms`."""
        return any(self.has_exactly(form) for form in answer_forms(answer))

    def has_exactly(self, answer: str) -> bool:
        """Whether the text holds ``answer`` itself (normalised, as a whole token)."""
        if _is_exact(answer):
            return _contains(self.kept, normalise(answer, keep_case=True))
        return _contains(self.folded, normalise(answer))

    def has_any(self, answers: Sequence[str]) -> bool:
        return any(self.has(a) for a in answers)


_PATH = re.compile(r"(?:\.{0,2}/)?(?:[\w.@+-]+/)+[\w.@+-]+")
#: a leading ``cd DIR &&`` (or ``;``): where the command ran, not what it did
_CD_PREFIX = re.compile(r"^cd\s+\S+\s*(?:&&|;)\s*")
#: redirections that only route a command's output: its core is the same command
_REDIRECTIONS = re.compile(r"\s*(?:2>&1|[12]?>\s*/dev/null|&>\s*/dev/null)")
#: an error line's exception-class prefix: ``TypeError:``, ``Error:``, ``django.db.utils.X:``
_ERROR_PREFIX = re.compile(r"^(?:[\w.]*(?:Error|Exception|Warning)|ERROR|FAILED|fatal|error):\s*")
#: the shortest message an error line may be matched by, without its class
_MIN_ERROR_MESSAGE = 16
#: the fewest components a path tail must keep to name the same file (``x/annotation.ex``)
_MIN_PATH_PARTS = 2
#: a file name that names one file on its own: words joined by ``_`` or ``-`` and an extension
#: (``pane_view_live.ex``, ``notify-session.sh``), or a dotfile (``.dialyzerignore``); not
#: ``config.ex`` or ``index.ts``, which many folders hold
_SPECIFIC_NAME = re.compile(
    r"\.[A-Za-z][\w.-]{3,}|[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)+\.[A-Za-z][A-Za-z0-9]{0,7}"
)


@functools.lru_cache(maxsize=8192)
def answer_forms(answer: str) -> tuple[str, ...]:
    """The forms of ``answer`` a person would accept as the same fact, the answer first (see
    the module docstring): path tails, a command's core, an error line's message."""
    forms = [answer]
    text = answer.strip()
    if _PATH.fullmatch(text):
        parts = [p for p in text.split("/") if p and p not in (".", "..")]
        for start in range(1, len(parts) - _MIN_PATH_PARTS + 1):
            tail = "/".join(parts[start:])
            if len(tail) >= 5:
                forms.append(tail)
        if text.startswith("./"):
            forms.append(text[2:])
        if len(parts) >= 2 and _SPECIFIC_NAME.fullmatch(parts[-1]):
            forms.append(parts[-1])
    elif " " in text:
        core = _REDIRECTIONS.sub("", _CD_PREFIX.sub("", text)).strip()
        if core != text and len(core) >= 5:
            forms.append(core)
        message = _ERROR_PREFIX.sub("", text, count=1)
        if message != text and len(message) >= _MIN_ERROR_MESSAGE:
            forms.append(message)
    return tuple(dict.fromkeys(forms))


#: a list item: a bullet or a number, then the item
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+(.*)$")
#: what may stand beside a bare answer: punctuation, markup, a line number or a colon
_NOT_WORDS = re.compile(r"[^A-Za-z\u00C0-\u024F\u0400-\u04FF\u2E80-\u9FFF\uAC00-\uD7AF]+")


def _bare_line(line: str, forms: Sequence[str]) -> bool:
    """Whether ``line`` is a list item holding one of ``forms`` (longest first) and no words
    of its own."""
    item = _LIST_ITEM.match(line)
    if item is None:
        return False
    rest = item.group(1)
    for form in forms:
        rest = rest.replace(form, " ")
    return not _NOT_WORDS.sub("", rest).strip()


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


class PromptText:
    """The searchable text of one prompt: its lines joined (``raw``, and lower-cased when
    :meth:`PromptScorer.is_bare` first needs it) and its :class:`TextIndex`. Built once per
    distinct prompt by a :class:`ScoringCache` and shared by every scorer of that prompt."""

    def __init__(self, raw: str, index: TextIndex) -> None:
        self.raw = raw
        self.index = index
        #: answers -> whether the text holds one (the configurations of a sweep that show
        #: this prompt ask the same probes of it)
        self._holds: dict[tuple[str, ...], bool] = {}

    def holds(self, answers: Sequence[str]) -> bool:
        """``index.has_any(answers)``, worked out once per list of answers."""
        key = tuple(answers)
        found = self._holds.get(key)
        if found is None:
            found = self._holds[key] = self.index.has_any(key)
        return found

    @classmethod
    def of(cls, messages: Sequence[Message]) -> PromptText:
        """The text of ``messages``, built from nothing (no cache)."""
        lines = prompt_lines(messages)
        return cls("\n".join(lines), TextIndex.of_lines(lines))

    @functools.cached_property
    def raw_folded(self) -> str:
        return self.raw.lower()


#: one message's searchable line: as the model reads it, normalised with its case kept, and that
#: lower-cased
_Line = tuple[str, str, str]


def _line(message: Message) -> _Line:
    raw = message_search_text(message) + replay_text(message)
    kept = normalise(raw, keep_case=True)
    return raw, kept, kept.lower()


class ScoringCache:
    """What probe scoring keeps between prompts: each message's line in its three forms (once
    per message object, forgotten with it) and each distinct prompt's :class:`PromptText` (once
    per list of message objects: the ask points of one replay share their messages' lines, and
    the configurations of a sweep that show the same prompt share its text). Scores do not
    depend on it; it holds at most ``limit`` characters of prompt texts, then starts again."""

    def __init__(self, limit: int = 32_000_000) -> None:
        self.limit = limit
        self._lines: ObjectMemo[Message, _Line] = ObjectMemo(_line)
        #: the ids of a prompt's messages -> (the messages, kept so the ids stay theirs; text)
        self._texts: dict[tuple[int, ...], tuple[tuple[Message, ...], PromptText]] = {}
        self._held = 0

    def text(self, messages: Sequence[Message]) -> PromptText:
        """The :class:`PromptText` of ``messages`` (:meth:`PromptText.of`, the same text)."""
        key = tuple(map(id, messages))
        found = self._texts.get(key)
        if found is not None:
            return found[1]
        lines = self._lines.many(messages)
        raw = "\n".join([line[0] for line in lines])
        text = PromptText(
            raw, TextIndex.joined([line[1] for line in lines], [line[2] for line in lines])
        )
        size = 3 * len(raw) + len(key)
        if self._held + size > self.limit:
            self._texts.clear()
            self._held = 0
        self._texts[key] = (tuple(messages), text)
        self._held += size
        return text

    def __len__(self) -> int:
        return len(self._texts)


class PromptScorer:
    """Scores probes against one prompt (and the files the run wrote so far); ``cache`` shares
    the prompt's text with other scorers (a sweep's, :class:`ScoringCache`)."""

    def __init__(
        self,
        messages: Sequence[Message],
        files: Mapping[str, bytes],
        cache: ScoringCache | None = None,
    ) -> None:
        self._text = PromptText.of(messages) if cache is None else cache.text(messages)
        self._raw = self._text.raw
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

    def is_bare(self, probe: Probe) -> bool:
        """Whether every line of the prompt that holds one of the probe's answers (in any
        form, verbatim) is a bare list item: kept as a token, with no words around it. False
        when the answer is found only after normalising (it then stands in running text)."""
        found = False
        for answer in probe.answers:
            exact = _is_exact(answer)
            haystack = self._raw if exact else self._raw_folded
            forms = sorted(
                (f if exact else f.lower() for f in answer_forms(answer)), key=len, reverse=True
            )
            for needle in forms:
                at = haystack.find(needle)
                while at >= 0:
                    start = haystack.rfind("\n", 0, at) + 1
                    end = haystack.find("\n", at)
                    line = haystack[start : end if end >= 0 else len(haystack)]
                    if not _bare_line(line, forms):
                        return False
                    found = True
                    at = haystack.find(needle, at + len(needle))
        return found

    @property
    def _raw_folded(self) -> str:
        return self._text.raw_folded

    def verdict(self, probe: Probe) -> tuple[str, str | None]:
        """The outcome, and for ``via_reference`` the cited file holding the answer (the first
        by path): the file a sweep keeps with ``keep_files = "cited"``."""
        outcome, cited = self.find(probe.answers)
        if outcome == "lost" and probe.stale_answers and self._text.holds(probe.stale_answers):
            return "stale", None
        return outcome, cited

    def find(self, answers: Sequence[str]) -> tuple[str, str | None]:
        """Where any of ``answers`` is: ``in_context``, ``via_reference`` (with the cited file)
        or ``lost``."""
        if self._text.holds(answers):
            return "in_context", None
        cited = next((path for path, f in self.cited if f.has_any(answers)), None)
        if cited is not None:
            return "via_reference", cited
        return "lost", None


def score_probes(
    probes: Sequence[Probe], messages: Sequence[Message], files: Mapping[str, bytes]
) -> list[tuple[Probe, str]]:
    """Each probe with its outcome on this prompt."""
    if not probes:
        return []
    scorer = PromptScorer(messages, files)
    return [(p, scorer.score(p)) for p in probes]
