"""Hermes' summary prompt by release: 0.19.0 asks one prompt for every session (its preamble
says "the user had credentials present"); the later commit words a session without a user
turn apart (the dominant language of the turns, no user to attribute a request to)."""

from __future__ import annotations

from ctxbench.strategies.hermes.limits import RELEASES
from ctxbench.strategies.hermes.summary import summary_prompt
from ctxbench.trace import Message

TURNS = [Message("assistant", "Read config.py and found the bug at line 45.")]


def prompt(release: str, has_user_turn: bool) -> str:
    rules = RELEASES[release]
    return summary_prompt(
        TURNS,
        previous_summary=None,
        has_user_turn=has_user_turn,
        budget=2000,
        focus_topic=None,
        input_cap=rules.summary_input_cap,
        no_user_prompt=rules.no_user_prompt,
    )


def test_0_19_0_asks_the_same_prompt_with_or_without_a_user_turn() -> None:
    assert prompt("0.19.0", False) == prompt("0.19.0", True)
    assert "Note that the user had credentials present" in prompt("0.19.0", True)
    assert "no user-authored turn" not in prompt("0.19.0", False).lower()


def test_the_later_commit_words_a_session_without_a_user_turn_apart() -> None:
    with_user, without = prompt("0000416b", True), prompt("0000416b", False)
    assert with_user != without
    assert "Note that credentials were present" in with_user
    assert "NO user-authored turn exists in this session" in without
