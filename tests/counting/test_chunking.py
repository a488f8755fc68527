"""Cutting huge strings: the pieces rebuild the text and stay under the limit, they are cut
where tokenization is unaffected, and every exact counter counts a text cut at such a place
to the same total as the whole. Long texts are counted in segments the text itself chooses:
the same total, and a text that grows is tokenized again only where it grew."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbench.counting import get_counter
from ctxbench.counting.chunking import (
    CHUNK_CHARS,
    LINES_FROM,
    SEGMENTED_FROM,
    chunks,
    count_in_segments,
    is_safe_cut,
    is_safe_line_cut,
    lines,
    segments,
)
from ctxbench.counting.tiktoken_counter import TiktokenCounter
from ctxbench.memo import ContentMemo

EXACT = [
    "tiktoken:cl100k_base",
    "tiktoken:o200k_base",
    "hf:qwen2.5",
    "hf:deepseek-v3",
    "hf:deepseek-v3.1",
    "hf:llama3",
    "mistral:tekken",
]

# Fragments that pre-tokenizers treat differently: words with and without a leading space,
# runs of spaces, tabs, newlines and CRLF, CJK, Cyrillic, combining marks, digit runs,
# punctuation, contractions, JSON, special-token strings, emoji with ZWJ.
_FRAGMENTS = [
    "word", " word", "Word", " ", "  ", "    ", "\n", "\n\n", "\r\n", "\t", "中文", "日本語", "Жж",
    " é\u0301t", "123", "4567", ".", ", ", "!?", "(", ")", '{"k": 1}', "<|im_start|>", "'s",
    "🚀", "👨‍👩‍👧", "==", "/", "//", "./", "\\", "#", "-->", "’", "\u00a0", "\u3000", "１２", "ﬁ",
]  # fmt: skip
texts = st.lists(st.sampled_from(_FRAGMENTS), min_size=2, max_size=120).map("".join)


@given(texts, st.integers(min_value=2, max_value=64))
def test_pieces_rebuild_the_text_and_respect_the_limit(text: str, limit: int) -> None:
    pieces = chunks(text, limit)
    assert "".join(pieces) == text
    assert all(len(p) <= limit for p in pieces)


@given(texts, st.integers(min_value=2, max_value=64))
def test_pieces_are_cut_at_safe_places_unless_a_window_has_none(text: str, limit: int) -> None:
    start = 0
    for piece in chunks(text, limit)[:-1]:
        end = start + len(piece)
        window = range(start + limit // 2 + 1, start + limit + 1)
        assert is_safe_cut(text, end) or (
            end == start + limit and not any(is_safe_cut(text, i) for i in window)
        )
        start = end


def test_short_text_is_one_piece() -> None:
    text = "x" * CHUNK_CHARS
    assert chunks(text) == [text]


def test_a_newline_before_text_is_preferred_to_a_space_between_words() -> None:
    text = "alpha beta\ngamma delta epsilon"
    assert chunks(text, 20) == ["alpha beta\n", "gamma delta epsilon"]


def test_text_with_no_safe_place_is_cut_at_the_limit() -> None:
    assert [len(p) for p in chunks(" " * 100, 40)] == [40, 40, 20]


@pytest.mark.parametrize("spec", EXACT)
@settings(max_examples=80, deadline=None)
@given(text=texts)
def test_a_cut_at_a_safe_place_does_not_change_the_count(spec: str, text: str) -> None:
    counter = get_counter(spec)
    whole = counter.count(text)
    for i in [i for i in range(len(text)) if is_safe_cut(text, i)][:6]:
        assert counter.count(text[:i]) + counter.count(text[i:]) == whole, (text[:i], text[i:])


lined = st.lists(st.sampled_from([*_FRAGMENTS, "\n", "\nline", "\n/x", "\n x"]), max_size=160).map(
    "".join
)


@given(lined, st.integers(min_value=1, max_value=40), st.integers(min_value=1, max_value=4))
def test_segments_rebuild_the_text_and_end_at_safe_places(
    text: str, least: int, one_in: int
) -> None:
    parts = segments(text, least=least, most=4 * least, one_in=one_in)
    assert "".join(parts) == text
    ends = [sum(map(len, parts[: i + 1])) for i in range(len(parts) - 1)]
    assert all(is_safe_cut(text, end) for end in ends)
    assert all(len(p) >= least for p in parts[:-1])


def test_a_long_run_of_lines_is_cut_at_most_characters() -> None:
    text = "".join(f"step {i}\n" for i in range(2000))
    parts = segments(text, least=100, most=400, one_in=10**9)  # no line is chosen by its hash
    assert all(400 <= len(p) < 400 + len("step 1999\n") for p in parts[:-1])


def test_a_text_grown_in_the_middle_keeps_its_other_segments() -> None:
    lines = [f"\u2705 Step {i}: Action=search | ref: step_{i:03d}_search.json" for i in range(400)]
    before = "\n".join(["system prompt", *lines[:300], "Do not repeat."])
    after = "\n".join(["system prompt", *lines[:301], "Do not repeat."])
    old, new = segments(before), segments(after)
    assert new[: len(old) - 1] == old[:-1]  # every segment before the one that grew is kept
    changed = set(new) - set(old)  # the one that grew (in two when the new line ends one)
    assert 1 <= len(changed) <= 2 and sum(map(len, changed)) <= 8192 + 2 * len(lines[300])


@pytest.mark.parametrize("spec", EXACT)
@settings(max_examples=60, deadline=None)
@given(text=lined)
def test_counting_in_segments_gives_the_count_of_the_whole(spec: str, text: str) -> None:
    counter = get_counter(spec)
    each = counter._count_each  # type: ignore[attr-defined]
    parts = segments(text, least=8, most=64, one_in=2)
    assert sum(each(parts)) == each([text])[0]
    long = (text + "\nmore text here ") * (SEGMENTED_FROM // max(len(text), 1) + 2)
    assert counter.count(long) == each([long])[0]


def test_a_grown_text_is_tokenized_only_where_it_grew_in_one_call() -> None:
    tokenized: list[str] = []
    calls: list[int] = []

    def count(texts: list[str]) -> list[int]:
        tokenized.extend(texts)
        calls.append(len(texts))
        return [len(text.split()) for text in texts]

    memo: ContentMemo[str, int] = ContentMemo(limit=2**20)
    lines = [f"line {i} of the progress" for i in range(1000)]
    first = count_in_segments("\n".join(lines[:900]), count, memo)
    tokenized.clear()
    assert len(calls) == 1  # every segment of the first text in one call
    calls.clear()
    second = count_in_segments("\n".join(lines[:901]), count, memo)
    assert second == first + len(lines[900].split())
    assert sum(map(len, tokenized)) < 10_000 < len("\n".join(lines))
    assert calls == [1]


def test_a_short_text_is_counted_whole() -> None:
    seen: list[str] = []

    def count(texts: list[str]) -> list[int]:
        seen.extend(texts)
        return [0] * len(texts)

    text = "word\n" * (SEGMENTED_FROM // 5)
    count_in_segments(text, count, ContentMemo(limit=2**20))
    assert seen == [text]


def test_segments_are_the_same_in_every_process() -> None:
    """Where a segment ends must not depend on the process's hash seed: a segment longer than
    the chunk limit with no safe place in it (a result table whose lines start with spaces) is
    cut at the limit, which can move its count by a token, so the same prompt counted 73,562
    tokens in one process and 73,563 in another while segments were chosen by Python's salted
    ``hash``."""
    import subprocess
    import sys

    script = (
        "from ctxbench.counting.chunking import segments\n"
        "text = ''.join(f'line {i}: step {i * 7 % 13} of the plan\\n' for i in range(4000))\n"
        "print([len(s) for s in segments(text)])\n"
    )
    cuts = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout.strip()
        for seed in (1, 2, 3)
    }
    assert len(cuts) == 1, cuts


@given(lined, st.sampled_from(["", "Observation: ", "Thought: x "]))
def test_lines_rebuild_the_text_and_end_at_safe_places(text: str, prefix: str) -> None:
    parts = lines(prefix + text)
    assert "".join(parts) == prefix + text
    ends = [sum(map(len, parts[: i + 1])) for i in range(len(parts) - 1)]
    assert all(is_safe_line_cut(prefix + text, end) for end in ends)


#: what may follow a newline: whitespace Python's ``str.isspace`` knows beyond ASCII (the file
#: and record separators, NEL, the line and paragraph separators), ``/``, and text
_AFTER_NEWLINE = [
    "\n",
    " ",
    "\t",
    "\x1c",
    "\x1f",
    "\x85",
    "\u2028",
    "\u3000",
    "/",
    "a",
    "1",
    ".",
    "中",
]
after_newlines = st.lists(
    st.sampled_from(_AFTER_NEWLINE).map(lambda c: "\n" + c) | st.sampled_from(_FRAGMENTS),
    min_size=1,
    max_size=60,
).map("".join)


@given(after_newlines, st.booleans())
def test_lines_cut_after_every_newline_that_text_follows(text: str, head: bool) -> None:
    parts = lines(text, head=head)
    assert "".join(parts) == text
    ends = {sum(map(len, parts[: i + 1])) for i in range(len(parts) - 1)}
    safe = {
        i + 1
        for i, ch in enumerate(text[:-1])
        if ch == "\n" and not (text[i + 1].isspace() or text[i + 1] == "/")
    }
    assert safe <= ends  # and the other ends are the first words and the end (at most two)
    assert len(ends - safe) <= 1 + head


@pytest.mark.parametrize("spec", ["tiktoken:o200k_base", "tiktoken:cl100k_base"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=lined, prefix=st.sampled_from(["", "Observation: ", "Action Input: "]))
def test_counting_line_by_line_gives_the_count_of_the_whole(
    spec: str, text: str, prefix: str
) -> None:
    counter = get_counter(spec)
    each = counter._count_each  # type: ignore[attr-defined]
    for whole in (prefix + text, prefix + (text + "\nmore text here ") * 40):
        assert counter.count(whole) == each([whole])[0]


def test_a_text_told_apart_by_its_first_line_or_a_last_line_is_tokenized_there() -> None:
    tokenized: list[str] = []

    def count(texts: list[str]) -> list[int]:
        tokenized.extend(texts)
        return [len(text.split()) for text in texts]

    memo: ContentMemo[str, int] = ContentMemo(limit=2**20)
    body = "".join(f"line {i} of a tool result\n" for i in range(40))
    assert count_in_segments(body, count, memo, LINES_FROM) == len(body.split())
    tokenized.clear()
    observed = "Observation: " + body
    assert count_in_segments(observed, count, memo, LINES_FROM) == len(observed.split())
    assert sum(map(len, tokenized)) < 40  # the first line's head, not the body again
    tokenized.clear()
    grown = body + "line 40 of a tool result"
    assert count_in_segments(grown, count, memo, LINES_FROM) == len(grown.split())
    assert "".join(tokenized) == "line 40 of a tool result"  # the new line, not its text


# -- line by line against the memo: a text that holds others costs what is new in it ----------

TIKTOKEN = ["tiktoken:o200k_base", "tiktoken:cl100k_base"]


def _tiktoken(spec: str) -> TiktokenCounter:
    counter = get_counter(spec)
    assert isinstance(counter, TiktokenCounter)
    return counter


@pytest.mark.parametrize("spec", TIKTOKEN)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=lined)
def test_a_cut_where_tiktoken_ends_a_piece_does_not_change_the_count(spec: str, text: str) -> None:
    encode = _tiktoken(spec).encoding.encode_ordinary
    whole = len(encode(text))
    cuts = [i for i in range(len(text)) if is_safe_line_cut(text, i)]
    for i in cuts[:4] + cuts[-4:]:
        assert len(encode(text[:i])) + len(encode(text[i:])) == whole, (text[:i], text[i:])


# words, JSON, punctuation before spaces and newlines, lines that start with a space or a slash
_WORDS = [
    "alpha", " beta", " gamma.", ", ", ": ", '{"id": 12, "name": "x"}', " 0.25", "\n", "\n\n",
    " \n", "\n  -> call", "\n/tmp", "(x)", " 1999", "é", "中文", "!", " ", "\t", "'s", ".\n",
]  # fmt: skip
_line = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=40).map("".join)
# a message's text: short, or one long line, or many lines (long enough to be counted by lines)
_message = st.one_of(
    _line,
    st.tuples(_line, st.integers(8, 90)).map(lambda p: p[0] * p[1]),
    st.lists(_line, min_size=20, max_size=120).map("\n".join),
)


def _transcript(texts: list[str], roles: list[str]) -> str:
    return "\n".join(f"[{role}]: {text}" for role, text in zip(roles, texts))


@pytest.mark.parametrize("spec", TIKTOKEN)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(_message, min_size=1, max_size=8),
    roles=st.lists(st.sampled_from(["user", "tool", "assistant"]), min_size=8, max_size=8),
    suffix=st.sampled_from(["", "\n", " ", "\n\n[user]: Summarize.", "x", ".\n"]),
)
def test_a_text_that_holds_counted_texts_counts_as_the_whole(
    spec: str, texts: list[str], roles: list[str], suffix: str
) -> None:
    """The definition: the raw tokenizer's count of the whole text, whatever the memo held
    (each message counted first, then texts that hold them: a transcript, a prefixed or
    grown text, two texts joined)."""
    counter = _tiktoken(spec)
    counter.clear_cache()
    encode = counter.encoding.encode_ordinary
    for text in texts:
        assert counter.count(text) == len(encode(text))
    joined = [
        _transcript(texts, roles) + suffix,
        "Observation: " + texts[0] + suffix,
        texts[0] + suffix + texts[-1],
        "".join(texts) + suffix,
        _transcript(texts[::-1], roles) + "\n" + _transcript(texts, roles),
    ]
    for text in joined:
        if len(text) < CHUNK_CHARS:
            assert counter.count(text) == len(encode(text)), text


def test_a_transcript_of_counted_messages_tokenizes_little_of_them() -> None:
    """A summary prompt (each message as ``[role]: text``, then the request) after the
    messages were counted: what is tokenized is their first words and line ends, not them."""
    counter = _tiktoken("tiktoken:o200k_base")
    counter.clear_cache()
    json_line = ", ".join(f'{{"id": {i}, "name": "item{i}", "score": 0.{i}7}}' for i in range(120))
    prose = " ".join(["the quick brown fox jumps over the lazy dog"] * 60)
    lined_ = "\n".join(f"line {i}: ok, checked file_{i}.py" for i in range(200))
    texts = [json_line, prose + " ", lined_ + "\n", prose + "."]
    for text in texts:
        counter.count(text)
    sent: list[str] = []
    count_each = counter._count_each

    def metered(parts: list[str]) -> list[int]:
        sent.extend(parts)
        return count_each(parts)

    counter._count_each = metered  # type: ignore[method-assign,assignment]
    prompt = _transcript(texts, ["tool", "assistant", "tool", "user"]) + "\n\n[user]: Summarize."
    assert counter.count(prompt) == len(counter.encoding.encode_ordinary(prompt))
    assert sum(map(len, sent)) < len(prompt) // 50, sent
