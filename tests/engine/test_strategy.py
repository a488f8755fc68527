"""The strategy protocol: ``after_call`` hears every provider attempt with the numbers of its
``provider.call`` event, and the registry's entries are the classes' own names."""

from __future__ import annotations

import dataclasses

import pytest

from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import replay
from ctxbench.engine.strategy import PROTOCOL, ProviderCall, Strategy
from ctxbench.errors import ProviderOverflowError
from ctxbench.strategies import STRATEGIES, strategy_class
from ctxbench.trace import Trace, Usage
from tests.factories import tool_trace

CHARS4 = get_counter("chars4")


class Listening(Strategy):
    """Never compacts; on an overflow drops everything but the system and the last round (the
    last assistant turn and its results: the provider refuses a result without its call)."""

    name = "listening"

    def __init__(self) -> None:
        super().__init__()
        self.heard: list[ProviderCall] = []

    def after_call(self, call: ProviderCall, ctx: ReplayContext) -> None:
        self.heard.append(call)

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        messages = ctx.view.messages
        last = max(i for i, m in enumerate(messages) if m.role == "assistant")
        kept = [m for m in messages if m.role == "system"] + list(messages[last:])
        return ctx.apply("cut", kept)


def with_usage(trace: Trace) -> Trace:
    """The trace with a recorded usage on every assistant message (prompt_tokens = its index)."""
    messages = tuple(
        dataclasses.replace(m, usage=Usage(prompt_tokens=i)) if m.role == "assistant" else m
        for i, m in enumerate(trace.messages)
    )
    return dataclasses.replace(trace, messages=messages)


def test_after_call_hears_every_attempt_with_the_events_numbers() -> None:
    trace = with_usage(tool_trace(12, output="x" * 400))
    strategy = Listening()
    out = replay(trace, strategy, SimulatedProvider(600, 0), true_counter=CHARS4, estimator=CHARS4)
    calls = [e for e in out.events if e.type == ev.PROVIDER_CALL]
    assert len(strategy.heard) == len(calls) > len(trace.call_indices)  # retries were heard too
    assert any(not c.accepted for c in strategy.heard)
    for heard, event in zip(strategy.heard, calls):
        assert heard.call == event.call and heard.attempt == event["attempt"]
        assert heard.true_tokens == event["true_tokens"]
        assert heard.estimated_tokens == event["estimated_tokens"]
        assert heard.accepted is event["ok"] and heard.overflow is (not event["ok"])
        assert heard.cached_tokens == event["cached_tokens"]
        assert (None if heard.error is None else str(heard.error)) == event["error"]
        recorded = trace.messages[trace.call_indices[heard.call]].usage
        assert heard.recorded_usage == recorded and recorded is not None


def test_after_call_is_part_of_the_duck_typed_protocol() -> None:
    assert "after_call" in PROTOCOL
    assert all(hasattr(Strategy, attr) for attr in PROTOCOL)


def test_every_registered_strategy_is_its_own_name_and_summary() -> None:
    for entry in STRATEGIES.entries():
        cls = strategy_class(entry.name)
        assert issubclass(cls, Strategy), entry.name
        assert cls.name == entry.name
        assert cls.summary and cls.source, entry.name
        assert entry.summary == "" and entry.source == "", "the class is the one source"
        assert dataclasses.is_dataclass(cls.Config)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(cls.Config(), "knob", 1)  # noqa: B010 - a frozen Config refuses it
