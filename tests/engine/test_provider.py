"""The simulated provider refuses broken tool pairing, whatever the prompt's length, in the
provider's own words, and the replay counts that as a failed call of kind ``pairing``."""

from __future__ import annotations

import pytest

from ctxbench.counting import get_counter
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.provider import SimulatedProvider, is_overflow_error, pairing_rejection
from ctxbench.engine.replay import replay
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.layers import split_system
from ctxbench.trace import Message, ToolCall, Trace
from tests.factories import tool_round

CALL = Message(
    "assistant", "", tool_calls=(ToolCall("c1", "bash", "{}"), ToolCall("c2", "bash", "{}"))
)
R1 = Message("tool", "one", tool_call_id="c1")
R2 = Message("tool", "two", tool_call_id="c2")
SYSTEM, USER = Message("system", "s"), Message("user", "u")


def test_a_well_paired_prompt_is_accepted() -> None:
    assert pairing_rejection([SYSTEM, USER, CALL, R1, R2], "openai") is None


def test_openai_refuses_a_result_without_its_call() -> None:
    text = pairing_rejection([SYSTEM, USER, R1, R2], "openai")
    assert text is not None
    assert (
        "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"
        in text
    )
    assert "'param': 'messages.[2].role'" in text


def test_openai_refuses_a_call_whose_results_are_missing() -> None:
    text = pairing_rejection([SYSTEM, USER, CALL, R1, USER], "openai")
    assert text is not None
    assert "must be followed by tool messages responding to each 'tool_call_id'" in text
    assert text.endswith(
        "did not have response messages: c2\", 'type': 'invalid_request_error', 'param': 'messages.[2].role', 'code': None}}"
    )


def test_anthropic_wording_counts_messages_without_the_system_prompt() -> None:
    orphan = pairing_rejection([SYSTEM, USER, R1], "anthropic")
    assert (
        orphan is not None
        and "messages.1.content.0: unexpected `tool_use_id` found in `tool_result` blocks: c1"
        in orphan
    )
    missing = pairing_rejection([SYSTEM, USER, CALL, USER], "anthropic")
    assert missing is not None
    assert (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: c1, c2"
        in missing
    )


def test_vllm_uses_its_error_object() -> None:
    text = pairing_rejection([USER, R1], "vllm")
    assert text is not None and text.startswith("Error code: 400 - {'object': 'error'")


@pytest.mark.parametrize("style", ["openai", "anthropic", "vllm"])
def test_a_pairing_rejection_is_not_an_overflow(style: str) -> None:
    text = pairing_rejection([USER, R1], style)
    assert text is not None and not is_overflow_error(text)


def test_a_result_after_an_unrelated_message_is_an_orphan() -> None:
    assert pairing_rejection([USER, CALL, R1, USER, R2], "openai") is not None


class DropsFirstCall(Strategy):
    """Cuts the oldest assistant turn but keeps its results, as an unrepaired trim would."""

    name = "drops_first_call"

    def before_call(self, ctx: ReplayContext) -> None:
        system, rest = split_system(ctx.view.messages)
        if ctx.call == 2:
            ctx.apply(
                "cut", [*system, *[m for m in rest if m.role != "assistant" or m is not rest[1]]]
            )


def test_the_replay_fails_the_call_with_kind_pairing_and_does_not_retry() -> None:
    msgs = [
        SYSTEM,
        USER,
        *tool_round(0),
        *tool_round(1),
        *tool_round(2),
        Message("assistant", "done"),
    ]
    counter = get_counter("chars4")
    out = replay(
        Trace("p", tuple(msgs)),
        DropsFirstCall(),
        SimulatedProvider(100_000),
        true_counter=counter,
        estimator=counter,
    )
    failed = [e for e in out.events if e.type == "call.failed"]
    # the orphan result stays in the view, so the next call is refused too
    assert [(e.call, e["kind"], e["attempts"]) for e in failed] == [
        (2, "pairing", 1),
        (3, "pairing", 1),
    ]
    rejected = [e for e in out.events if e.type == "provider.call" and not e["ok"]]
    assert [e["error_kind"] for e in rejected] == ["pairing", "pairing"]
    assert out.result.failed_calls == 2 and out.result.overflow_errors == 0
