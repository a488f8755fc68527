"""AutoGen model contexts (HeadAndTail, TokenLimited), one test per rule of the source."""

from __future__ import annotations

import pytest

from ctxbench.errors import ConfigError
from ctxbench.pairing import pairing_violations
from ctxbench.strategies import build_strategy
from ctxbench.strategies.autogen import autogen_messages, head_and_tail, pop_middle
from ctxbench.trace import Message, Trace
from tests.factories import tool_round, tool_trace
from tests.replaying import compactions, run


def chat(n: int, size: int = 400) -> list[Message]:
    """``n`` plain messages of ``size`` chars, alternating user and assistant."""
    return [Message("user" if i % 2 == 0 else "assistant", f"{i}:" + "m" * size) for i in range(n)]


def labels(units: list[tuple[Message, ...]]) -> list[str]:
    return [u[0].content.split(":")[0] for u in units]


# -- HeadAndTailChatCompletionContext -----------------------------------------------------------


def test_all_messages_when_head_and_tail_cover_them() -> None:
    units = autogen_messages(chat(5))
    assert head_and_tail(units, 2, 3) == units


def test_head_placeholder_and_tail_with_the_skipped_count() -> None:
    units = autogen_messages(chat(10))
    out = head_and_tail(units, 2, 3)
    assert labels(out[:2]) == ["0", "1"] and labels(out[3:]) == ["7", "8", "9"]
    placeholder = out[2][0]
    assert placeholder.role == "user" and placeholder.name == "System"
    assert placeholder.content == "Skipped 5 messages."


def test_a_trailing_function_call_message_leaves_the_head() -> None:
    msgs = [Message("user", "task"), *tool_round(0), *chat(8)]
    units = autogen_messages(msgs)
    out = head_and_tail(units, 2, 3)  # head = task, function call: the call goes
    assert out[0][0].content == "task"
    assert out[1][0].content == f"Skipped {len(units) - 2 - 3} messages."


def test_a_leading_function_result_message_leaves_the_tail() -> None:
    msgs = [*chat(8), *tool_round(0, calls=2), Message("user", "next")]
    out = head_and_tail(autogen_messages(msgs), 2, 2)  # tail = results, user: the results go
    assert [u[0].role for u in out[3:]] == ["user"]


def test_parallel_results_are_one_message_and_stay_paired() -> None:
    units = autogen_messages(tool_round(0, calls=3))
    assert [len(u) for u in units] == [1, 3]
    out = run(tool_trace(12, calls=3), "autogen_head_tail", 100_000, head_size=3, tail_size=4)
    assert compactions(out)
    assert pairing_violations(out.final_view) == 0 and out.result.pairing_violations == 0


def test_the_system_message_is_kept_and_not_counted() -> None:
    out = run(tool_trace(6), "autogen_head_tail", 100_000, head_size=1, tail_size=2)
    assert out.final_view[0].role == "system"
    assert out.final_view[1].content == "Fix the bug in src/app.py"
    assert out.final_view[2].content.startswith("Skipped ")


def test_tail_size_must_be_positive() -> None:
    with pytest.raises(ConfigError):
        build_strategy("autogen_head_tail", {"tail_size": 0})


# -- TokenLimitedChatCompletionContext ------------------------------------------------------------


def test_pops_the_middle_message_until_within_the_limit() -> None:
    units = autogen_messages(chat(5))
    kept, popped = pop_middle(units, [100] * 5, 350)
    assert labels(kept) == ["0", "1", "4"] and popped == 2  # index 2, then index 2 again


def test_nothing_is_popped_within_the_limit() -> None:
    units = autogen_messages(chat(5))
    assert pop_middle(units, [100] * 5, 500) == (units, 0)


def _six_parallel_rounds() -> Trace:
    msgs = [Message("system", "sys"), Message("user", "task")]
    for i in range(6):
        msgs += tool_round(i, calls=2, output="x" * 400)
    msgs.append(Message("assistant", "done"))
    return Trace("t", tuple(msgs))


def test_with_repair_pairs_orphan_results_are_removed_and_unanswered_calls_stripped() -> None:
    out = run(
        _six_parallel_rounds(), "autogen_token_limited", 100_000, token_limit=700, repair_pairs=True
    )
    assert compactions(out)
    assert pairing_violations(out.final_view) == 0 and out.result.pairing_violations == 0


def test_0_7_5_filters_only_a_leading_result_and_the_provider_rejects_mid_list_orphans() -> None:
    out = run(_six_parallel_rounds(), "autogen_token_limited", 100_000, token_limit=700)
    assert compactions(out) and out.result.pairing_violations > 0
    assert all(m.role != "tool" for m in out.final_view[1:2]), "a leading result message goes"
    kinds = {e["kind"] for e in out.events if e.type == "call.failed"}
    assert kinds == {"pairing"} and out.result.overflow_errors == 0


@pytest.mark.parametrize("head_size", [0, -1])
def test_head_size_must_be_positive_as_in_0_7_5(head_size: int) -> None:
    with pytest.raises(ConfigError, match="head_size must be greater than 0"):
        build_strategy("autogen_head_tail", {"head_size": head_size})


def test_token_limit_none_means_the_model_window() -> None:
    strategy = build_strategy("autogen_token_limited")
    out = run(tool_trace(30, output="x" * 400), "autogen_token_limited", 4_096, reserved=100)
    statuses = [e for e in out.events if e.type == "context.status"]
    assert {e["budget"] for e in statuses} == {4_096}
    assert strategy.config.token_limit is None


def test_the_system_message_is_not_counted_against_the_limit() -> None:
    msgs = [Message("system", "s" * 4000), Message("user", "task"), Message("assistant", "ok")]
    out = run(Trace("s", tuple(msgs)), "autogen_token_limited", 100_000, token_limit=50)
    assert compactions(out) == []
