"""Text from data made safe for the CI outputs that quote it (issue 22).

Trace ids, strategy names and error texts come from files. Written as they are, a ``\\x1b`` or
``\\x00`` made ``check --junit`` write XML that does not parse, a newline injected a Markdown
heading (``## ctxbench check: ✅ no regression``) into a failing job summary, backticks broke
out of code spans, raw HTML passed, and a ``results.csv`` cell ``=HYPERLINK(...)`` ran as a
spreadsheet formula. Each writer applies one of these functions to every value from data.
"""

from __future__ import annotations

import re

#: Characters XML 1.0 cannot hold (even escaped), and line breaks of every kind.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ufffe\uffff\ud800-\udfff]")
_BACKTICKS = re.compile("`+")
_PUNCTUATION = re.compile(r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]""")
#: What a spreadsheet reads as the start of a formula (OWASP "CSV injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def visible(char: str) -> str:
    """A control character as the escape a reader can see (``\\x1b``, ``\\u2028``)."""
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold shown as escapes (ElementTree escapes
    the rest: ``<``, ``&``, quotes)."""
    return _NOT_XML.sub(lambda m: visible(m.group()), text)


def one_line(text: str) -> str:
    """``text`` with every control character and line break shown as an escape."""
    return _CONTROL.sub(lambda m: visible(m.group()), text)


def markdown_code(text: str) -> str:
    """``text`` as one inline Markdown code span: on one line, fenced by more backticks than
    it holds in a row (so it cannot close the span), never rendered as HTML or a heading."""
    text = one_line(text)
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_text(text: str) -> str:
    """``text`` as literal Markdown text on one line: every ASCII punctuation character is
    backslash-escaped (CommonMark renders ``\\<`` as ``<``), so no HTML, emphasis, link,
    heading or table break can come out of it."""
    return _PUNCTUATION.sub(lambda m: "\\" + m.group(), one_line(text))


def markdown_cell(text: str) -> str:
    """``text`` as a code span inside a GitHub table cell (``|`` escaped, as GFM requires
    even inside a code span)."""
    return markdown_code(text).replace("|", "\\|")


def csv_cell(value: object) -> object:
    """A CSV value that a spreadsheet shows as text: a string starting like a formula gets a
    leading ``'`` (the quote spreadsheets hide); other values pass."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


__all__ = [
    "csv_cell",
    "markdown_cell",
    "markdown_code",
    "markdown_text",
    "one_line",
    "visible",
    "xml_text",
]
