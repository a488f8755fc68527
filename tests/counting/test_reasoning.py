"""Reasoning as providers bill it: each family's rule for earlier turns' reasoning, and what
`--counter auto` picks for a recorded model."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxbench.calibration import calibrate, cross_validate
from ctxbench.counting import get_counter
from ctxbench.counting.auto import choose, choose_for, pooling_warning
from ctxbench.counting.reasoning import (
    ReasoningCounter,
    kept,
    kept_alone,
    reasoning_text,
    with_reasoning,
    without_reasoning,
)
from ctxbench.errors import ConfigError
from ctxbench.formats.importing import import_file
from ctxbench.trace import Message, ToolCall, Trace


def _call(i: int) -> ToolCall:
    return ToolCall(f"c{i}", "bash", '{"command": "ls"}')


#: turn 1 answers without tools; turn 2 calls a tool, then answers; turn 3 calls a tool.
CONVERSATION = [
    Message("system", "You are an agent."),
    Message("user", "What is 2+2?"),
    Message("assistant", "4.", replay={"reasoning_content": "two plus two is four"}),
    Message("user", "List the files."),
    Message(
        "assistant",
        "",
        tool_calls=(_call(1),),
        replay={"reasoning_content": "I should run ls first"},
    ),
    Message("tool", "a.txt", tool_call_id="c1"),
    Message("assistant", "One file.", replay={"reasoning_content": "the listing shows a.txt"}),
    Message("user", "Again, please."),
    Message(
        "assistant",
        "",
        tool_calls=(_call(2),),
        replay={
            "thinking_blocks": [
                {"type": "thinking", "thinking": "run ls again", "signature": "S" * 80}
            ]
        },
    ),
    Message("tool", "a.txt", tool_call_id="c2"),
]
ASSISTANTS = [i for i, m in enumerate(CONVERSATION) if m.role == "assistant"]


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        # DeepSeek thinking mode: the turns with tool calls keep all their reasoning
        ("tool_turns", [False, True, True, True]),
        # Anthropic / OpenAI reasoning models / Qwen3: only after the last user message
        ("current_turn", [False, False, False, True]),
        ("all", [True, True, True, True]),
        ("none", [False, False, False, False]),
    ],
)
def test_each_rule_keeps_the_reasoning_its_provider_documents(
    rule: str, expected: list[bool]
) -> None:
    flags = kept(CONVERSATION, rule)  # type: ignore[arg-type]
    assert [flags[i] for i in ASSISTANTS] == expected
    if rule != "all":  # "all" counts reasoning wherever it travels
        assert not any(flags[i] for i, m in enumerate(CONVERSATION) if m.role != "assistant")


def test_count_prompt_adds_exactly_the_kept_reasoning_to_the_stripped_request() -> None:
    base = get_counter("tiktoken:o200k_base")
    stripped = [without_reasoning(m) for m in CONVERSATION]
    for rule, flags in (
        ("tool_turns", [False, True, True, True]),
        ("current_turn", [False, False, False, True]),
    ):
        counter = with_reasoning(base, rule)
        extra = sum(
            base.count(reasoning_text(CONVERSATION[i]))
            for i, keep in zip(ASSISTANTS, flags)
            if keep
        )
        assert counter.count_prompt(CONVERSATION) == base.count_prompt(stripped) + extra
    # the base counter alone counts every replay field, signatures aside or not
    assert with_reasoning(base, "all").count_prompt(CONVERSATION) < base.count_prompt(CONVERSATION)


def test_thinking_blocks_count_their_text_not_their_signature() -> None:
    message = CONVERSATION[8]
    assert reasoning_text(message) == "run ls again"
    redacted = Message(
        "assistant", "", replay={"thinking_blocks": [{"type": "redacted_thinking", "data": "x"}]}
    )
    assert reasoning_text(redacted) == ""


def test_the_per_message_sum_keeps_the_reasoning_of_tool_calling_turns() -> None:
    """The engine's incremental sum cannot see later messages: it keeps the reasoning of an
    assistant message that made tool calls (exact while the tool loop lasts)."""
    counter = with_reasoning(get_counter("tiktoken:o200k_base"), "current_turn")
    assert isinstance(counter, ReasoningCounter)
    assert kept_alone(CONVERSATION[4], "current_turn") and not kept_alone(
        CONVERSATION[2], "current_turn"
    )
    bare = counter.base.count_message(without_reasoning(CONVERSATION[4]))
    assert counter.count_message(CONVERSATION[4]) == bare + counter.base.count(
        "I should run ls first"
    )


def test_an_unknown_rule_is_a_config_error_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match="did you mean 'tool_turns'"):
        with_reasoning(get_counter("chars4"), "tool_turn")


@pytest.mark.parametrize(
    ("model", "counter", "rule", "exact"),
    [
        ("deepseek-v4-flash", "hf:deepseek-v3.1", "tool_turns", True),
        ("litellm_proxy/deepseek-chat", "hf:deepseek-v3.1", "tool_turns", True),
        ("deepseek-v3", "hf:deepseek-v3", "tool_turns", True),
        ("deepseek-reasoner", "hf:deepseek-v3.1", "tool_turns", True),
        ("deepseek-r1", "hf:deepseek-v3.1", "none", True),
        ("gpt-4o", "tiktoken:o200k_base", "none", True),
        ("o3-mini", "tiktoken:o200k_base", "current_turn", True),
        ("gpt-5.5", "tiktoken:o200k_base", "current_turn", True),
        ("gpt-4-0613", "tiktoken:cl100k_base", "none", True),
        ("claude-sonnet-4-5", "tiktoken:o200k_base", "current_turn", False),
        ("claude-haiku-4-5-20251001", "tiktoken:o200k_base", "current_turn", False),
        ("claude-opus-4-6", "tiktoken:o200k_base", "all", False),
        ("claude-sonnet-4-6", "tiktoken:o200k_base", "all", False),
        (
            "litellm_proxy/anthropic/claude-sonnet-4-20250514",
            "tiktoken:o200k_base",
            "current_turn",
            False,
        ),
        ("Qwen3-32B", "hf:qwen2.5", "current_turn", True),
        ("qwen2.5-coder-32b", "hf:qwen2.5", "none", True),
        ("mistral-large", "mistral:tekken", "none", True),
        ("something-new", "tiktoken:o200k_base", "all", False),
        (None, "tiktoken:o200k_base", "all", False),
    ],
)
def test_auto_picks_the_counter_and_rule_of_the_recorded_model(
    model: str | None, counter: str, rule: str, exact: bool
) -> None:
    choice = choose(model)
    assert (choice.counter, choice.reasoning, choice.exact) == (counter, rule, exact)
    assert counter in choice.describe()


def test_auto_warns_when_one_run_pools_models() -> None:
    one = Trace("a", (Message("user", "hi"),), meta={"model": "gpt-4o"})
    other = Trace("b", (Message("user", "hi"),), meta={"model": "deepseek-chat"})
    assert pooling_warning(choose_for([one, one])) is None
    warning = pooling_warning(choose_for([one, other]))
    assert warning is not None and "2 models" in warning and "gpt-4o" in warning


def test_anthropic_bills_the_current_turns_thinking_on_the_recorded_tau2_run(
    shared_traces: Path,
) -> None:
    """tau2's Claude Sonnet 4.5 run sent its thinking blocks back: a profile fitted under
    Anthropic's documented rule (current turn) generalises to held-back traces; under 'none'
    (nothing counted) or 'all' (every turn counted) it does not."""
    path = next(shared_traces.glob("sierra-research+tau2-bench/**/claude-sonnet-4-5_*.json"))
    traces, _ = import_file(path)
    assert any("thinking_blocks" in m.replay for t in traces for m in t.messages)
    base = get_counter("tiktoken:o200k_base")
    p90 = {
        rule: cross_validate(
            calibrate(traces, with_reasoning(base, rule)).samples, 5, fit_scale=True
        ).errors.p90_abs_rel_error
        for rule in ("current_turn", "none", "all")
    }
    assert p90["current_turn"] <= 0.03 < min(p90["none"], p90["all"])
