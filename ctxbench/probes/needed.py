"""Needed facts: values the agent itself writes in a later action, learned from the user or a tool.

A probe on a fact the agent never needed says little about what compaction costs it. A *use* is
a value in a recorded assistant message (a tool call's arguments, or the message text: a
text-ReAct action, or the answer given to the user) that

- first appears in the trace in an earlier **tool result or user message** (the agent could only
  have learned it there: a value the agent wrote first, it knew; one in the system prompt or the
  tool definitions is always in the prompt);
- was learned at least :data:`MIN_GAP` messages before the use (a value used in the very next
  turn tests nothing);
- says something specific: a file path, an id, a number with a unit, a URL, an e-mail address,
  or a short structured tool argument (not a plain word, not a directory like ``/testbed``, not
  a frame in ``site-packages``, not free-text arguments such as the Bash tool's
  ``description``).

:func:`needed_uses` lists every (value, use) pair of a trace: the replay checks each one at its
call (an ``open_loop.break`` when the value is no longer visible) and :func:`needed_probes` turns
one use per value into a probe of kind ``needed``, asked at the call that uses it against the
prompt that call sees, its evidence every earlier message that holds it. Values are found in
other messages with the scorer's own matching (:func:`ctxbench.probes.scoring.answer_forms`:
a path as absolute, cwd- or repo-relative). Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from ctxbench.probes.model import Probe
from ctxbench.probes.scoring import _QUOTES, TextIndex, _contains, _is_exact, answer_forms
from ctxbench.trace import Message, Trace, message_search_text

#: the fewest messages between the first source of a value and its use
MIN_GAP = 3
MIN_LENGTH = 5
#: arguments whose value is the agent's own prose, not a value it learned
PROSE_KEYS = frozenset(
    (
        "description",
        "thought",
        "thoughts",
        "reasoning",
        "explanation",
        "summary",
        "message",
        "content",
        "text",
        "prompt",
        "old_str",
        "new_str",
        "old_string",
        "new_string",
        "file_text",
        "patch",
        "input",
    )
)
#: arguments that hold a shell line: its paths, ids and numbers are the values
COMMAND_KEYS = frozenset(("command", "cmd", "script", "shell", "code", "query"))

_TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("url", re.compile(r"https?://[^\s\"'<>()\[\]{}\\`]+")),
    ("email", re.compile(r"(?<![\w.+-])[A-Za-z0-9][\w.+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")),
    ("path", re.compile(r"(?<![\w/.:~@-])(?:\.{0,2}/)?(?:\w[\w.-]*/)+[\w.-]*\w(?![\w/])")),
    (
        "identifier",
        re.compile(
            r"(?<![\w-])(?=[A-Za-z0-9_#-]*[A-Za-z])(?=[A-Za-z0-9_#-]*\d)#?[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*(?![\w-])"
        ),
    ),
    ("number", re.compile(r"(?<![\w.$])\$?\d[\d,]*\.\d+(?![\d.])|(?<![\w.$])\$\d[\d,]*(?![\d.])")),
)
_BAD_CHARS = re.compile(r"[\"\\\n\r\t\x00-\x1f]")
_STRUCTURED = re.compile(r"[\d/._@:-]")
#: paths that say where a library lives, not what the task touches
_LIBRARY_PATH = re.compile(
    r"(?:site|dist)-packages/|/lib/python\d|/include/python\d|/usr/(?:lib|local/lib|share|include)/"
    r"|/(?:mini|ana)?conda\d?/(?:pkgs|lib|include)/"
)
#: a file's name: a dot and an extension (``x.py``, ``dev.exs``), not ``text/html``
_FILE_NAME = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")
#: a diff header's side (``a/src/x.py``, ``b/src/x.py``)
_DIFF_SIDE = re.compile(r"^[ab]/")


@dataclass(frozen=True)
class Use:
    """A value the agent wrote at ``message`` (model call ``call``), first seen at ``source``;
    ``holders`` are every message before the use that holds it (the source first)."""

    value: str
    category: str
    source: int
    message: int
    call: int
    holders: tuple[int, ...] = ()


def needed_uses(trace: Trace, start: int = 0) -> tuple[Use, ...]:
    """Every (value, use site) of ``trace``, ordered by use; see the module docstring. With
    ``start``, only the uses at messages ``start`` and after (the same uses as the whole list
    holds there): the replay asks for them from the first call whose prompt no longer shows
    every recorded message, since no value can be gone before (it keeps them per trace in its
    caches: :mod:`ctxbench.engine.replay`). Only the messages from ``start`` on are read for
    their values; an earlier one only when it may write a value learned before ``start``."""
    messages = trace.messages
    texts = [message_search_text(m) for m in messages]
    indexes = _Indexes(texts)
    always = "\n".join(
        [t for m, t in zip(messages, texts) if m.role == "system"]
        + [f"{t.name} {t.description} {json.dumps(t.parameters)}" for t in trace.tools]
    )
    fixed = TextIndex.of(always)
    call_of = {index: k for k, index in enumerate(trace.call_indices)}
    written = _Written(messages)
    uses: list[Use] = []
    verdicts: dict[str, int | None] = {}  # value -> first source (None: not a learned value)
    for j in range(start, len(messages)):
        if messages[j].role != "assistant":
            continue
        for value, category in written.values(j):
            if value not in verdicts:  # learned before its first use, or never
                source = _first_source(value, j, messages, indexes, fixed)
                if source is not None and written.before(value, min(source, start)):
                    source = None  # the agent wrote it before any message it could learn it from
                verdicts[value] = source
            source = verdicts[value]
            if source is not None and source + MIN_GAP <= j:
                holders = tuple(indexes.holding(value, source, j))
                uses.append(Use(value, category, source, j, call_of[j], holders))
    return tuple(uses)


class _Written:
    """The values each assistant message writes (:func:`action_values`, the longest of each),
    read when first asked. ``needed_uses`` finds a value's first source at its first use (the
    first message holding it before that use); from ``start`` on, the first use seen may not
    be the value's first: the value's verdict is then the same only if no assistant message
    before its source writes it, which :meth:`before` checks."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self._values: dict[int, list[tuple[str, str]]] = {}
        self._texts: dict[int, str] = {}

    def values(self, j: int) -> list[tuple[str, str]]:
        found = self._values.get(j)
        if found is None:
            found = self._values[j] = _longest(dict.fromkeys(action_values(self.messages[j])))
        return found

    def before(self, value: str, stop: int) -> bool:
        """Whether an assistant message before ``stop`` writes ``value``: only those whose
        written text holds it (every value is a part of the text or of a string argument,
        :func:`_written_text`) are read for their values."""
        for a in range(stop):
            if self.messages[a].role != "assistant":
                continue
            text = self._texts.get(a)
            if text is None:
                text = self._texts[a] = _written_text(self.messages[a])
            if value in text and any(v == value for v, _ in self.values(a)):
                return True
        return False


