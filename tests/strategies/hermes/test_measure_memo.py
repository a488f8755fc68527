"""The loop's rough measures keep each message's share for the process (a lookup per message
in C at every call): for every history, and for histories that reuse earlier messages' objects
as a replay does from call to call, they give the number the released definition gives,
``estimate_messages_tokens_rough`` over the dicts built from the whole history again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings

from ctxbench.strategies.hermes.measure import (
    _IMAGE_TYPES,
    ROUGH_IMAGE_TOKENS,
    api_message,
    conversation,
    rough_api_tokens,
    rough_messages_tokens,
    rough_request_tokens,
    rough_tools_tokens,
    stored_message,
    system_prompt,
)
from ctxbench.trace import Message, ToolSpec
from tests.factories import histories

TOOLS = (ToolSpec("bash", "Run a command", {"type": "object", "properties": {}}),)


def images(messages: Sequence[Message]) -> int:
    return sum(1 for m in messages for p in m.parts or () if p.type in _IMAGE_TYPES)


def rough(dicts: Sequence[dict[str, Any]], n_images: int) -> int:
    """The released ``estimate_messages_tokens_rough``: ``(sum of len(str(msg)) + 3) // 4``."""
    return (sum(len(str(d)) for d in dicts) + 3) // 4 + ROUGH_IMAGE_TOKENS * n_images


def defined_messages_tokens(history: Sequence[Message]) -> int:
    kept = conversation(history)
    return rough([stored_message(m) for m in kept], images(kept))


def defined_api_tokens(history: Sequence[Message]) -> int:
    system = system_prompt(history)
    kept = conversation(history)
    dicts = [{"role": "system", "content": system}] if system else []
    return rough(dicts + [api_message(m) for m in kept], images(kept)) + rough_tools_tokens(TOOLS)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_each_memoised_measure_is_the_definition_it_replaces(
    histories: list[list[Message]],
) -> None:
    for history in histories:
        assert rough_messages_tokens(history) == defined_messages_tokens(history)
        assert rough_api_tokens(history, TOOLS) == defined_api_tokens(history)
        system = system_prompt(history)
        head = (len(system) + 3) // 4 if system else 0
        assert rough_request_tokens(history, TOOLS) == (
            head + defined_messages_tokens(history) + rough_tools_tokens(TOOLS)
        )


def test_the_tools_estimate_follows_the_tools_it_is_given() -> None:
    other = (ToolSpec("read", "Read a file with a much longer description", {"type": "object"}),)
    first, second = rough_tools_tokens(TOOLS), rough_tools_tokens(other)
    assert first != second
    assert rough_tools_tokens(list(TOOLS)) == first == rough_tools_tokens(TOOLS)
    assert rough_tools_tokens(()) == 0
