"""Cutting huge strings: the pieces rebuild the text and stay under the limit, they are cut
where tokenization is unaffected, and every exact counter counts a text cut at such a place
to the same total as the whole."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.counting import get_counter
from ctxbench.counting.chunking import CHUNK_CHARS, chunks, is_safe_cut

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