def _written_text(message: Message) -> str:
    """Text holding every value :func:`action_values` may find in ``message``: its content, its
    tool calls' arguments as written and, where JSON escaped a character in them (a ``\\``),
    their decoded strings (a value in an argument is a part of one), apart."""
    pieces = [message.content]
    for call in message.tool_calls:
        pieces.append(call.arguments)
        if "\\" not in call.arguments:  # nothing escaped: each string is written as it is
            continue
        try:
            pieces += _strings(json.loads(call.arguments))
        except (ValueError, RecursionError):
            continue
    return "\x00".join(pieces)


def _strings(value: Any) -> list[str]:
    """The strings of a decoded JSON value (its keys left out), at every depth."""
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping):
            stack += item.values()
        elif isinstance(item, list):
            stack += item
    return out


def _longest(values: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The values not part of a longer one of the same message (``test_issue_4898`` inside
    ``tests/regression/test_issue_4898.py``): the longer is the more specific fact."""
    found = list(values)
    return [(v, c) for v, c in found if not any(v != w and v in w for w, _ in found)]


#: what building a :class:`TextIndex` changes in a text: whitespace and quotes
_NOT_PLAIN = re.compile("[\\s" + re.escape("".join(map(chr, _QUOTES))) + "]")


class _Indexes:
    """Each message's text, indexed for lookups when first needed; all of them lower-cased
    and joined once, so the messages that may hold a value are found by one search."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = texts
        self.folded = [t.lower() for t in texts]
        # one byte a character (other characters read as "?"), so a search stays fast where a
        # message holds CJK or emoji; every hit is checked against the message's own index
        self.joined = "\x00".join(self.folded).encode("ascii", "replace").decode("ascii")
        self.starts = list(accumulate((len(t) + 1 for t in self.folded), initial=0))
        self._built: dict[int, TextIndex] = {}

    def holding(self, value: str, start: int = 0, stop: int | None = None) -> list[int]:
        """The messages in ``[start, stop)`` that hold ``value``, in order."""
        return [i for i in self._may_hold(value, start, stop) if self.holds(i, value)]

    def first_holding(self, value: str, stop: int) -> int | None:
        """The first message before ``stop`` that holds ``value`` (only the messages before it
        that may hold it are read), if any."""
        return next((i for i in self._may_hold(value, 0, stop) if self.holds(i, value)), None)

    def holds(self, i: int, value: str) -> bool:
        """Whether message ``i`` holds ``value`` (:meth:`TextIndex.has` on its text). An ASCII
        text is read as it is where no form of ``value`` holds whitespace or a quote: the
        index only turns those into single spaces (and lower-cases ASCII character by
        character), so such a form's whole-token matches, and the characters beside them, are
        the same; any other text is indexed."""
        forms = answer_forms(value)
        text = self.texts[i]
        if not text.isascii() or any(map(_NOT_PLAIN.search, forms)):
            return self[i].has(value)
        folded = self.folded[i]
        return any(
            _contains(text, form) if _is_exact(form) else _contains(folded, form.lower())
            for form in forms
        )

    def _may_hold(self, value: str, start: int, stop: int | None) -> list[int]:
        """The messages in ``[start, stop)`` whose lower-cased text holds one of ``value``'s
        forms, in order (a message holds ``value`` only if it is one of them)."""
        stop = len(self.texts) if stop is None else stop
        forms = {f.lower() for f in answer_forms(value)}
        if not all(form.isascii() for form in forms):
            return [i for i in range(start, stop) if any(f in self.folded[i] for f in forms)]
        end = self.starts[stop]
        where = set()
        for form in forms:
            at = self.joined.find(form, self.starts[start], end)
            while at >= 0:
                i = bisect_right(self.starts, at) - 1
                where.add(i)
                at = self.joined.find(form, self.starts[i + 1], end)  # the next message on
        return sorted(where)

    def __getitem__(self, i: int) -> TextIndex:
        index = self._built.get(i)
        if index is None:
            index = self._built[i] = TextIndex.of(self.texts[i])
        return index


def _first_source(
    value: str, used_at: int, messages: Sequence[Message], indexes: _Indexes, fixed: TextIndex
) -> int | None:
    """The first message before ``used_at`` (the value's first use) holding ``value`` if it is
    a tool result or a user message (else None: the agent wrote it first, or the system prompt
    or the tools hold it)."""
    if fixed.has(value):
        return None
    found = indexes.first_holding(value, used_at)
    if found is None:
        return None
    return found if messages[found].role in ("user", "tool") else None


def used_after(
    before: Sequence[Message], after: Sequence[Message], *, limit: int | None = None
) -> tuple[str, ...]:
    """The needed facts of a compaction: the values the agent's actions in ``after`` write
    (:func:`action_values`, the longest of each message) that a message of ``before`` other
    than the system prompt held, in the order of first use (``ctxbench summaries``: what a
    summary of ``before`` had to keep for the agent to go on)."""
    seen = TextIndex.of("\n".join(message_search_text(m) for m in before if m.role != "system"))
    out: dict[str, None] = {}
    for message in after:
        if message.role != "assistant":
            continue
        for value, _ in _longest(dict.fromkeys(action_values(message))):
            if value not in out and seen.has(value):
                out[value] = None
    found = tuple(out)
    return found[:limit] if limit is not None else found


def action_values(message: Message) -> Iterator[tuple[str, str]]:
    """The specific values an assistant message writes: in its tool calls' arguments (walked
    through nested objects; prose arguments skipped) and in its text."""
    for call in message.tool_calls:
        try:
            args = json.loads(call.arguments)
        except (ValueError, RecursionError):
            yield from _tokens(call.arguments)
            continue
        yield from _argument_values(args, "")
    if message.content:
        yield from _tokens(message.content)


def _argument_values(value: Any, key: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _argument_values(v, str(k).lower())
    elif isinstance(value, list):
        for item in value:
            yield from _argument_values(item, key)
    elif isinstance(value, str):
        if key in PROSE_KEYS:
            return
        if key in COMMAND_KEYS or "\n" in value or len(value) > 120:
            yield from _tokens(value)
            return
        text = value.strip()
        if _keep(text, "argument"):
            yield text, _category(text)
    # bare numbers in arguments are line numbers, offsets and limits: where, not what


def _category(text: str) -> str:
    for category, pattern in _TOKEN_PATTERNS:
        if pattern.fullmatch(text):
            return category
    return "argument"


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    """Each pattern's values, in the order of the patterns then of the text (as a whole-text
    ``finditer`` of each pattern finds them), searched only in the runs of non-space text that
    hold the pattern's trigger (see :data:`_TRIGGERS`)."""
    for category, pattern in _TOKEN_PATTERNS:
        trigger = _TRIGGERS.get(category)
        spans = [(0, len(text))] if trigger is None else _windows(text, trigger)
        for start, stop in spans:
            for match in pattern.finditer(text, start, stop):
                value = match.group(0).rstrip(".,;:)")
                if _keep(value, category):
                    yield value, category


#: what a non-space run must hold for a pattern to match in it, or for a match to be kept: no
#: pattern's match holds a space (``\s``) and every pattern reads a space beside a match as it
#: reads the text's end, so the matches of a whole text are those of its runs; a run without
#: the trigger has none that :func:`_keep` keeps (an e-mail address holds ``@``, a path ``/``,
#: a number ``.`` or ``$`` before a digit, an identifier two digits: its lookahead asks for
#: one, :func:`_keep` for two)
_TRIGGERS = {
    "email": re.compile("@"),
    "path": re.compile("/"),
    "identifier": re.compile(r"\d[^\s\d]*\d"),
    "number": re.compile(r"[.$]\d"),
}
_SPACE = re.compile(r"\s")
#: runs closer than this are searched as one window (fewer searches, the same matches)
_WINDOW_GAP = 32


def _windows(text: str, trigger: re.Pattern[str]) -> list[tuple[int, int]]:
    """Spans of ``text``, each starting at the text's start or after a space and ending at a
    space or the text's end, that cover every non-space run holding ``trigger``."""
    found = trigger.search(text)
    if found is None or len(text) <= _WINDOW_GAP:
        return [] if found is None else [(0, len(text))]
    spans: list[tuple[int, int]] = []
    at = 0
    while found is not None:
        hit = found.start()
        # the run's start: after the last space or newline before the hit (a space this
        # misses, such as a tab, only makes the window start at an earlier one)
        start = max(at, text.rfind(" ", at, hit) + 1, text.rfind("\n", at, hit) + 1)
        stop = _run_end(text, hit)
        while (
            found := trigger.search(text, stop)
        ) is not None and found.start() - stop < _WINDOW_GAP:
            stop = _run_end(text, found.start())
        spans.append((start, stop))
        at = stop
    return spans


def _run_end(text: str, at: int) -> int:
    space = _SPACE.search(text, at)
    return len(text) if space is None else space.start()


def _keep(value: str, category: str) -> bool:
    """Whether a value is specific enough to ask about (see the module docstring)."""
    if len(value) < MIN_LENGTH or len(value) > 200 or _BAD_CHARS.search(value):
        return False
    if category == "argument" and (
        not _STRUCTURED.search(value) or value.lower() in ("true", "false", "none", "null")
    ):
        return False
    if category == "path" or "/" in value:
        parts = [p for p in value.split("/") if p and p not in (".", "..")]
        rooted = value.startswith(("/", "./", "../", "~/"))
        if not parts or not (_FILE_NAME.search(parts[-1]) or (rooted and len(parts) >= 2)):
            return False  # a directory like /testbed, a MIME type, a function's arity
        if _LIBRARY_PATH.search(value) or _DIFF_SIDE.match(value) or value == "/dev/null":
            return False
    if category == "identifier" and sum(ch.isdigit() for ch in value) < 2:
        return False
    return not (category == "number" and sum(ch.isdigit() for ch in value) < 3)


# -- probes ---------------------------------------------------------------------------------

_ROLE_NAMES = {"tool": "a tool result", "user": "a user message"}
_NOUNS = {
    "path": "file path",
    "identifier": "identifier",
    "number": "value",
    "url": "URL",
    "email": "e-mail address",
    "argument": "value",
}


def needed_probes(trace: Trace, cap: int) -> tuple[Probe, ...]:
    """At most ``cap`` probes of kind ``needed``, one per value (its use farthest from the
    value's last mention before it, where compaction has had the most room to drop it), spread
    over the trace's early, middle and late thirds, ordered by the call that asks them."""
    if cap <= 0:
        return ()
    messages = trace.messages
    texts = [message_search_text(m) for m in messages]
    best: dict[str, tuple[int, Use, tuple[int, ...]]] = {}
    for use in needed_uses(trace):
        evidence = use.holders
        gap = use.message - evidence[-1] if evidence else 0
        if use.value not in best or gap > best[use.value][0]:
            best[use.value] = (gap, use, evidence)
    thirds: list[list[tuple[int, Use, tuple[int, ...]]]] = [[], [], []]
    for entry in sorted(best.values(), key=lambda e: (-e[0], e[1].message, e[1].value)):
        thirds[min(2, 3 * entry[1].message // len(messages))].append(entry)
    chosen: list[tuple[int, Use, tuple[int, ...]]] = []
    while len(chosen) < cap and any(thirds):
        for queue in thirds:
            while queue and len(chosen) < cap:
                entry = queue.pop(0)
                if not any(_overlaps(entry[1].value, c[1].value) for c in chosen):
                    chosen.append(entry)
                    break
    chosen.sort(key=lambda e: (e[1].call, e[1].value))
    return tuple(
        _probe(n, use, evidence, texts, messages)
        for n, (_, use, evidence) in enumerate(chosen, start=1)
    )


def _overlaps(a: str, b: str) -> bool:
    return a in b or b in a


def _probe(
    n: int, use: Use, evidence: tuple[int, ...], texts: Sequence[str], messages: Sequence[Message]
) -> Probe:
    source = messages[use.source]
    where = "an observation" if source.is_observation else _ROLE_NAMES.get(source.role, "a message")
    text = texts[use.source]
    form = next((f for f in answer_forms(use.value) if f in text), use.value)
    at = max(text.find(form), 0)
    left = " ".join(text[max(0, at - 60) : at].split())
    right = " ".join(text[at + len(form) : at + len(form) + 60].split())
    question = (
        f"Which {_NOUNS[use.category]} from {where} (message {use.source}) does the agent use"
        f" at call {use.call}: “…{left} ___ {right}…”?"
    )
    return Probe(
        id=f"needed-{n}",
        kind="needed",
        question=question,
        answers=(use.value,),
        evidence=evidence,
        ask_at=use.call,
        meta={
            "mined": use.category,
            "source_message": use.source,
            "used_at": use.message,
        },
    )
