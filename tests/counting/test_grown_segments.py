"""``grown_segments``: the segments of a text, those it shares with the last text cut that began
like it taken from that text's cuts. Whatever the texts before, they are :func:`segments` of the
text; a text that grew keeps the earlier text's segments (the same objects) up to where it
changed; what it keeps stays under its limit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.counting import chunking
from ctxbench.counting.chunking import GROWN_CHARS, grown_segments, segments

# lines of the shapes segments cut at (after a newline followed by a character other than a
# space or "/") and do not cut at (a newline before a space, a slash, another newline)
_LINES = ["✅ Step 12: Action=bash | ref: step_012_bash.json\n", "word " * 30 + "\n", "x\n",
          "  indented\n", "/path/to/file\n", "\n", "é\u0301 中文 🚀\n", "{\"k\": 1}", " tail"]  # fmt: skip
_text = st.lists(st.sampled_from(_LINES), min_size=0, max_size=400).map("".join)


@st.composite
def _grown_texts(draw: st.DrawFn) -> list[str]:
    """A text and what it became, step by step: lines added at its end or before its last
    lines, cut short, changed in the middle, or the same again."""
    out = [draw(_text)]
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        text = out[-1]
        at = draw(st.integers(min_value=0, max_value=len(text)))
        more = draw(_text)
        out.append(
            draw(
                st.sampled_from(
                    [text + more, text[:at] + more + text[at:], text[:at], text, more + text]
                )
            )
        )
    return out


@settings(max_examples=300, deadline=None)
@given(_grown_texts())
def test_grown_segments_are_the_segments_of_every_text(texts: list[str]) -> None:
    for text in texts:
        assert grown_segments(text) == segments(text)


def _progress(steps: int) -> Iterator[str]:
    """DB-GPT 0.8.2's system prompt at each step: a line of progress more before its last lines."""
    system = "You are a coding agent. " * 20 + "\n## Task Progress (do NOT repeat completed steps)"
    tail = "\nYou MUST NOT repeat any action already listed above as ✅ completed."
    lines = ""
    for step in range(1, steps + 1):
        lines += f"\n✅ Step {step}: Action=bash | ref: step_{step:03d}_bash.json"
        yield system + lines + tail


def test_a_prompt_that_grows_keeps_the_segments_before_its_last() -> None:
    before: list[str] = []
    for text in _progress(600):
        parts = grown_segments(text)
        assert parts == segments(text)
        if len(before) > 2:  # all but the last two are the earlier text's own strings
            assert all(a is b for a, b in zip(parts[: len(before) - 2], before, strict=False))
        before = parts
    assert len(before) > 10


def test_the_same_text_again_is_the_same_list() -> None:
    text = "".join(_progress(300))
    assert grown_segments(text) is grown_segments(text[:-1] + text[-1])


@pytest.mark.parametrize("size", [GROWN_CHARS // 3, GROWN_CHARS + 1])
def test_what_it_keeps_stays_under_its_limit(size: int) -> None:
    for i in range(8):
        grown_segments(f"{i}\n" + "line of text\n" * (size // 13))
        held = sum(n for _, n in chunking._GROWN.values())
        assert held == chunking._grown_chars[0] <= GROWN_CHARS
