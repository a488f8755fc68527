"""What the DB-GPT tests share: traces, a strategy as designed or as 0.8.2, a replay, the
events read back, and the Hypothesis histories of a manager's input."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.strategies import build_strategy
from ctxbench.strategies.dbgpt import DbgptStrategy
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.trace import Message, ToolCall, Trace
from tests import replaying

CHARS4 = get_counter("chars4")


#: knobs that leave only layer 3 to act (nothing is old enough for layer 1, nothing droppable for layer 2)
ONLY_L3: dict[str, Any] = {
    "warning_threshold": 0.5,
    "error_threshold": 0.5,
    "critical_threshold": 0.9,
    "max_observation_age_rounds": 100,
    "min_keep_tokens": 100_000,
}


def react(n: int, obs_chars: int = 400, trace_id: str = "r") -> Trace:
    msgs = [
        Message("system", "You are a data agent. Task progress: none."),
        Message("user", "Sum sales by region."),
    ]
    for i in range(n):
        msgs.append(
            Message("assistant", f"Thought: step {i}\nAction: sql_query\nAction Input: SELECT {i}")
        )
        body = f"row{i}|" + ("x" * (obs_chars - 20))
        msgs.append(Message("user", f"Observation: {body}"))
    msgs.append(Message("assistant", "Final answer"))
    return Trace(trace_id, tuple(msgs))


def dbgpt(params: dict[str, Any]) -> DbgptStrategy:
    """A DB-GPT strategy built by name, typed as what it is, as designed (the rules these
    tests describe; 0.8.2's are tested at the end)."""
    strategy = build_strategy("dbgpt", {"release": "design", **params})
    assert isinstance(strategy, DbgptStrategy)
    return strategy


def run(trace: Trace, window: int, **kwargs: Any) -> ReplayOutput:
    """:func:`tests.replaying.run` of DB-GPT, as designed unless ``release`` says otherwise
    (``kwargs``: its options and knobs)."""
    return replaying.run(trace, "dbgpt", window, **{"release": "design", **kwargs})


def statuses(out: ReplayOutput, call: int | None = None) -> list[dict[str, Any]]:
    return [
        e.to_dict()
        for e in out.events
        if e.type == ev.CONTEXT_STATUS and (call is None or e.call == call)
    ]


compactions = replaying.compactions


def final_view(out: ReplayOutput) -> list[Message]:
    return list(out.final_view)


def estimator_only_ctx(strategy: Any) -> Any:
    """Layer 2 reads only the estimator from the context."""

    class Ctx:
        estimator = CHARS4

    return Ctx()


def run_release(trace: Trace, window: int, **params: Any) -> ReplayOutput:
    return replay(
        trace,
        build_strategy("dbgpt", {"release": "0.8.2", **params}),
        SimulatedProvider(window, 0),
        true_counter=CHARS4,
        estimator=CHARS4,
        summarizer=ExtractiveSummarizer(),
    )


#: the kinds of message :func:`histories` draws from, each as likely as its count here
KINDS = ("system", "user", "text", "call", "tool", "obs", "obs")


@st.composite
def histories(
    draw: st.DrawFn,
    kinds: Sequence[str] = KINDS,
    bodies: Sequence[int] = (10, 400),
    most: int = 24,
) -> tuple[Message, ...]:
    """A manager's input: system messages anywhere, questions, text and tool-calling turns,
    tool results and ``Observation:`` turns, long and short."""
    out: list[Message] = []
    for i in range(draw(st.integers(0, most))):
        kind = draw(st.sampled_from(kinds))
        body = "x" * draw(st.sampled_from(bodies))
        if kind == "system":
            out.append(Message("system", f"s{i}"))
        elif kind == "user":
            out.append(Message("user", f"q{i}"))
        elif kind == "text":
            out.append(Message("assistant", f"Thought: {i}"))
        elif kind == "call":
            out.append(Message("assistant", f"t{i}", tool_calls=(ToolCall(f"c{i}", "bash"),)))
        elif kind == "tool":
            out.append(Message("tool", f"r{i} {body}", tool_call_id=f"c{i - 1}"))
        else:
            out.append(Message("user", f"Observation: {i} {body}"))
    return tuple(out)
