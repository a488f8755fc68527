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
at every step) is then tokenized only where it changed, not again whole at every call, and
(:func:`grown_segments`) cut again only from where it changed.

tiktoken's two patterns (cl100k, o200k) also end a piece between a letter or digit and a
whitespace character, and between ASCII punctuation and a space (:func:`is_safe_line_cut`).
The tiktoken counters count line by line (:func:`lines`: after each safe newline, after a
text's first words, before its last words), every cut decided by the characters around it,
so a text that holds another (a summary prompt's ``[tool]: `` + a message + ``\n``) shares
that text's inner lines; a line missing from the memo is looked up without its first words
and its end (:func:`_count_lines`), so only those are tokenized. Segments longer than
:data:`CHUNK_CHARS` are never cut in lines: where they are cut at the limit stays where it was.
"""

from __future__ import annotations

import re
import sys
import zlib
from collections.abc import Callable, Iterator

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
    for end in _cuts(text, 0, least, most, one_in):
        out.append(text[start:end])
        start = end
    out.append(text[start:])
    return out


def _cuts(text: str, start: int, least: int, most: int, one_in: int) -> Iterator[int]:
    """Where :func:`segments` cuts ``text`` after ``start`` (a place it cut, or 0), in order:
    each cut is decided by the text up to it and the character after it."""
    end = text.find("\n", start + least - 1) + 1  # the first place a segment may end
    while 0 < end < len(text):
        following = text[end]
        if not (following.isspace() or following == "/"):  # a safe place
            line = text[text.rfind("\n", 0, end - 1) + 1 : end - 1]
            if (
                end - start >= most
                or zlib.crc32(line.encode("utf-8", "surrogatepass")) % one_in == 0
            ):
                yield end
                start = end
                end = text.find("\n", start + least - 1) + 1
                continue
        end = text.find("\n", end) + 1


#: the characters of the texts :func:`grown_segments` keeps the segments of (the oldest go
#: first): a few calls' worth of a long run's texts
GROWN_CHARS = 4 * 2**20
#: the segments of the texts :func:`grown_segments` cut last, by their first segment, with
#: each text's length (insertion order: the oldest first)
_GROWN: dict[str, tuple[list[str], int]] = {}
_grown_chars = [0]


def grown_segments(text: str) -> list[str]:
    """:func:`segments` of ``text`` (with its defaults), those it shares with the last text cut
    here that began with the same segment taken from that text's cuts, not found again: a text
    that grows at its end or its tail (DB-GPT 0.8.2's system prompt gains a line of task
    progress before its closing lines at every step) is scanned from where it changed, and a
    text cut again (by a second counter) not at all. A cut of the earlier text stands when
    ``text`` holds the same characters up to it and the one after it (what decided it)."""
    cuts = _cuts(text, 0, 2048, 8192, 8)
    first = next(cuts, None)
    if first is None:
        return [text]
    head = text[:first]
    known = _GROWN.pop(head, None)
    if known is None:
        out, start = [head], first
    else:
        before = known[0]
        out, start = [before[0]], first  # the held first segment: its hash is known
        for i in range(1, len(before) - 1):
            if not text.startswith(before[i], start):
                break
            out.append(before[i])
            start += len(before[i])
        else:
            if text.startswith(before[-1], start) and start + len(before[-1]) == len(text):
                _remember(head, before, len(text), known[1])
                return before  # the same text
        if len(out) > 1 and not text.startswith(before[len(out)][:1], start):
            start -= len(out.pop())  # the character after the last cut differs
        cuts = _cuts(text, start, 2048, 8192, 8)
    for end in cuts:
        out.append(text[start:end])
        start = end
    out.append(text[start:])
    _remember(head, out, len(text), 0 if known is None else known[1])
    return out


def _remember(head: str, parts: list[str], size: int, forgotten: int) -> None:
    """Keep ``parts`` (of a text of ``size`` characters) under ``head`` in :data:`_GROWN`, in
    place of an entry of ``forgotten`` characters, and forget the oldest over the limit (a
    text longer than the limit is not kept)."""
    _grown_chars[0] -= forgotten
    if size > GROWN_CHARS:
        return
    _grown_chars[0] += size
    _GROWN[head] = (parts, size)
    while _grown_chars[0] > GROWN_CHARS:
        _grown_chars[0] -= _GROWN.pop(next(iter(_GROWN)))[1]


#: where a counter that asks for it (:func:`count_in_segments`' ``lines_from``) counts a text
#: line by line: shorter texts are one tokenizer call, longer ones up to
#: :data:`SEGMENTED_FROM` are cut at every safe place after a newline
LINES_FROM = 256


#: how far into its first line :func:`lines` looks for a place to cut its first words off
HEAD_WORDS = 512

#: what tiktoken's patterns never join to a space that follows (see :func:`is_safe_line_cut`)
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def is_safe_line_cut(text: str, i: int) -> bool:
    """Whether tiktoken's encodings (cl100k, o200k) end a piece at ``i``: where
    :func:`is_safe_cut` allows, and also

    - between a letter or digit and a whitespace character: a letter is only ever in a word
      piece (cl100k's contractions end in one too; the optional character a word piece starts
      with is not a letter), a digit only in a run of digits, and neither takes whitespace
      after it;
    - between ASCII punctuation and a space: punctuation is in a punctuation run, which ends
      at a space (o200k's takes only newlines and slashes after it), or starts a word piece,
      which needs a letter after it.

    Either way a piece ends at ``i``, and the pieces from ``i`` on read nothing before it (no
    pattern looks behind), so ``text[:i]`` and ``text[i:]`` tokenize to the pieces of
    ``text``. Only the counters that count line by line (``lines_from``: the tiktoken ones)
    cut there; other pre-tokenizers are not held to it."""
    if not 0 < i < len(text):
        return False
    after, before = text[i], text[i - 1]
    if after.isspace() and before.isalnum():
        return True
    return (after == " " and before in _PUNCTUATION) or is_safe_cut(text, i)


def _ends_word(text: str, at: int) -> bool:
    """Whether the space at ``at`` follows a letter, a digit or punctuation: a place
    :func:`is_safe_line_cut` allows."""
    before = text[at - 1]
    return before.isalnum() or before in _PUNCTUATION


def _heads(text: str, hi: int, most: int) -> list[int]:
    """The first ``most`` places before ``hi`` where a space follows a letter, a digit or
    punctuation (:func:`is_safe_line_cut`)."""
    out: list[int] = []
    at = text.find(" ", 1, hi)
    while at != -1 and len(out) < most:
        if _ends_word(text, at):
            out.append(at)
        at = text.find(" ", at + 1, hi)
    return out


def _last_words(text: str, hi: int) -> int | None:
    """The last place before ``hi`` and within :data:`HEAD_WORDS` of it where a space follows a
    letter, a digit or punctuation (:func:`is_safe_line_cut`), if any."""
    lo = max(0, hi - HEAD_WORDS)
    at = text.rfind(" ", lo + 1, hi)
    while at != -1:
        if _ends_word(text, at):
            return at
        at = text.rfind(" ", lo + 1, at)
    return None


def _tail(text: str) -> int:
    """Where the whitespace that ends ``text`` starts when a letter or digit precedes it (else
    the text's length): a text's last line ends its text, and a text that holds it (a
    transcript) follows it with a newline, so that line is cut there."""
    if not text[-1:].isspace():
        return len(text)
    end = len(text) - 1 if text[-2:-1].isalnum() else len(text.rstrip())  # mostly "word\n"
    return end if 0 < end < len(text) and text[end - 1].isalnum() else len(text)


#: a newline after which :func:`is_safe_cut` allows a cut: one followed by a character other
#: than whitespace (``\s`` is :meth:`str.isspace`, code point for code point) or ``/``
_LINE_END = re.compile(r"\n(?![\s/])")


def lines(text: str, *, head: bool = True) -> list[str]:
    """``text`` cut after every newline where :func:`is_safe_cut` allows, (``head``) after its
    first words (the first space after a letter, a digit or punctuation near its start) and
    before the whitespace that ends it when a letter or digit precedes it, else before its
    last words (:func:`is_safe_line_cut`): a text that differs from another by a prefix or its
    first line (DB-GPT's ``Observation: `` form of a tool result, a transcript's ``[tool]: ``)
    or by an added last line (a system prompt that gains a line of progress at every call)
    shares all its other lines with it."""
    out: list[str] = []
    start = 0
    if head:
        first = text.find("\n")
        if cut := _heads(text, min(first if first != -1 else len(text), HEAD_WORDS), 1):
            out.append(text[: cut[0]])
            start = cut[0]
    ends = [m.end() for m in _LINE_END.finditer(text, start)]  # the newlines found in C
    if ends and ends[-1] == len(text):  # a newline that ends the text stays in its last line
        ends.pop()
    if ends:
        out += [text[a:b] for a, b in zip([start, *ends], ends)]
        start = ends[-1]
    last = text[start:]
    tail = _tail(last)
    if tail == len(last):  # its last words, which a text that holds it may follow with more
        tail = _last_words(last, len(last)) or tail
    if 0 < tail < len(last):
        out += (last[:tail], last[tail:])
    else:
        out.append(last)
    return out


def _by_lines(segment: str, first: bool = True) -> list[str]:
    """A segment by :func:`lines` when it is counted whole (no longer than :data:`CHUNK_CHARS`:
    a longer one may be cut at the limit, where a cut changes its count), else as it is; a
    segment after a text's first is cut at its newlines only (:func:`lines` cuts a text's first
    words off, not every segment's)."""
    if len(segment) > CHUNK_CHARS:
        return [segment]
    return lines(segment, head=first)


#: a line missing from the memo at least this long is looked up without its first words too
#: (:func:`_inners`)
INNER_FROM = 256


def _inners(line: str) -> list[tuple[int, int]]:
    """Where a part of ``line`` that another text may hold begins and ends, at places
    :func:`is_safe_line_cut` allows: before the whitespace that ends it (the last line of a
    text that another one continues, or a transcript's line of a message that ended there)
    and, for a line of :data:`INNER_FROM` characters or more, also after one or two of its
    first words (a transcript's ``[tool]: `` before a message's text), before its first
    newline (a transcript's message followed by its tool calls) and before the last words of
    its first line (a message that ends in punctuation: :func:`lines` cuts its text there)."""
    tail = _tail(line)
    if len(line) < INNER_FROM:
        return [(0, tail)] if tail < len(line) else []
    first = line.find("\n")
    body = first if first != -1 else len(line)
    starts = [0, *_heads(line, min(body, HEAD_WORDS), 2)]
    ends = [len(line), tail]
    if (words := _last_words(line, body)) is not None:
        ends.append(words)
    if first > 0 and line[first - 1].isalnum():
        ends.append(first)
    return [
        (start, end)
        for start in starts
        for end in dict.fromkeys(ends)
        if start < end and (start, end) != (0, len(line))
    ]


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
    whose calls cost little) line by line (:func:`lines`) from that length on (and kept in
    ``memo`` below it: a text that holds it as a line finds it there).

    With ``lines_from``, a longer text's segments missing from the memo are counted line by
    line against the memo too (:func:`_count_lines`), so a text that holds others (a summary
    prompt's transcript of the messages, each ``[role]: `` + its text) costs what is new in it.
    ``count_each`` must count any text cut at a safe place to the same total."""
    if len(text) <= SEGMENTED_FROM:
        if lines_from is None:
            return count_each([text])[0]
        if len(text) <= lines_from:  # kept: a longer text may hold it as a line
            n = memo.peek(text)
            if n is None:
                n = count_each([text])[0]
                memo.put(text, n, sys.getsizeof(text))
            return n
        return sum(_count_lines(lines(text), count_each, memo))
    parts = grown_segments(text)
    known = list(map(memo.peek, parts))
    if lines_from is not None and None in known:
        return _count_segments_by_lines(parts, known, count_each, memo)
    new = list(dict.fromkeys(p for p, n in zip(parts, known) if n is None))
    counted = dict(zip(new, count_each(new))) if new else {}
    for part, n in counted.items():
        memo.put(part, n, sys.getsizeof(part))
    return sum(counted[p] if n is None else n for p, n in zip(parts, known))


def _count_segments_by_lines(
    parts: list[str],
    known: list[int | None],
    count_each: Callable[[list[str]], list[int]],
    memo: ContentMemo[str, int],
) -> int:
    """The sum of ``parts``' counts, those ``known`` from the memo and the others line by line;
    each of those is kept in ``memo`` with its lines."""
    pieces: list[str] = []
    spans: list[tuple[int, int]] = []  # where each missing segment's lines are in ``pieces``
    for i, (part, n) in enumerate(zip(parts, known)):
        if n is None:
            start = len(pieces)
            pieces += _by_lines(part, i == 0)
            spans.append((start, len(pieces)))
    counts = _count_lines(pieces, count_each, memo)
    missing = (part for part, n in zip(parts, known) if n is None)
    total = 0
    for part, (start, end) in zip(missing, spans):
        n = sum(counts[start:end])
        memo.put(part, n, sys.getsizeof(part))
        total += n
    return total + sum(n for n in known if n is not None)


def _count_lines(
    parts: list[str], count_each: Callable[[list[str]], list[int]], memo: ContentMemo[str, int]
) -> list[int]:
    """Each of ``parts``' counts (parts of a text cut at safe places): from ``memo``; else, for
    a line with an inner part (:func:`_inners`) the memo holds, that count plus the counts of
    what is before and after it; else tokenized. The parts tokenized (in one ``count_each``
    call) and the lines counted from their inner part are kept in ``memo``."""
    peek = memo.peek
    known = list(map(peek, parts))
    if None not in known:
        return known  # type: ignore[return-value]
    # a line with an inner part to look up: a long one, or a short one that ends in a letter or
    # digit and a newline after a known line (the last line of a text counted before, which
    # another continues); the usual short line of a new text is tokenized at once
    inner: dict[int, tuple[int, str, str]] = {}  # part's index: inner count, before, after
    for i in [
        i
        for i, (part, n) in enumerate(zip(parts, known))
        if n is None
        and (
            len(part) >= INNER_FROM
            or (i and known[i - 1] is not None and part[-1:] == "\n" and part[-2:-1].isalnum())
        )
    ]:
        part = parts[i]
        for start, end in _inners(part):
            if (found := peek(part[start:end])) is not None:
                inner[i] = (found, part[:start], part[end:])
                break
    tokenize = [p for i, (p, n) in enumerate(zip(parts, known)) if n is None and i not in inner]
    ends: dict[str, int] = {"": 0}
    for _, before, after in inner.values():  # the words and line ends around inner parts
        for piece in (before, after):
            if piece not in ends and (n := peek(piece)) is not None:
                ends[piece] = n
            elif piece not in ends:
                tokenize.append(piece)
    distinct = list(dict.fromkeys(tokenize))
    put = memo.put
    counted = dict(zip(distinct, count_each(distinct))) if distinct else {}
    for part, n in counted.items():
        put(part, n, sys.getsizeof(part))
    ends.update(counted)
    for i, (found, before, after) in inner.items():
        known[i] = n = found + ends[before] + ends[after]
        put(parts[i], n, sys.getsizeof(parts[i]))
    return [counted[p] if n is None else n for p, n in zip(parts, known)]
