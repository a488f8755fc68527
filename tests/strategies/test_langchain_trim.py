"""langchain_trim: LangChain trim_messages semantics, one test per rule."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxbench.counting import get_counter
from ctxbench.errors import ConfigError
from ctxbench.pairing import pairing_violations
from ctxbench.strategies import build_strategy
from ctxbench.strategies.langchain_trim import (
    LangChainTrimConfig,
    approximate_tokens,
    default_text_splitter,
    make_pair_safe,
    trim_messages,
)
from ctxbench.trace import Message, ToolCall, Trace
from tests.factories import tool_round, tool_trace
from tests.replaying import compactions, run

CHARS4 = get_counter("chars4")
COUNT = CHARS4.count_message


def chat(n: int, size: int = 40) -> list[Message]:
    msgs = [Message("system", "s" * 40)]
    msgs += [Message("user" if i % 2 == 0 else "assistant", f"{i}" * size) for i in range(n)]
    return msgs


def trim(messages: list[Message], max_tokens: int, **kwargs: Any) -> list[Message]:
    options: dict[str, Any] = {
        "strategy": "last",
        "include_system": True,
        "start_on": (),
        "end_on": (),
        "allow_partial": False,
    }
    options.update(kwargs)
    return trim_messages(messages, max_tokens=max_tokens, count=COUNT, **options)


def test_defaults() -> None:
    cfg = LangChainTrimConfig()
    assert (cfg.strategy, cfg.allow_partial, cfg.start_on, cfg.end_on) == ("last", False, (), ())
    assert cfg.max_tokens is None and cfg.include_system is False
    assert cfg.token_counter == "approximate"  # LangChain's count_tokens_approximately


@given(st.integers(0, 12), st.integers(0, 200))
def test_last_keeps_the_longest_suffix_within_max_tokens(n: int, max_tokens: int) -> None:
    msgs = chat(n)[1:]
    kept = trim(msgs, max_tokens)
    assert kept == msgs[len(msgs) - len(kept) :]
    assert sum(map(COUNT, kept)) <= max_tokens
    if len(kept) < len(msgs):
        assert sum(map(COUNT, msgs[len(msgs) - len(kept) - 1 :])) > max_tokens


def test_include_system_keeps_the_system_message_and_subtracts_its_tokens() -> None:
    msgs = chat(6)  # every message is 10 tokens
    kept = trim(msgs, 30)
    assert kept[0].role == "system" and len(kept) == 3
    assert trim(msgs, 30, include_system=False) == msgs[-3:]


def test_end_on_pops_trailing_messages_of_other_types() -> None:
    msgs = chat(5)  # ends on a user message
    kept = trim(msgs, 1000, end_on=("ai",))
    assert kept == msgs[:-1]


def test_start_on_drops_the_oldest_kept_messages_until_that_type() -> None:
    msgs = chat(6)
    kept = trim(msgs, 40, start_on=("human",))  # 3 fit after the system: ai, human, ai
    assert kept == [msgs[0], *msgs[-2:]]


def test_first_keeps_the_longest_prefix() -> None:
    msgs = chat(6)
    kept = trim(msgs, 35, strategy="first", include_system=False)
    assert kept == msgs[:3]


def test_allow_partial_cuts_the_boundary_message_at_newlines() -> None:
    lines = Message("user", "".join(f"line {i:02d}\n" for i in range(10)))  # 8 chars a line
    msgs = [lines, Message("assistant", "a" * 40)]
    last = trim(msgs, 14, include_system=False, allow_partial=True)
    assert last[0].content == "line 08\nline 09\n"
    first = trim([lines], 4, strategy="first", include_system=False, allow_partial=True)
    assert first[0].content == "line 00\nline 01\n"
    assert default_text_splitter("a\nb") == ["a\n", "b"]


@pytest.mark.parametrize(
    "params",
    [
        {"strategy": "first", "include_system": True},
        {"strategy": "first", "include_system": False, "start_on": ["human"]},
        {"end_on": ["user"]},
    ],
)
def test_options_langchain_rejects_are_config_errors(params: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        build_strategy("langchain_trim", params)


def test_an_unsafe_start_moves_forward_past_tool_results() -> None:
    msgs = [Message("system", "s"), *tool_round(0, calls=3), Message("user", "u")]
    cut = [msgs[0], *msgs[3:]]  # starts on the second parallel result
    assert make_pair_safe(cut) == [msgs[0], msgs[-1]]


def test_with_repair_pairs_parallel_pairs_stay_whole_in_a_replay() -> None:
    out = run(tool_trace(12, calls=3, output="x" * 200), "langchain_trim", 2_000, repair_pairs=True)
    assert compactions(out)
    assert pairing_violations(out.final_view) == 0 and out.result.pairing_violations == 0
    assert out.result.failed_calls == 0


def test_by_default_a_trim_that_cuts_a_pair_is_rejected_by_the_provider() -> None:
    """langchain-core 1.8.3 trim_messages sends a cut parallel batch; OpenAI refuses it."""
    out = run(tool_trace(12, calls=3, output="x" * 200), "langchain_trim", 2_000)
    rejected = [e for e in out.events if e.type == "call.failed" and e["kind"] == "pairing"]
    assert rejected and out.result.failed_calls == len(rejected)
    errors = [e["error"] for e in out.events if e.type == "provider.call" and not e["ok"]]
    assert all("must be a response to a preceeding message with 'tool_calls'" in t for t in errors)
    assert out.result.overflow_errors == 0, "a pairing rejection is not an overflow"


def test_the_partial_search_counts_candidate_lines_in_reversed_order() -> None:
    """``_first_max_tokens`` counts ``"".join(reversed_lines[:mid])`` for strategy="last"; a
    counter that is not additive over lines (here: one token per line break that starts a
    line with ``x``) keeps a different number of lines than counting them in order."""

    def count(message: Message) -> int:
        text = message.content
        return len(text) // 4 + text.count("\nx")

    body = "".join(f"x{i:02d}\n" if i % 2 else f"y{i:02d}\n" for i in range(12))
    msgs = [Message("assistant", body)]
    kept = trim_messages(
        msgs,
        max_tokens=11,
        count=count,
        strategy="last",
        include_system=False,
        start_on=(),
        end_on=(),
        allow_partial=True,
    )
    lines = body.splitlines(keepends=True)
    assert kept[-1].content == "".join(lines[-8:]), "8 lines fit when counted reversed"
    room = 11
    assert count(Message("assistant", "".join(reversed(lines[-8:])))) <= room
    assert count(Message("assistant", "".join(lines[-8:]))) > room, "in order only 7 would fit"


def test_the_prompt_is_trimmed_again_from_the_full_history_every_call() -> None:
    msgs = chat(6)
    msgs.append(Message("assistant", "end"))
    trace = Trace("c", (msgs[0], *msgs[1:7]))
    out = run(trace, "langchain_trim", 100_000, end_on=["ai"])
    contents = [m.content for m in out.final_view]
    assert msgs[1].content in contents and msgs[3].content in contents  # user turns come back


def test_the_default_counter_is_langchain_count_tokens_approximately() -> None:
    """langchain-core 1.8.3 ``count_tokens_approximately([m])``, measured on the release:
    HumanMessage("abcd") 5, ToolMessage("x", tool_call_id="abc") 5, AIMessage("", tool_calls=
    [{"id": "a", "name": "b", "args": {"x": 1, "y": [1.0, "é", None, True]}}]) 29 (the repr of
    the parsed call), AIMessage("hi") 6 (no calls: nothing but text and role)."""
    call = ToolCall("a", "b", '{"x": 1, "y": [1.0, "\\u00e9", null, true]}')
    assert approximate_tokens(Message("user", "abcd")) == 5
    assert approximate_tokens(Message("tool", "x", tool_call_id="abc")) == 5
    assert approximate_tokens(Message("assistant", "", tool_calls=(call,))) == 29
    assert approximate_tokens(Message("assistant", "hi")) == 6
    # reasoning fields are not a LangChain message's content; chars4 counts them
    thinking = Message("assistant", "hi", replay={"reasoning_content": "r" * 400})
    assert approximate_tokens(thinking) == 6 < COUNT(thinking)
    # arguments that are no JSON object are wrapped as LangChain's driver wraps them
    free = Message("assistant", "", tool_calls=(ToolCall("a", "b", "*** Begin Patch"),))
    assert approximate_tokens(free) == 3 + -(-len("assistant" + repr(
        [{"name": "b", "args": {"input": "*** Begin Patch"}, "id": "a", "type": "tool_call"}]
    )) // 4)  # fmt: skip


def test_a_text_action_run_is_trimmed_where_langchain_counts_it_over() -> None:
    """Many short user observations: chars4 (no role, no 3 a message) counts the prompt under
    the budget where LangChain's counter counts it over, and sends it untrimmed."""
    msgs = [Message("system", "s" * 40), Message("user", "task " * 40)]
    for i in range(40):
        msgs += [
            Message("assistant", f"```bash\nls {i}\n```"),
            Message("user", f"<output>{i}</output>"),
        ]
    approx = sum(map(approximate_tokens, msgs))
    chars4 = sum(map(COUNT, msgs))
    budget = (approx + chars4) // 2
    assert chars4 <= budget < approx
    trace = Trace("t", (*msgs, Message("assistant", "done")))
    assert compactions(run(trace, "langchain_trim", 100_000, max_tokens=budget))
    assert not compactions(
        run(trace, "langchain_trim", 100_000, max_tokens=budget, token_counter="estimator")
    )
