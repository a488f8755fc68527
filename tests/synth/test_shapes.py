"""Message shapes: each trace has the layout its name promises, and a seed gives one trace."""

from __future__ import annotations

import pytest

from ctxbench.counting import get_counter
from ctxbench.pairing import pairing_violations
from ctxbench.synth.shapes import TASK, shape_names, shape_trace
from ctxbench.trace import Message


def roles(messages: tuple[Message, ...]) -> str:
    return "".join(m.role[0] for m in messages)


@pytest.mark.parametrize("name", shape_names())
def test_a_seed_gives_one_trace_and_another_seed_another(name: str) -> None:
    assert shape_trace(name, 3).to_dict() == shape_trace(name, 3).to_dict()
    assert shape_trace(name, 3).to_dict() != shape_trace(name, 4).to_dict()


@pytest.mark.parametrize("name", shape_names())
def test_every_shape_crosses_the_parity_windows_and_pairs_its_calls(name: str) -> None:
    trace = shape_trace(name)
    tokens = get_counter("tiktoken:o200k_base").count_prompt(trace.messages, trace.tools)
    assert 32_768 < tokens < 65_536  # compacts at 8k-32k, not at 64k
    assert len(trace.call_indices) >= 30
    assert pairing_violations(list(trace.messages)) == 0
    assert trace.messages[-1].role == "assistant"


def test_text_actions_are_assistant_text_and_user_observations() -> None:
    msgs = shape_trace("text_actions").messages
    assert not any(m.tool_calls or m.role == "tool" for m in msgs)
    assert roles(msgs[2:-1]) == "au" * ((len(msgs) - 3) // 2)
    assert all("```bash\n" in m.content for m in msgs if m.role == "assistant")
    assert all(m.content.startswith("<returncode>") for m in msgs[3::2])


def test_consecutive_users_open_the_run_and_end_some_rounds() -> None:
    msgs = shape_trace("consecutive_users").messages
    assert roles(msgs[:3]) == "suu"
    pairs = [i for i in range(3, len(msgs) - 1) if roles(msgs[i - 1 : i + 2]) == "tuu"]
    assert len(pairs) >= 5


def test_the_first_user_message_of_preamble_user_is_not_the_task() -> None:
    msgs = shape_trace("preamble_user").messages
    assert roles(msgs[:3]) == "suu"
    assert msgs[1].content.startswith("<environment_context>") and msgs[2].content == TASK


def test_reasoning_empty_has_reasoning_with_empty_content_with_and_without_calls() -> None:
    msgs = shape_trace("reasoning_empty").messages
    empty = [m for m in msgs if m.role == "assistant" and not m.content and m.replay]
    assert sum(bool(m.tool_calls) for m in empty) >= 20
    only = [i for i, m in enumerate(msgs) if m in empty and not m.tool_calls]
    assert only and all(msgs[i + 1].role == "user" for i in only)


def test_an_unknown_shape_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="text_actions"):
        shape_trace("react")
