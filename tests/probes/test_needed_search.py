"""The needed-value search, held to the definitions it stands for: each pattern is searched
only in the runs of non-space text that can hold a value it keeps, and a message holds a value
as its :class:`~ctxbench.probes.scoring.TextIndex` says, read without one where that is the
same."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxbench.probes.needed import _TOKEN_PATTERNS, _Indexes, _keep, _tokens
from ctxbench.probes.scoring import TextIndex

# pieces the patterns and their triggers treat differently: paths, ids with one or two digits,
# numbers, e-mail addresses, URLs, their neighbours, every kind of space, digits of other scripts
_PIECES = [
    "src/app/main.py", "/testbed/x.py", "./a/b.txt", "ab12", "x1", "ORD-4821", "#42", "a_1_b2",
    "1.25", "$1,200", "3.14159", "v1.2.3", "mia@example.com", "https://x.org/a?b=1", "a", "Z",
    "9", "12", "-", "_", "#", ".", ",", "/", "@", "$", ":", ")", "(", '"', " ", "  ", "\n",
    "\t", "\u00a0", "\u3000", "\x1c", "١٢", "１２", "word", "é", "0" * 40, "x" * 40,
]  # fmt: skip
texts = st.lists(st.sampled_from(_PIECES), max_size=80).map("".join)


def _whole_text(text: str) -> list[tuple[str, str]]:
    """The definition ``_tokens`` replaces: each pattern over the whole text, in pattern order."""
    out = []
    for category, pattern in _TOKEN_PATTERNS:
        for match in pattern.finditer(text):
            value = match.group(0).rstrip(".,;:)")
            if _keep(value, category):
                out.append((value, category))
    return out


@settings(max_examples=800)
@given(texts)
@example("see x1 and ab12 " + "pad " * 20 + "then ORD-4821 and x9")  # runs with one digit between
@example("a" * 40 + " 12")  # two digits after a long run with none
def test_values_are_those_of_the_whole_text(text: str) -> None:
    assert list(_tokens(text)) == _whole_text(text)


# values of every kind a use may have (paths with their tails, ids, mixed case, a command with
# spaces, quotes) and texts around them: quotes, whitespace runs, case, non-ASCII, Greek sigma
_VALUES = [
    "/testbed/astropy/io/x.py", "astropy/io/x.py", "ORD-4821", "Mia_Li_3668", "readme.MD",
    "cd /repo && make test 2>&1", "it's-42", "mia@example.com", "1.25", "Σσ_1", "ΑΣ",
]  # fmt: skip
_AROUND = [
    " ", "  ", "\n", "\t", '"', "'", "`", "“", "”", "«", "x", "_", "-", "/", "a/", ".", ":",
    "İ", "ς", "Σ", "Β", "é", "\u00a0", "ORD", "-4821", "make test", "cd /repo &&", " 2>&1", "MIA_LI_3668",
]  # fmt: skip
held = st.lists(st.sampled_from(_VALUES + _AROUND), max_size=30).map("".join)


@settings(max_examples=1500)
@given(held, st.sampled_from(_VALUES))
@example("see /testbed/astropy/io/x.py.", "astropy/io/x.py")
@example('"ORD-4821"', "ORD-4821")
@example("ΑΣ'Β", "ΑΣ")  # a final sigma before a quote: lower-cased by what follows it
@example("cd /repo  &&  make   test", "cd /repo && make test 2>&1")
def test_a_message_holds_a_value_as_its_text_index_says(text: str, value: str) -> None:
    assert _Indexes([text]).holds(0, value) == TextIndex.of(text).has(value)
