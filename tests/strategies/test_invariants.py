"""Invariants every strategy keeps on random traces (tool calling, text ReAct with observations,
chat), windows, estimators and true counters: tool pairs intact, the system message kept,
prompts within the window after every successful call, events in order, and the row equal to
what the events say."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import replay
from ctxbench.engine.result import Identity, result_from_events
from ctxbench.pairing import pairing_violations
from ctxbench.strategies import STRATEGIES, build_strategy
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.trace import Message, ToolCall, Trace


@st.composite
def random_traces(draw: st.DrawFn) -> Trace:
    """System + task, then tool rounds (parallel calls), text-ReAct rounds and chat turns of random sizes."""
    msgs = [
        Message("system", "You are an agent. Rule: never delete data."),
        Message("user", "Do the task."),
    ]
    n = 0
    for _ in range(draw(st.integers(1, 25))):
        size = draw(st.integers(0, 3000))
        kind = draw(st.sampled_from(["tools", "tools", "react", "chat"]))
        if kind == "tools":
            k = draw(st.integers(1, 3))
            calls = tuple(ToolCall(f"c{n + j}", "bash", '{"cmd": "ls"}') for j in range(k))
            n += k
            msgs.append(Message("assistant", "", tool_calls=calls))
            msgs += [Message("tool", "o" * size, tool_call_id=c.id) for c in calls]
        elif kind == "react":
            msgs.append(Message("assistant", "Thought: t\nAction: a\nAction Input: {}"))
            msgs.append(Message("user", "Observation: " + "p" * size))
        else:
            msgs.append(Message("user", "u" * (size // 10)))
            msgs.append(Message("assistant", "a" * (size // 10)))
    msgs.append(Message("assistant", "done"))
    return Trace("rand", tuple(msgs))


#: Estimators a strategy may decide with ("" = its own), and the provider's true counters:
#: the strategy's estimate is often wrong, as in real deployments.
ESTIMATORS = ("", "chars4", "hermes", "agentscope", "tiktoken:o200k_base")
TRUE_COUNTERS = ("chars4", "tiktoken:o200k_base")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    random_traces(),
    st.integers(600, 20_000),
    st.sampled_from(STRATEGIES.names()),
    st.sampled_from(ESTIMATORS),
    st.sampled_from(TRUE_COUNTERS),
)
def test_no_strategy_breaks_tool_pairs_or_drops_the_system_message(
    trace: Trace, window: int, name: str, estimator: str, true_counter: str
) -> None:
    strategy = build_strategy(name)
    out = replay(
        trace,
        strategy,
        SimulatedProvider(window, min(200, window // 4)),
        true_counter=get_counter(true_counter),
        estimator=get_counter(estimator or type(strategy).default_estimator),
        summarizer=ExtractiveSummarizer(),
    )
    if strategy.keeps_pairs():
        assert out.result.pairing_violations == 0
        assert pairing_violations(out.final_view) == 0
    else:  # a faithful system that sends broken pairs: each such prompt is a rejected call
        rejected = [e for e in out.events if e.type == ev.CALL_FAILED and e["kind"] == "pairing"]
        sent_broken = [
            e for e in out.events if e.type == ev.PROVIDER_CALL and e["error_kind"] == "pairing"
        ]
        assert len(rejected) == len(sent_broken)
    if strategy.keeps_system():  # only a documented rule (langchain_trim's default) may drop it
        assert out.result.system_kept
        assert out.final_view and out.final_view[0].role == "system"
    assert [e.step for e in out.events] == list(range(len(out.events)))
    assert result_from_events(out.events, Identity(trace_id=trace.id, strategy=name)) == out.result
    for e in out.events:
        if e.type == ev.PROVIDER_CALL and e["ok"]:
            assert e["true_tokens"] <= e["limit"]
