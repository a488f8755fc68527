"""Where a trace's tokens go: roles sum the per-message counts, classes count the text segments,
and framing is the rest."""

from __future__ import annotations

import json

import pytest

from ctxbench.counting import get_counter
from ctxbench.counting.breakdown import (
    Breakdown,
    breakdown,
    chars_by_class,
    classes_of,
    text_segments,
)
from ctxbench.trace import Message, ToolCall, Trace

CALL = ToolCall(
    "c1", "query", json.dumps({"sql": "SELECT region, SUM(revenue) FROM sales GROUP BY region"})
)
TRACE = Trace(
    "t",
    (
        Message("system", "You are a data analyst."),
        Message("user", "Revenue by region for 2024?"),
        Message(
            "assistant", "", tool_calls=(CALL,), replay={"reasoning_content": "Group by region."}
        ),
        Message(
            "tool",
            " region | revenue\n--------+--------\n EU     | 10\n US     | 20\n",
            tool_call_id="c1",
        ),
        Message("assistant", "EU 10, US 20."),
    ),
)


def test_segments_are_content_call_arguments_and_replay_text() -> None:
    assert list(text_segments(TRACE.messages[2])) == [CALL.arguments, "Group by region."]


def test_roles_sum_the_per_message_counts_and_classes_the_segments() -> None:
    counter = get_counter("tiktoken:o200k_base")
    b = breakdown(TRACE, counter)
    assert b.by_role["assistant"] == counter.count_message(
        TRACE.messages[2]
    ) + counter.count_message(TRACE.messages[4])
    assert b.by_class["json"] == counter.count(CALL.arguments)
    assert b.by_class["tables"] == counter.count(TRACE.messages[3].content)
    assert b.total == counter.count_prompt(TRACE.messages) == b.incremental
    assert b.framing == b.total - sum(b.by_class.values()) > 0


def test_chars_by_class_is_counter_independent() -> None:
    chars = chars_by_class(classes_of(TRACE))
    assert sum(chars.values()) == sum(len(s) for m in TRACE.messages for s in text_segments(m))
    assert list(chars) == [
        c for c in ("prose", "code", "json", "logs", "tables", "cjk") if c in chars
    ]


def test_breakdowns_of_one_counter_add_up() -> None:
    b = breakdown(TRACE, get_counter("chars4"))
    total = b + b
    assert total.total == 2 * b.total
    assert total.by_role == {k: 2 * v for k, v in b.by_role.items()}
    with pytest.raises(ValueError, match="cannot add"):
        _ = b + Breakdown("other", 0, 0)
