"""Probe mining: the facts of a recorded trace worth asking about, turned into probes.

Recorded traces carry no planted facts. The miner asks first about what the agent itself
needed: **needed** probes (:mod:`ctxbench.probes.needed`) are values the agent wrote in a later
action after learning them from the user or a tool, asked at the call that uses them. They
come first in the cap; the other kinds fill at most as many places as the needed ones took
(``max_others`` sets another cap), so most of what is asked is what the agent used.

The other kinds are canaries compaction is known to lose first (docs/sources.md: file paths,
executed commands and measured numbers survive summaries far worse than decisions) -- file
paths, URLs, shell commands, identifiers, e-mail addresses, numbers with units, error lines and
tool-call arguments -- kept only when they say something specific:

- the answer appears in its evidence message (``ctxbench validate`` checks it);
- it is *local*: it appears in at most ``max_evidence`` messages, all within two adjacent
  rounds, and never in a system message (a value repeated everywhere, or always in the
  prompt, tests nothing);
- it is not generic and not trivia (:mod:`ctxbench.probes.trivia`: dates, hashes, durations,
  regex fragments, boilerplate numbers, library frames, diff headers, download sizes, branch
  names, free-text arguments, e-mails and URLs in tool output, generic HTTP statuses).

Every candidate left out gets a reason (:func:`mine` returns them; ``ctxbench probes mine
--why`` prints them), so a trace with few probes says why. Probes are deduplicated (no answer
contained in another), capped per trace and spread over the trace's early, middle and late
thirds; the other kinds are asked at the end of the trace. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ctxbench.pairing import rounds
from ctxbench.probes.model import Probe
from ctxbench.probes.needed import needed_probes
from ctxbench.probes.scoring import TextIndex
from ctxbench.probes.trivia import Boilerplate, skip_reason
from ctxbench.trace import Message, Trace, message_search_text

DEFAULT_MAX_PER_TRACE = 12
#: the other kinds may fill this many places even where no needed fact was found (none: a
#: trace where the agent reused nothing it learned has nothing to ask)
MIN_OTHERS = 0
#: at most this many probes cite the same first message (one JSON record holds many values)
MAX_PER_MESSAGE = 2

#: category -> (probe kind, what the question calls it, priority: higher is mined first)
CATEGORIES: dict[str, tuple[str, str, int]] = {
    "error": ("recall", "error line", 9),
    "path": ("artifact", "file path", 8),
    "command": ("artifact", "command", 8),
    "number": ("recall", "measured value", 7),
    "identifier": ("recall", "identifier", 6),
    "argument": ("artifact", "tool-call argument", 6),
    "url": ("artifact", "URL", 5),
    "email": ("recall", "e-mail address", 5),
}

_UNITS = (
    r"ms|us|µs|ns|s|sec|secs|seconds|min|mins|minutes|h|hrs|hours|days|B|KB|MB|GB|TB|KiB|MiB|GiB|TiB|"
    r"bytes|%|tokens|rows|lines|files|tests|requests|rps|qps|req/s|USD|EUR|GBP|kg|km|px|GHz|MHz|ms/op"
)
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("url", re.compile(r"https?://[^\s\"'<>()\[\]{}\\`]+")),
    ("email", re.compile(r"(?<![\w.+-])[A-Za-z0-9][\w.+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")),
    (
        "path",
        re.compile(
            r"(?<![\w/.:~-])(?:~?/)?(?:[\w.-]+/)+[\w.-]*\w\.[A-Za-z][A-Za-z0-9]{0,7}(?![\w/])"
        ),
    ),
    ("path", re.compile(r"(?<![\w/.:~-])/(?:[\w.-]+/)+[\w.-]*\w(?![\w/])")),
    ("date", re.compile(r"(?<![\d-])\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?(?![\d-])")),
    (
        "date",
        re.compile(
            r"(?<![\d:.])\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?[AaPp]\.?[Mm]\.?)?(?![\d:])"
        ),
    ),
    ("number", re.compile(rf"(?<![\w.$])\$?\d[\d,]*(?:\.\d+)?\s?(?:{_UNITS})(?![\w/])")),
    ("number", re.compile(r"(?<![\w.])\$\d[\d,]*(?:\.\d{1,2})?(?![\d.])")),
    (
        "identifier",
        re.compile(
            r"(?<![\w-])(?=[A-Za-z0-9_-]*[A-Za-z])(?=[A-Za-z0-9_-]*\d)[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+(?![\w-])"
        ),
    ),
    (
        "identifier",
        re.compile(r"(?<![\w-])(?=[A-Z0-9]*[A-Z])(?=[A-Z0-9]*\d)[A-Z0-9]{5,16}(?![\w-])"),
    ),
    (
        "identifier",
        re.compile(r"(?<![\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w-])"),
    ),
    ("identifier", re.compile(r"(?<![\w-])\d{3}-\d{3}-\d{4}(?![\w-])")),
)
_ERROR_LINE = re.compile(
    r"^[ \t]*(?:E[ \t]+)?((?:[\w.]*(?:Error|Exception)|ERROR|FAILED|fatal|error)\b[:\s].*\S)[ \t]*$",
    re.M,
)
_BACKTICK = re.compile(r"`([^`\n]*)`")
#: programs whose command lines are worth asking about when quoted in the agent's text
_PROGRAMS = frozenset(
    (
        "python",
        "python3",
        "pytest",
        "pip",
        "pip3",
        "git",
        "grep",
        "rg",
        "find",
        "sed",
        "awk",
        "cat",
        "head",
        "tail",
        "ls",
        "make",
        "npm",
        "npx",
        "yarn",
        "node",
        "go",
        "cargo",
        "docker",
        "kubectl",
        "curl",
        "wget",
        "bash",
        "sh",
        "chmod",
        "mkdir",
        "rm",
        "mv",
        "cp",
        "tox",
        "poetry",
        "uv",
        "mvn",
        "gradle",
        "java",
        "ruby",
        "perl",
        "psql",
        "mysql",
        "sqlite3",
        "jq",
        "open",
        "goto",
        "edit",
        "create",
        "search_file",
        "search_dir",
        "find_file",
        "submit",
    )
)
_COMMAND_KEYS = ("command", "cmd", "script", "shell", "code")
_SPLIT_COMMAND = re.compile(r"&&|\|\||;|\|")  # segments are stripped: no \s* (quadratic on blanks)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Candidate:
    """A canary found in one message (``key``: the tool-call argument it came from, if any)."""

    answer: str
    category: str
    index: int
    key: str = ""


@dataclass(frozen=True)
class Skipped:
    """A candidate left out, and why (first message it was found in)."""

    answer: str
    category: str
    index: int
    reason: str


@dataclass(frozen=True)
class Mined:
    """The probes of a trace and every candidate the miner left out."""

    probes: tuple[Probe, ...]
    skipped: tuple[Skipped, ...]


def mine_probes(
    trace: Trace,
    max_per_trace: int = DEFAULT_MAX_PER_TRACE,
    *,
    max_evidence: int = 3,
    max_others: int | None = None,
) -> tuple[Probe, ...]:
    """Probes mined from ``trace`` (see the module docstring): the needed ones by the call
    that asks them, then the others by evidence position."""
    return mine(trace, max_per_trace, max_evidence=max_evidence, max_others=max_others).probes


def mine(
    trace: Trace,
    max_per_trace: int = DEFAULT_MAX_PER_TRACE,
    *,
    max_evidence: int = 3,
    max_others: int | None = None,
) -> Mined:
    """:func:`mine_probes` with the reason each other candidate was left out. ``max_others``
    caps the other kinds (default: as many as the needed probes took, at least
    :data:`MIN_OTHERS`)."""
    if max_per_trace <= 0 or not trace.messages:
        return Mined((), ())
    needed = needed_probes(trace, max_per_trace)
    room = max_per_trace - len(needed)
    room = min(room, max(len(needed), MIN_OTHERS) if max_others is None else max_others)
    others = _mine_others(trace, room, max_evidence, tuple(p.answers[0] for p in needed))
    return Mined(needed + others.probes, others.skipped)


def _mine_others(
    trace: Trace, max_per_trace: int, max_evidence: int, needed: tuple[str, ...]
) -> Mined:
    """The kinds other than ``needed``: at most ``max_per_trace`` probes, none on an answer
    that overlaps a ``needed`` one."""
    messages = trace.messages
    texts = [message_search_text(m) for m in messages]
    first_seen: dict[str, Candidate] = {}
    extracted_in: dict[str, set[int]] = {}
    for index, message in enumerate(messages):
        if message.role == "system":
            continue
        for cand in _extract(message, texts[index], index):
            extracted_in.setdefault(cand.answer, set()).add(index)
            first_seen.setdefault(cand.answer, cand)
    skipped: list[Skipped] = []

    def skip(cand: Candidate, reason: str) -> None:
        skipped.append(Skipped(cand.answer, cand.category, cand.index, reason))

    boiler = Boilerplate(texts, trace)
    pool = []
    for c in first_seen.values():
        # cheap filter first: what was extracted in too many messages is not local
        where = len(extracted_in[c.answer])
        reason = (
            f"not local: in {where} messages (max {max_evidence})"
            if where > max_evidence
            else skip_reason(c, boiler)
        )
        if reason:
            skip(c, reason)
        else:
            pool.append(c)
    pool = _longest(pool, skip)
    for c in list(pool):
        same = next((a for a in needed if _overlaps(c.answer, a)), None)
        if same is not None:
            skip(c, f"the same fact as the needed probe on {same!r}")
            pool.remove(c)
    if not pool or max_per_trace <= 0:
        for c in pool:
            skip(c, "over the cap: the needed probes took every place")
        return Mined((), _sorted(skipped))
    indexes = [TextIndex.of(t) for t in texts]
    round_of = _round_index(messages)
    thirds: list[dict[str, list[Candidate]]] = [{}, {}, {}]
    for cand in sorted(pool, key=lambda c: (-min(len(c.answer), 60), c.index, c.answer)):
        thirds[min(2, 3 * cand.index // len(messages))].setdefault(cand.category, []).append(cand)
    chosen: list[tuple[Candidate, tuple[int, ...]]] = []
    taken: dict[str, int] = {}
    progress = True
    while len(chosen) < max_per_trace and progress:
        progress = False
        for queues in thirds:  # one probe per third per pass: early, middle, late
            if len(chosen) >= max_per_trace:
                break
            picked = _next_candidate(
                queues, taken, chosen, messages, indexes, round_of, max_evidence, skip
            )
            if picked is not None:
                chosen.append(picked)
                taken[picked[0].category] = taken.get(picked[0].category, 0) + 1
                progress = True
    for queues in thirds:
        for queue in queues.values():
            for cand in queue:
                skip(cand, f"over the cap of {max_per_trace} probes per trace")
    chosen.sort(key=lambda item: (item[1][0], item[0].answer))
    probes = tuple(
        _probe(n, cand, evidence, texts, messages)
        for n, (cand, evidence) in enumerate(chosen, start=1)
    )
    return Mined(probes, _sorted(skipped))


def _longest(pool: list[Candidate], skip: Callable[[Candidate, str], None]) -> list[Candidate]:
    """Drop a candidate that is part of a longer one from the same message (test_issue_4898
    inside tests/regression/test_issue_4898.py): the longer one is the more specific probe."""
    by_message: dict[int, list[Candidate]] = {}
    for c in pool:
        by_message.setdefault(c.index, []).append(c)
    kept = []
    for c in pool:
        longer = next(
            (d for d in by_message[c.index] if d.answer != c.answer and c.answer in d.answer),
            None,
        )
        if longer is None:
            kept.append(c)
        else:
            skip(c, f"part of the longer candidate {longer.answer!r}")
    return kept


def _sorted(skipped: list[Skipped]) -> tuple[Skipped, ...]:
    return tuple(sorted(skipped, key=lambda s: (s.index, s.answer)))


# -- extraction ---------------------------------------------------------------------------------


def _extract(message: Message, text: str, index: int) -> Iterator[Candidate]:
    clean = _ANSI.sub("", text)
    urls = _PATTERNS[0][1]
    masked = urls.sub(lambda m: " " * len(m.group(0)), clean)  # no paths or ids inside URLs
    for category, pattern in _PATTERNS:
        for match in pattern.finditer(clean if pattern is urls else masked):
            yield Candidate(match.group(0).rstrip(".,;:)"), category, index)
    for match in _ERROR_LINE.finditer(clean):
        line = match.group(1)
        if 16 <= len(line) <= 200:
            yield Candidate(line, "error", index)
    if message.role == "assistant":
        for match in _BACKTICK.finditer(clean):
            quoted = match.group(1).strip()
            if quoted.split(" ", 1)[0] in _PROGRAMS:
                yield from _commands(quoted, index)
        for call in message.tool_calls:
            yield from _call_candidates(call.arguments, index)


def _call_candidates(arguments: str, index: int) -> Iterator[Candidate]:
    try:
        args = json.loads(arguments)
    except (ValueError, RecursionError):
        return
    if not isinstance(args, dict):
        return
    for key, value in args.items():
        if not isinstance(value, str):
            continue
        if key.lower() in _COMMAND_KEYS:
            yield from _commands(value, index)
        elif 5 <= len(value) <= 120:
            yield Candidate(value.strip(), "argument", index, key.lower())


def _commands(text: str, index: int) -> Iterator[Candidate]:
    """Simple commands of a shell line (split at ``&&``, ``;``, pipes), as typed."""
    for line in text.splitlines()[:3]:
        for segment in _SPLIT_COMMAND.split(line):
            segment = segment.strip()
            if 8 <= len(segment) <= 160 and " " in segment and segment[0].isalnum():
                yield Candidate(segment, "command", index)


def _round_index(messages: Sequence[Message]) -> dict[int, int]:
    out: dict[int, int] = {}
    for r in rounds(messages):
        for i in r.indices:
            out[i] = r.index
    return out


def _evidence(
    cand: Candidate,
    messages: Sequence[Message],
    indexes: Sequence[TextIndex],
    round_of: dict[int, int],
    max_evidence: int,
) -> tuple[tuple[int, ...], str]:
    """(every message holding the answer, "") or ((), why the answer is not local and verbatim)."""
    found: list[int] = []
    for i, idx in enumerate(indexes):
        if idx.has(cand.answer):
            if messages[i].role == "system":
                return (), "in the system prompt"
            found.append(i)
            if len(found) > max_evidence:
                return (), f"not local: in more than {max_evidence} messages"
    if cand.index not in found:
        return (), "not found again after normalisation"
    spread = {round_of.get(i, -1) for i in found}
    if max(spread) - min(spread) > 1:
        return (), "repeated far apart (more than two adjacent rounds)"
    if cand.answer not in message_search_text(messages[cand.index]):
        return (), "not verbatim (found only after normalising quotes or escapes)"
    return tuple(found), ""


def _next_candidate(
    queues: dict[str, list[Candidate]],
    taken: dict[str, int],
    chosen: list[tuple[Candidate, tuple[int, ...]]],
    messages: Sequence[Message],
    indexes: Sequence[TextIndex],
    round_of: dict[int, int],
    max_evidence: int,
    skip: Callable[[Candidate, str], None],
) -> tuple[Candidate, tuple[int, ...]] | None:
    """The best remaining candidate of the least-mined category (diverse probes, not twelve
    error lines), with its evidence; candidates that fail the checks are dropped on the way."""
    while True:
        live = [cat for cat, queue in queues.items() if queue]
        if not live:
            return None
        category = min(live, key=lambda cat: (taken.get(cat, 0), -CATEGORIES[cat][2], cat))
        cand = queues[category].pop(0)
        other = next((c for c, _ in chosen if _overlaps(cand.answer, c.answer)), None)
        if other is not None:
            skip(cand, f"overlaps the probe {other.answer!r}")
            continue
        if sum(1 for c, _ in chosen if c.index == cand.index) >= MAX_PER_MESSAGE:
            skip(cand, f"its message already has {MAX_PER_MESSAGE} probes")
            continue
        evidence, reason = _evidence(cand, messages, indexes, round_of, max_evidence)
        if evidence:
            return cand, evidence
        skip(cand, reason)


def _overlaps(a: str, b: str) -> bool:
    return a in b or b in a


# -- probes -------------------------------------------------------------------------------------

_ROLE_NAMES = {
    "assistant": "the agent's message",
    "tool": "a tool result",
    "user": "a user message",
}


def _probe(
    n: int,
    cand: Candidate,
    evidence: tuple[int, ...],
    texts: Sequence[str],
    messages: Sequence[Message],
) -> Probe:
    kind, noun, _ = CATEGORIES[cand.category]
    message = messages[cand.index]
    where = (
        "an observation" if message.is_observation else _ROLE_NAMES.get(message.role, "a message")
    )
    text = texts[cand.index]
    at = text.find(cand.answer)
    left = " ".join(text[max(0, at - 60) : at].split())
    right = " ".join(text[at + len(cand.answer) : at + len(cand.answer) + 60].split())
    question = f"Which {noun} appeared in {where} (message {cand.index}): “…{left} ___ {right}…”?"
    return Probe(
        id=f"mined-{n}",
        kind=kind,
        question=question,
        answers=(cand.answer,),
        evidence=evidence,
        ask_at=None,
        meta={"mined": cand.category, "source_message": cand.index},
    )
