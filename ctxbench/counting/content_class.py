"""Content classes: what kind of text a message carries, because token density depends on it.

chars/4 is roughly right for English prose and code and badly wrong for JSON, logs, tables and
CJK text (measured in TOKENIZERS.md: 1.1x over for prose, 0.4-0.6x under for logs and tables,
0.3x under for Chinese). ``ctxbench count`` and the drift report break counts down by these
classes so that drift can be traced to what caused it.

:func:`classify` is deterministic and cheap: it looks at the first :data:`SAMPLE_CHARS`
characters only, and checks the classes in this order, the first match winning:

``cjk``
    at least 30% of the non-space characters are Han, kana or Hangul.
``json``
    the text parses as a JSON object or array, or every non-empty line does (JSON Lines), or
    it starts with ``{``/``[`` and at least 5% of its characters are in ``"key":`` patterns
    (JSON cut off by a truncation).
``logs``
    at least half of the non-empty lines look like log lines: a timestamp, a log level word
    (INFO, WARN, ERROR...), an HTTP access-log request, or a Python traceback line.
``tables``
    at least 3 non-empty lines, and at least 80% of the lines that are not ``---+---`` rules
    share the same count of one delimiter inside the line: >= 1 tab, >= 1 ``|`` under such a
    rule (psql, Markdown), else >= 2 of ``|``, comma or ``;`` (for commas and ``;``, fields
    of fewer than 3 words on average: sentences have commas too).
``code``
    at least 30% of the non-empty lines look like code: a keyword at the start (def, class,
    import, return, const, func...), a line ending in ``{ } ;`` or ``)``, a diff hunk or
    ``+``/``-`` line, a shell prompt, or a line dense in ``(){}[]=<>;`` characters.
``prose``
    everything else, including empty text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Literal

ContentClass = Literal["prose", "code", "json", "logs", "tables", "cjk"]
CONTENT_CLASSES: tuple[ContentClass, ...] = ("prose", "code", "json", "logs", "tables", "cjk")

#: Only this many leading characters are examined (classification stays O(1) in the text size).
SAMPLE_CHARS = 20_000

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_JSON_KEY = re.compile(r'"[^"\n]{1,80}"\s*:')
_LOG_LINE = re.compile(
    r"""^\s*(?:
        \[?\d{4}-\d{2}-\d{2}[T\s]\d{2}:\d{2}           # ISO date and time
      | \[?\d{2}:\d{2}:\d{2}                          # time of day
      | [A-Z][a-z]{2}\s+\d{1,2}\s\d{2}:\d{2}:\d{2}    # syslog
      | \[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)\b
      | Traceback\ \(most\ recent\ call\ last\)
      | File\ ".+",\ line\ \d+
      | \w+(?:\.\w+)*(?:Error|Exception):
    )
    | \s(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL)[\s:\]]
    | "(?:GET|POST|PUT|DELETE|PATCH|HEAD)\ \S+\ HTTP/\d
    """,
    re.VERBOSE,
)
_CODE_START = re.compile(
    r"^\s*(?:def|class|import|from|return|if|elif|else|for|while|try|except|finally|with|async|await"
    r"|function|const|let|var|public|private|protected|static|package|func|fn|impl|struct|enum|use"
    r"|#include|#define|using|namespace|template|SELECT|INSERT|UPDATE|CREATE)\b"
)
_CODE_END = re.compile(r"[{};)]\s*$|^\s*[})\]]")
_DIFF_OR_SHELL = re.compile(r"^(?:@@ .* @@|diff --git |[+-](?![+-]{2})\S|\$ \S|>>> )")
_TABLE_RULE = re.compile(r"^\s*\|?[-=:+| ]{3,}\|?\s*$")
_SYMBOLS = set("(){}[]=<>;")


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _is_cjk(sample: str) -> bool:
    visible = sum(1 for ch in sample if not ch.isspace())
    return visible > 0 and len(_CJK.findall(sample)) >= 0.3 * visible


def _is_json(sample: str, complete: bool, lines: Sequence[str]) -> bool:
    stripped = sample.strip()
    if not stripped or stripped[0] not in "{[":
        return False
    if complete:
        try:
            return isinstance(json.loads(stripped), (dict, list))
        except (ValueError, RecursionError):
            pass
        if len(lines) > 1 and all(_parses_as_container(line) for line in lines[:50]):
            return True
    keys = sum(len(m.group(0)) for m in _JSON_KEY.finditer(stripped))
    return keys >= 0.05 * len(stripped)


def _parses_as_container(line: str) -> bool:
    try:
        return isinstance(json.loads(line), (dict, list))
    except (ValueError, RecursionError):
        return False


def _is_logs(lines: Sequence[str]) -> bool:
    return bool(lines) and sum(1 for line in lines if _LOG_LINE.search(line)) >= 0.5 * len(lines)


def _is_table(lines: Sequence[str]) -> bool:
    if len(lines) < 3:
        return False
    rows = [line.strip() for line in lines if not _TABLE_RULE.match(line)]
    has_rule = len(rows) < len(lines)
    for delimiter in ("|", "\t", ",", ";"):
        counts = [row.count(delimiter) for row in rows]
        if not counts:
            continue
        common = max(set(counts), key=lambda c: (counts.count(c), c))
        least = 1 if delimiter == "\t" or (delimiter == "|" and has_rule) else 2
        if common < least or counts.count(common) < 0.8 * len(counts):
            continue
        if delimiter in ",;" and _words_per_field(rows, delimiter) >= 3:
            continue  # sentences with commas, not fields
        return True
    return False


def _words_per_field(rows: Sequence[str], delimiter: str) -> float:
    fields = [f for row in rows for f in row.split(delimiter)]
    return sum(len(f.split()) for f in fields) / max(len(fields), 1)


def _looks_like_code(line: str) -> bool:
    if _CODE_START.match(line) or _CODE_END.search(line) or _DIFF_OR_SHELL.match(line):
        return True
    stripped = line.strip()
    return len(stripped) >= 8 and sum(1 for ch in stripped if ch in _SYMBOLS) >= 0.12 * len(
        stripped
    )


def _is_code(lines: Sequence[str]) -> bool:
    return bool(lines) and sum(1 for line in lines if _looks_like_code(line)) >= 0.3 * len(lines)


def classify(text: str) -> ContentClass:
    """The content class of ``text`` (see the module docstring for the rules)."""
    sample = text[:SAMPLE_CHARS]
    if not sample.strip():
        return "prose"
    if _is_cjk(sample):
        return "cjk"
    lines = _lines(sample)
    if _is_json(sample, len(text) <= SAMPLE_CHARS, lines):
        return "json"
    if _is_logs(lines):
        return "logs"
    if _is_table(lines):
        return "tables"
    if _is_code(lines):
        return "code"
    return "prose"
