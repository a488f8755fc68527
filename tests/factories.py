"""Small builders for hand-made traces used across the tests (and a hypothesis strategy), and
an empty replay context."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from ctxbench.counting import get_counter
from ctxbench.engine.context import ReplayContext
from ctxbench.probes.model import Probe
from ctxbench.strategies import build_strategy
from ctxbench.strategies.hermes.summary import SUMMARY_MARK
from ctxbench.trace import Message, Part, ToolCall, Trace


def replay_context() -> ReplayContext:
    """A context of one call with nothing in its view (``none``, chars4, a 1000-token window)."""
    return ReplayContext(
        trace_id="t",
        strategy=build_strategy("none"),
        estimator=get_counter("chars4"),
        true_counter=get_counter("chars4"),
        window=1000,
        reserved=0,
        tools=(),
        n_calls=1,
        summarizer=None,
        seed=0,
    )


def tool_round(i: int, *, calls: int = 1, output: str = "ok", thought: str = "") -> list[Message]:
    """One native tool-calling round: an assistant with ``calls`` parallel calls and their results."""
    tool_calls = tuple(
        ToolCall(f"c{i}_{j}", "bash", json.dumps({"cmd": f"step {i}.{j}"})) for j in range(calls)
    )
    out = [Message("assistant", thought or f"step {i}", tool_calls=tool_calls)]
    out += [
        Message("tool", f"{output} {i}.{j}", tool_call_id=c.id, name="bash")
        for j, c in enumerate(tool_calls)
    ]
    return out


def tool_trace(
    n_rounds: int,
    *,
    output: str = "ok",
    calls: int = 1,
    system: str = "You are a careful agent.",
    task: str = "Fix the bug in src/app.py",
    probes: tuple[Probe, ...] = (),
    trace_id: str = "t",
) -> Trace:
    msgs = [Message("system", system), Message("user", task)]
    for i in range(n_rounds):
        msgs += tool_round(i, calls=calls, output=output)
    msgs.append(Message("assistant", "All done."))
    return Trace(trace_id, tuple(msgs), probes=probes)


def react_trace(n_rounds: int, *, observation: str = "rows", trace_id: str = "r") -> Trace:
    """A DB-GPT style text ReAct trace: Thought/Action/Action Input and Observation messages."""
    msgs = [
        Message("system", "You are a data analyst agent."),
        Message("user", "Report revenue by region for 2024."),
    ]
    for i in range(n_rounds):
        msgs.append(
            Message(
                "assistant",
                f"Thought: look at table {i}\nAction: sql_query\nAction Input: SELECT * FROM t{i}",
            )
        )
        msgs.append(Message("user", f"Observation: {observation} {i}"))
    msgs.append(Message("assistant", "Final answer."))
    return Trace(trace_id, tuple(msgs))


@st.composite
def valid_messages(draw: st.DrawFn) -> list[Message]:
    """Random valid conversations mixing tool-calling rounds (parallel calls included), text
    ReAct rounds, plain chat turns and stray system messages."""
    msgs: list[Message] = []
    if draw(st.booleans()):
        msgs.append(Message("system", "sys"))
    counter = 0
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["tools", "react", "chat", "user", "system"]))
        if kind == "tools":
            n = draw(st.integers(1, 4))
            calls = tuple(ToolCall(f"id{counter + j}", "t", "{}") for j in range(n))
            counter += n
            msgs.append(
                Message("assistant", draw(st.sampled_from(["", "thinking"])), tool_calls=calls)
            )
            msgs += [Message("tool", "r", tool_call_id=c.id) for c in calls]
        elif kind == "react":
            msgs.append(Message("assistant", "Thought: x\nAction: a\nAction Input: {}"))
            msgs.append(Message("user", "  Observation: y"))
        elif kind == "chat":
            msgs.append(Message("user", "hi"))
            msgs.append(Message("assistant", "hello"))
        elif kind == "user":
            msgs.append(Message("user", "more"))
        else:
            msgs.append(Message("system", "mid-trace system note"))
    return msgs


#: texts, tool-call arguments and messages of every shape the estimators read (media parts,
#: replay fields, summary marks, arguments that are not JSON)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
ARGUMENTS = st.one_of(
    st.dictionaries(st.sampled_from(["path", "cmd", "b", "a"]), TEXT, max_size=3).map(json.dumps),
    TEXT,  # not JSON: sent as recorded
)


@st.composite
def any_messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    content = draw(TEXT)
    kwargs: dict[str, Any] = {}
    if role == "assistant" and draw(st.booleans()):
        n = draw(st.integers(1, 2))
        kwargs["tool_calls"] = tuple(
            ToolCall(draw(st.sampled_from(["call_1", "x y", "fc_2", ""])) + str(i), "bash", a)
            for i, a in enumerate(draw(st.lists(ARGUMENTS, min_size=n, max_size=n)))
        )
    if role == "assistant" and draw(st.booleans()):
        kwargs["replay"] = {
            draw(st.sampled_from(["reasoning", "reasoning_content"])): draw(
                st.one_of(TEXT, st.lists(st.dictionaries(st.just("thinking"), TEXT), max_size=2))
            )
        }
    if role == "tool":
        kwargs["tool_call_id"] = "call_10"
        kwargs["name"] = draw(st.sampled_from([None, "bash"]))
    if role == "user" and draw(st.booleans()):
        parts = [Part("text", content), Part(draw(st.sampled_from(["image_url", "input_audio"])))]
        return Message.from_parts(role, parts)
    if draw(st.integers(0, 5)) == 0:
        kwargs["meta"] = {SUMMARY_MARK: True}
    return Message(role, content, **kwargs)


@st.composite
def histories(draw: st.DrawFn) -> list[list[Message]]:
    """The histories of successive calls: each keeps some of the last one's objects (as a
    replay's view does), adds new ones, and copies some (equal content, another object)."""
    history: list[Message] = []
    out = []
    for _ in range(draw(st.integers(1, 5))):
        kept = [m for m in history if draw(st.integers(0, 4)) > 0]
        copies = [replace(m) for m in kept if draw(st.integers(0, 5)) == 0]
        history = kept + copies + draw(st.lists(any_messages(), max_size=6))
        out.append(list(history))
    return out
