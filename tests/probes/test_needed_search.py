"""The needed-value search, held to the whole-text regexes it stands for: each pattern is
searched only in the runs of non-space text that can hold a value it keeps."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxbench.probes.needed import _TOKEN_PATTERNS, _keep, _tokens

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
