"""The model-like summarizer's searches, each held to the whole-text regex it stands for: task
ids found only in the words that can hold one, sentences split without a lookbehind, and an
error line's key replaced from as little of the line as gives its characters."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxbench.summarizers.model_like import TASK_ID_RE, digits_as_n, find_task_ids, sentences

# pieces the patterns treat differently: ids, their neighbours (/ . # - word characters),
# every kind of space, digits of other scripts, sentence ends
_PIECES = [
    "PROJ-123", "spotter-a0y.1", "#42", "a-b.1.2", "AB-7", "x", "Z", "9", "-", "#", ".", "/",
    "_", " ", "  ", "\n", "\t", "\u00a0", "\u3000", "\x1c", "١٢", "１２", ". ", "! ", "?",
    "... ", "word", "Twenty chars exactly", "é", "v1.2.3", "#1a", "abc-", "-abc",
]  # fmt: skip
texts = st.lists(st.sampled_from(_PIECES), max_size=60).map("".join)


@settings(max_examples=600)
@given(texts)
def test_task_ids_are_those_of_the_whole_text(text: str) -> None:
    assert find_task_ids(text) == TASK_ID_RE.findall(text)


def _sentences_by_lookbehind(text: str) -> list[str]:
    """The definition ``sentences`` replaces."""
    out = []
    for line in text.splitlines():
        if re.match(r"^\s*\d+(?:→|\t)", line):
            continue
        out += [s for s in re.split(r"(?<=[.!?])\s+", line.strip()) if len(s) > 20]
    return out


@settings(max_examples=600)
@given(texts)
@example("Twenty chars exactly. Twenty chars exactly!")  # 20 characters and the mark
def test_sentences_are_those_split_after_their_marks(text: str) -> None:
    assert list(sentences(text)) == _sentences_by_lookbehind(text)


@settings(max_examples=600)
@given(st.lists(st.sampled_from(["1", "22", "٣", "x", " ", "error", "1234567890" * 3]), max_size=80).map("".join), st.integers(1, 90))  # fmt: skip
def test_an_error_keys_digits_are_replaced_as_in_the_whole_line(text: str, limit: int) -> None:
    assert digits_as_n(text, limit) == re.sub(r"\d+", "N", text)[:limit]
