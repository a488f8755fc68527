"""What makes a mined candidate a poor probe: trivia, boilerplate, values that say nothing.

Each rule returns the reason a candidate is left out (``ctxbench probes mine --why`` prints it).
Measured on recorded traces (mini-swe-agent, SWE-agent, tau-bench, Claude Code), about half of
the facts the locality rule alone kept were such trivia: traceback frames inside installed
packages, diff headers (``a/...``, ``b/...``), documentation links in a tool's output, download
sizes, a regex character class read as an identifier, git branch names, the Bash tool's free-text
``description`` argument, e-mail addresses in a tool result the agent never writes, and generic
HTTP statuses. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ctxbench.probes.needed import PROSE_KEYS
from ctxbench.trace import Trace

if TYPE_CHECKING:
    from ctxbench.probes.mining import Candidate

MIN_LENGTH = 5
#: extracted only to be skipped with a reason (dates and times are trivia)
TRIVIA_CATEGORIES = ("date",)
#: a line shape (digits aside) in this many messages is boilerplate
BOILERPLATE_MESSAGES = 3
_BAD_CHARS = re.compile(r"[\"\\\n\r\t\x00-\x1f]")
_STRUCTURED = re.compile(r"[\d/._@:-]| \w")
_WORD = re.compile(r"\w")

#: commands that set up a shell rather than touch anything (cd /testbed, export X=1, sleep 5)
_GENERIC_COMMANDS = re.compile(
    r"^(?:cd|pwd|clear|exit|true|source|export|sleep|set|unset|echo)\b|^git status\b"
)


_HASH = re.compile(
    r"(?=[0-9]*[a-f])[0-9a-f]{7,64}"
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_DURATION = re.compile(
    r"\d[\d,]*(?:\.\d+)?\s?(?:ms|us|µs|ns|s|sec|secs|seconds|min|mins|minutes|h|hrs|hours|days|ms/op)"
)
#: pieces of regular expressions: character classes, quantified wildcards, groups, escapes
_REGEX = re.compile(
    r"\.\*|\.\+|\[\^|\(\?|\][*+?]|\\[dwsbDWSB]|\{\d+,\d*\}|\[[a-zA-Z0-9]-[a-zA-Z0-9]\]"
)
_DIGITS = re.compile(r"\d+")


def _shape(line: str) -> str:
    """A line with its variable parts blanked: words with digits become #, paths ~."""
    return " ".join("#" if _DIGITS.search(w) else "~" if "/" in w else w for w in line.split())


class Boilerplate:
    """Line shapes (numbers and paths blanked) that repeat across messages, and the tools'
    own text: the numbers in them come from a template, not from the task."""

    def __init__(self, texts: Sequence[str], trace: Trace) -> None:
        seen: dict[str, set[int]] = {}
        for i, text in enumerate(texts):
            for line in text.splitlines():
                shape = _shape(line)
                if "#" in shape:
                    seen.setdefault(shape, set()).add(i)
        self.shapes = {shape for shape, where in seen.items() if len(where) >= BOILERPLATE_MESSAGES}
        self.texts = texts
        #: each message's role, observations counted as tool results
        self.roles = ["tool" if m.is_observation else m.role for m in trace.messages]
        branch = trace.meta.get("gitBranch")
        self.branch = branch if isinstance(branch, str) else None
        self.tools = " ".join(
            f"{t.name} {t.description} {json.dumps(t.parameters)}" for t in trace.tools
        )

    def line_of(self, cand: Candidate) -> str | None:
        """The repeated line shape a number candidate sits in (None: not boilerplate)."""
        if cand.answer in self.tools:
            return "the tool definitions"
        for line in self.texts[cand.index].splitlines():
            if cand.answer in line:
                shape = _shape(line)
                if shape in self.shapes:
                    return f"the line {shape[:60]!r}, repeated in {BOILERPLATE_MESSAGES}+ messages"
        return None


