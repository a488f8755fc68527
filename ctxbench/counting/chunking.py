"""Cutting huge strings into pieces that tokenize to the same total as the whole.

Tokenizers are fast on ordinary text but not on every input: tiktoken's regex overflows its
stack on about a million spaces followed by a letter (a Rust panic, not a Python error), and
Hugging Face tokenizers spend seconds on one multi-megabyte string while a batch of pieces
runs in parallel. Agent traces do hold such strings (a dumped log, a minified bundle), so
counters cut long texts with :func:`chunks`.

Where it cuts matters for exactness. Every pre-tokenizer ctxbench ships (cl100k, o200k,
tekken, Llama 3, Qwen 2.5, DeepSeek V3) splits text with a regex into pieces and encodes each
piece on its own, so cutting where a piece always ends leaves the count unchanged. Two such
places, checked against each pattern and tested on random text:

- right after a newline that is followed by a character other than a space or ``/`` (no
  pattern lets a piece run from a newline into such a character; o200k and tekken let
  punctuation swallow the newlines *and slashes* that follow it, as in ``".\n/"``);
- at a space between two letters (``" word"`` is a piece of its own in every pattern).

Only when a window of ``limit`` characters has neither (5 MB of spaces, a base64 blob) is the
text cut at the limit, which can move the total by a token or so per cut.

The same places let a counter count a long text in :func:`segments` and remember each
segment's count: a text that grows (DB-GPT 0.8.2's system prompt gains a line of task progress
at every step) is then tokenized only where it changed, not again whole at every call.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable

from ctxbench.memo import ContentMemo

#: Longest piece handed to a tokenizer in one call; well under the run length that overflows
#: tiktoken's regex stack, and long enough that ordinary messages are never cut.
CHUNK_CHARS = 65_536


def is_safe_cut(text: str, i: int) -> bool:
    """Whether every pre-tokenizer ends a piece at position ``i`` (the rule in the module docstring)."""
    if not 0 < i < len(text):
        return False
    if text[i - 1] == "\n" and not text[i].isspace() and text[i] != "/":
        return True
    return text[i] == " " and text[i - 1].isalpha() and i + 1 < len(text) and text[i + 1].isalpha()


def _safe_cut(text: str, lo: int, hi: int) -> int | None:
    """The last position in ``(lo, hi]`` where :func:`is_safe_cut` holds, preferring a newline."""
    cut = text.rfind("\n", lo, hi)
    while cut != -1:
        if is_safe_cut(text, cut + 1):
            return cut + 1
        cut = text.rfind("\n", lo, cut)
    cut = text.rfind(" ", lo + 1, hi)
    while cut != -1:
        if is_safe_cut(text, cut):
            return cut
        cut = text.rfind(" ", lo + 1, cut)
    return None


def chunks(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut where tokenization is unaffected."""
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    start = 0
    while len(text) - start > limit:
        hi = start + limit
        cut = _safe_cut(text, start + limit // 2, hi) or hi
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


#: texts longer than this are counted segment by segment (:func:`count_in_segments`)
SEGMENTED_FROM = 4096


def segments(text: str, *, least: int = 2048, most: int = 8192, one_in: int = 8) -> list[str]:
    """``text`` cut after lines chosen by their own text, at places :func:`is_safe_cut` allows:
    a segment of at least ``least`` characters ends after a line whose hash is divisible by
    ``one_in``, and one of ``most`` at the next safe place. The cuts depend only on the lines
    around them, so a text that grows in the middle or at the end keeps its segments but the
    one that changed. The hash is CRC-32, the same in every process: a segment longer than
    :data:`CHUNK_CHARS` with no safe place in it is cut at the limit, which can move its count
    by a token, so the segments (and with them that count) must not depend on the process
    (Python's salted ``hash`` made one prompt 73,562 tokens in one process and 73,563 in
    another)."""
    if not 0 < least <= most:
        raise ValueError(f"segments need 0 < least <= most, got least={least}, most={most}")
    out: list[str] = []
    start = 0
    end = text.find("\n", start + least - 1) + 1  # the first place a segment may end
    while 0 < end < len(text):
        following = text[end]
        if not (following.isspace() or following == "/"):  # a safe place
            line = text[text.rfind("\n", 0, end - 1) + 1 : end - 1]
            if (
                end - start >= most
                or zlib.crc32(line.encode("utf-8", "surrogatepass")) % one_in == 0
            ):
                out.append(text[start:end])
                start = end
                end = text.find("\n", start + least - 1) + 1
                continue
        end = text.find("\n", end) + 1
    out.append(text[start:])
    return out


#: where a counter that asks for it (:func:`count_in_segments`' ``lines_from``) counts a text
#: line by line: shorter texts are one tokenizer call, longer ones up to
#: :data:`SEGMENTED_FROM` are cut at every safe place after a newline
LINES_FROM = 256


#: how far into its first line :func:`lines` looks for a safe place between two words
HEAD_WORDS = 512


def _word_cut(text: str, hi: int) -> int | None:
    """The first safe place between two words before ``hi`` (None: there is none)."""
    at = text.find(" ", 1, hi)
    while at != -1:
        if is_safe_cut(text, at):
            return at
        at = text.find(" ", at + 1, hi)
    return None


def lines(text: str) -> list[str]:
    """``text`` cut after every newline where :func:`is_safe_cut` allows, and at the first safe
    place between two words near its start: a text that differs from another by a prefix or
    its first line (DB-GPT's ``Observation: `` form of a tool result) or by an
    added last line (a system prompt that gains a line of progress at every call) shares all
    its other lines with it."""
    out: list[str] = []
    start = 0
    end = text.find("\n") + 1
    head = _word_cut(text, min(end - 1 if end else len(text), HEAD_WORDS))
    if head is not None:  # a first line told apart by a prefix: "Observation: " + text
        out.append(text[:head])
        start = head
    while 0 < end < len(text):
        following = text[end]
        if not (following.isspace() or following == "/"):
            out.append(text[start:end])
            start = end
        end = text.find("\n", end) + 1
    out.append(text[start:])
    return out


def _by_lines(segment: str) -> list[str]:
    """A segment by :func:`lines` when it is counted whole (no longer than :data:`CHUNK_CHARS`:
    a longer one may be cut at the limit, where a cut changes its count), else as it is."""
    return lines(segment) if len(segment) <= CHUNK_CHARS else [segment]


def count_in_segments(
    text: str,
    count_each: Callable[[list[str]], list[int]],
    memo: ContentMemo[str, int],
    lines_from: int | None = None,
) -> int:
    """The count of ``text`` as the sum of its :func:`segments`' counts, each taken from
    ``memo`` when a text before had that segment; the others are counted in one
    ``count_each`` call (a tokenizer that batches runs them in parallel). A text up to
    :data:`SEGMENTED_FROM` characters is counted whole, or with ``lines_from`` (a tokenizer
    whose calls cost little) line by line (:func:`lines`) from that length on, and a longer
    text's first and last segments line by line too.
    ``count_each`` must count any text cut at a safe place to the same total."""
    if len(text) <= SEGMENTED_FROM:
        if lines_from is None or len(text) <= lines_from:
            return count_each([text])[0]
        parts = lines(text)
    elif lines_from is None:
        parts = segments(text)
    else:  # the first and last segments by lines: a text differs from another at its ends
        parts = segments(text)
        if len(parts) == 1:
            parts = _by_lines(text)
        else:
            parts = [*_by_lines(parts[0]), *parts[1:-1], *_by_lines(parts[-1])]
    known = list(map(memo.peek, parts))
    new = list(dict.fromkeys(p for p, n in zip(parts, known) if n is None))
    counted = dict(zip(new, count_each(new))) if new else {}
    for part, n in counted.items():
        memo.put(part, n, sys.getsizeof(part))
    return sum(counted[p] if n is None else n for p, n in zip(parts, known))
