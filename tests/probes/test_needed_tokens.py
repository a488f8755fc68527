"""The values found in a text (``needed._tokens``) are those of a whole-text search of each
pattern: searching only the runs that hold a pattern's trigger changes nothing but time."""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbench.probes import needed
from ctxbench.probes.needed import _TOKEN_PATTERNS, _keep, _tokens


def whole_text_tokens(text: str) -> Iterator[tuple[str, str]]:
    """The definition: every pattern searched over the whole text (ctxbench before issue 43c)."""
    for category, pattern in _TOKEN_PATTERNS:
        for match in pattern.finditer(text):
            value = match.group(0).rstrip(".,;:)")
            if _keep(value, category):
                yield value, category


#: pieces that sit at every pattern's edges: spaces of every kind (those the window search
#: looks for and those it does not), word characters beyond ASCII, digits beyond ASCII, and
#: the punctuation the lookarounds read
PIECES = (
    "a", "Z", "x7", "42", "3.14", "$12", "$1024", "v2.0.11", "1,024.5", "#", "-", "_", ".", "/", "./", "../", "~/",
    "@", ":", ",", ";", ")", "(", "é", "٣", "ß", " ", "\n", "\t", "\r", "\x0b", "\x1c",
    "\u2028", "\xa0", "\u3000", "http://", "https://h.io/p?q=1", "mia_li_3668", "ZFA04Y",
    "a@b.co", "src/app/x.py", "/repo/tests/t_1.py", "POL-2024-77", "abc#12", "12345#a",
    "site-packages/", "a/b", "b/c.py", "\"", "\\", "'", "ab-12_",
)  # fmt: skip


def texts(min_size: int = 0) -> st.SearchStrategy[str]:
    pieces = st.lists(st.sampled_from(PIECES), min_size=min_size, max_size=120).map("".join)
    return st.one_of(pieces, st.text(alphabet=st.sampled_from("".join(PIECES)), max_size=400))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts())
def test_the_values_of_a_text_are_those_of_a_whole_text_search(text: str) -> None:
    assert list(_tokens(text)) == list(whole_text_tokens(text))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(min_size=60), filler=st.sampled_from((" ", "\n", "\u2028 ", "word ")))
def test_long_texts_searched_in_windows_give_the_same_values(text: str, filler: str) -> None:
    # past the window gap, runs far apart are searched as separate windows
    long = filler * (needed._WINDOW_GAP // len(filler) + 1)
    text = long.join((text, text[::-1], text, ""))
    assert len(text) > needed._WINDOW_GAP
    assert list(_tokens(text)) == list(whole_text_tokens(text))


def test_a_run_far_from_the_last_window_starts_a_window_of_its_own() -> None:
    gap = " " * (2 * needed._WINDOW_GAP)
    text = f"see /repo/a.py{gap}and x/y/b.py{gap}@none {gap}"
    windows = needed._windows(text, needed._TRIGGERS["path"])
    assert [text[a:b].strip() for a, b in windows] == ["/repo/a.py", "x/y/b.py"]
    assert list(_tokens(text)) == [("/repo/a.py", "path"), ("x/y/b.py", "path")]
