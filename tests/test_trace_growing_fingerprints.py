"""``GrowingFingerprints``: a message whose text is a beginning that only grew and then an
ending gets the fingerprint its whole text gives; a message it cannot answer for (other
fields, another length or ending) is left to work out its own."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from ctxbench.trace import GrowingFingerprints, Message, ToolCall

_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)


@given(
    st.sampled_from(["system", "user", "tool", ""]),
    st.none() | _text,
    st.none() | _text,
    st.lists(_text, max_size=6),
    _text,
)
def test_each_message_gets_the_fingerprint_of_its_text(
    role: str, call_id: str | None, name: str | None, pieces: list[str], ending: str
) -> None:
    like = Message(role, tool_call_id=call_id, name=name)
    fingerprints = GrowingFingerprints(like)
    text = ""
    for piece in pieces:
        fingerprints.grow(piece)
        text += piece
        message = fingerprints.give(replace(like, content=text + ending), ending)
        assert vars(message)["fingerprint"] == message._digest()


def test_a_message_it_cannot_answer_for_keeps_its_own() -> None:
    fingerprints = GrowingFingerprints(Message("system"))
    fingerprints.grow("begin")
    others = [
        Message("user", "begin end"),  # another role
        Message("system", "begin  end"),  # another length
        Message("system", "begin.END"),  # another ending
        Message("system", "begin end", tool_calls=(ToolCall("c", "f", "{}"),)),
    ]
    for message in others:
        assert "fingerprint" not in vars(fingerprints.give(message, " end"))