def skip_reason(cand: Candidate, boiler: Boilerplate) -> str | None:
    """Why a candidate makes a poor probe (None: keep it). See the module docstring."""
    answer = cand.answer
    if cand.key in PROSE_KEYS:
        return f"free text the agent wrote (the {cand.key!r} argument)"
    if len(answer) < MIN_LENGTH:
        return f"too short (< {MIN_LENGTH} characters)"
    if _BAD_CHARS.search(answer):
        return "holds quotes, backslashes or control characters (not JSON-safe verbatim)"
    if cand.category in TRIVIA_CATEGORIES:
        return "a date or time: trivia"
    if _HASH.fullmatch(answer):
        return "a hash: trivia"
    if cand.category == "number" and _DURATION.fullmatch(answer.lstrip("$")):
        return "a duration: timings differ from run to run"
    if _REGEX.search(answer) or (cand.category == "identifier" and _CHAR_RANGES.fullmatch(answer)):
        return "a regex fragment"
    reason = _context_reason(cand, boiler)
    if reason:
        return reason
    if cand.category == "argument" and (
        not _STRUCTURED.search(answer) or answer.lower() in ("true", "false", "none", "null")
    ):
        return "a plain word or flag"
    if cand.category == "identifier" and sum(ch.isdigit() for ch in answer) < 2:
        return "a name, not a value (fewer than 2 digits)"  # param_1, py3
    if cand.category == "path" and any(not _WORD.search(part) for part in answer.split("/")[1:-1]):
        return "an elided path"  # .../pkg.deb: not one the agent can use
    if cand.category == "number":
        digits = sum(ch.isdigit() for ch in answer)
        if digits < 3 and "." not in answer:
            return "a small number"
        where = boiler.line_of(cand)
        if where:
            return f"a number in boilerplate ({where})"
    if cand.category == "command" and _GENERIC_COMMANDS.match(answer):
        return "a generic shell command"
    if (
        cand.category == "path"
        and answer.count("/") == 1
        and answer.startswith("/")
        and "." not in answer
    ):
        return "a directory, not a file"  # /tmp, /workspace
    return None


#: ``A-Za-z0-9``, ``a-f0-9``: a character class, not an identifier
_CHAR_RANGES = re.compile(r"[A-Za-z0-9]-[A-Za-z0-9](?:[A-Za-z0-9]-[A-Za-z0-9]|[_-])*")
#: where installed code lives: a traceback frame there is not the task's file
_LIBRARY_PATH = re.compile(
    r"(?:site|dist)-packages/|/lib/python\d|/include/python\d|/usr/(?:lib|local/lib|share|include)/"
    r"|/(?:mini|ana)?conda\d?/(?:pkgs|lib|include)/"
)
_DIFF_HEADER = re.compile(r"^(?:---|\+\+\+|diff --git)\s")
_SIZE = re.compile(r"(?i)\d\s?(?:B|KB|MB|GB|TB|KiB|MiB|GiB|TiB|bytes)$")
_PROGRESS = re.compile(r"(?i)download|upload|fetch|[kmg]i?b/s|\beta\b|\d%\|")
_BRANCH = re.compile(r"(?i)\bbranch\b|checkout\s+-b|switch\s+-c|HEAD\s*->|\borigin/|\bworktree")
_HTTP_STATUS = re.compile(r"\b[1-5]\d\d\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*\b")


def _line_of(text: str, answer: str) -> str:
    at = text.find(answer)
    if at < 0:
        return ""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start : end if end >= 0 else len(text)]


def _context_reason(cand: Candidate, boiler: Boilerplate) -> str | None:
    """Trivia told by where the candidate stands (see the module docstring)."""
    answer = cand.answer
    role = boiler.roles[cand.index]
    line = _line_of(boiler.texts[cand.index], answer)
    if cand.category == "path" or "/" in answer:
        if _LIBRARY_PATH.search(answer):
            return "a path inside installed packages (a traceback frame, not the task's file)"
        if _DIFF_HEADER.match(line.lstrip()):
            return "a diff header"
    if cand.category == "number" and _SIZE.search(answer) and _PROGRESS.search(line):
        return "a download or progress size"
    if cand.category in ("identifier", "argument") and (
        answer == boiler.branch or _BRANCH.search(line)
    ):
        return "a git branch name"
    if role == "tool" and cand.category == "url":
        return "a URL in a tool's output (documentation links the agent does not follow)"
    if role == "tool" and cand.category == "email":
        return "an e-mail address in a tool result that the agent never writes"
    if cand.category == "error" and _HTTP_STATUS.search(answer) and len(answer.split()) <= 6:
        return "a generic HTTP status (the same words in any trace)"
    return None
