"""Chars per token by group and counter, and the chars/4 error (TOKENIZERS.md 4.2)."""

from __future__ import annotations

import pytest

from ctxbench.counting import get_counter
from ctxbench.report.density import ALL, Sample, by_content_class, by_role, density_table, measure
from ctxbench.trace import Message, ToolCall, Trace


def test_density_of_hand_counted_texts() -> None:
    # agentscope counts round(utf-8 bytes / 4): 4 Han characters = 12 bytes = 3 tokens;
    # "abcdefgh" = 8 bytes = 2 tokens.
    agentscope = get_counter("agentscope")
    samples = measure(
        [Trace("t", (Message("user", "你好世界"), Message("assistant", "abcdefgh")))],
        [agentscope],
        lambda text: "cjk" if text == "你好世界" else "prose",
    )
    table = density_table(samples, ["agentscope"], by_content_class)
    cjk, prose, total = (
        table["cjk"]["agentscope"],
        table["prose"]["agentscope"],
        table[ALL]["agentscope"],
    )
    assert (cjk.chars, cjk.tokens, cjk.chars4) == (4, 3, 1)
    assert cjk.chars_per_token == pytest.approx(4 / 3)
    assert cjk.chars4_ratio == pytest.approx(1 / 3)
    assert (prose.chars, prose.tokens, prose.chars4) == (8, 2, 2)
    assert prose.chars4_ratio == 1.0
    assert (total.texts, total.chars, total.tokens, total.chars4) == (2, 12, 5, 3)


def test_groups_keep_first_seen_order_and_end_with_the_total() -> None:
    samples = [
        Sample("tool", "logs", 40, {"c": 20}),
        Sample("user", "prose", 8, {"c": 2}),
        Sample("tool", "json", 12, {"c": 6}),
    ]
    table = density_table(samples, ["c"], by_role)
    assert list(table) == ["tool", "user", ALL]
    assert table["tool"]["c"].tokens == 26
    assert table[ALL]["c"].chars == 60


def test_measure_reads_tool_call_arguments_and_skips_empty_messages() -> None:
    chars4 = get_counter("chars4")
    call = ToolCall("c1", "bash", '{"cmd": "ls"}')
    trace = Trace("t", (Message("assistant", "", tool_calls=(call,)), Message("user", "")))
    (sample,) = measure([trace], [chars4], lambda _: "code")
    assert sample.role == "assistant"
    assert sample.chars == len('\nbash\n{"cmd": "ls"}'.strip("\n"))


def test_a_group_without_tokens_has_no_ratio() -> None:
    table = density_table([], ["c"], by_role)
    assert table[ALL]["c"].chars_per_token is None
    assert table[ALL]["c"].chars4_ratio is None
