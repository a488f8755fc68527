"""Shared strategy layers: pair-safe cut points, pair repair, placeholders, the full history."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctxbench.pairing import pairing_violations, rounds
from ctxbench.strategies.layers import (
    FullHistory,
    drop_unpaired,
    safe_end_backward,
    safe_start_forward,
    with_placeholder,
)
from ctxbench.trace import Message, Part
from tests.factories import tool_round, valid_messages


def parallel() -> list[Message]:
    """user, assistant(2 calls), 2 results, assistant(1 call), result."""
    return [Message("user", "go"), *tool_round(0, calls=2), *tool_round(1)]


def test_safe_start_forward_skips_tool_results() -> None:
    msgs = parallel()
    assert safe_start_forward(msgs, 2) == 4
    assert safe_start_forward(msgs, 3) == 4
    assert safe_start_forward(msgs, 1) == 1


def test_safe_end_backward_drops_a_turn_whose_results_would_be_cut() -> None:
    msgs = parallel()
    assert safe_end_backward(msgs, 3) == 1
    assert safe_end_backward(msgs, 2) == 1
    assert safe_end_backward(msgs, 4) == 4


def test_drop_unpaired_removes_orphan_results() -> None:
    msgs = parallel()
    kept = drop_unpaired([msgs[0], *msgs[2:]])
    assert [m.role for m in kept] == ["user", "assistant", "tool"]
    assert pairing_violations(kept) == 0


def test_drop_unpaired_strips_calls_without_results_and_drops_empty_turns() -> None:
    msgs = parallel()
    partial = drop_unpaired(msgs[:3])  # the second parallel result is gone
    assert [c.id for c in partial[1].tool_calls] == ["c0_0"]
    empty = Message("assistant", "", tool_calls=msgs[4].tool_calls)
    assert drop_unpaired([msgs[0], empty]) == [msgs[0]]


@given(valid_messages(), st.data())
def test_drop_unpaired_leaves_no_pairing_violation_after_any_deletion(
    msgs: list[Message], data: st.DataObject
) -> None:
    keep = data.draw(st.lists(st.booleans(), min_size=len(msgs), max_size=len(msgs)))
    cut = [m for m, k in zip(msgs, keep) if k]
    assert pairing_violations(drop_unpaired(cut)) == 0


@given(valid_messages())
def test_drop_unpaired_changes_nothing_in_a_valid_prompt(msgs: list[Message]) -> None:
    assert drop_unpaired(msgs) == msgs


def test_placeholder_keeps_the_observation_prefix_so_rounds_do_not_change() -> None:
    msgs = [
        Message("assistant", "Thought: t\nAction: sql\nAction Input: q"),
        Message("user", "Observation: many rows"),
        Message("assistant", "done"),
    ]
    masked = [msgs[0], with_placeholder(msgs[1], "<MASKED>"), msgs[2]]
    assert masked[1].content == "Observation: <MASKED>"
    assert [r.indices for r in rounds(masked)] == [r.indices for r in rounds(msgs)]


def test_placeholder_drops_media() -> None:
    msg = Message.from_parts("tool", [Part("text", "x"), Part("image_url", data={"u": 1})])
    assert with_placeholder(msg, "gone").parts is None


def test_full_history_collects_what_was_appended_after_the_last_prompt() -> None:
    history = FullHistory()
    first = [Message("user", "a"), Message("assistant", "b")]
    assert history.sync(first) == first
    shorter = [first[1]]  # the strategy's prompt dropped the first message
    history.sent(shorter)
    appended = [*shorter, Message("user", "c")]
    assert history.sync(appended) == [*first, Message("user", "c")]
