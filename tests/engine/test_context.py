"""The replay context's trace attribution: which recorded message each prompt message stands
for, by one rule whichever way the strategy changed the prompt (``apply`` with or without
declared sources, ``reassemble``)."""

from __future__ import annotations

import dataclasses

from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext
from ctxbench.trace import Message, ToolCall
from tests.factories import replay_context

PLAN = Message("assistant", "I will read the code first.")
CALL = ToolCall("c1", "bash", '{"cmd": "grep -n _separable core.py"}')
TURN = Message("assistant", "Let me look for _separable.", tool_calls=(CALL,))
RESULT = Message("tool", "655: _separable = None", tool_call_id="c1")
#: AgentScope's kept block of a cut turn: its tool call without its text
CALLS_ONLY = dataclasses.replace(TURN, content="")
#: a stand-in that carries nothing of the message it replaces
EMPTY = Message("assistant", "")


def recorded() -> ReplayContext:
    ctx = replay_context()
    history = [Message("system", "s"), Message("user", "task"), PLAN, TURN, RESULT]
    for index, message in enumerate(history):
        ctx.append_recorded(message, index)
    return ctx


def kept(ctx: ReplayContext) -> list[int | None]:
    return [ctx.trace_index(m) for m in ctx.view.messages]


def test_a_part_a_layer_cut_from_a_recorded_message_keeps_its_index() -> None:
    ctx = recorded()
    system, summary = ctx.view.messages[0], Message("user", "summary of the task and the text")
    # the summary replaces three messages: no alignment pairs the cut turn with its original
    ctx.apply("compression", [system, summary, CALLS_ONLY, RESULT])
    assert kept(ctx) == [0, None, None, 4]
    ctx = recorded()
    ctx.apply(
        "compression", [system, summary, CALLS_ONLY, RESULT], sources=[system, None, TURN, RESULT]
    )
    assert kept(ctx) == [0, None, 3, 4]
    # a later layer that drops the cut part names the recorded message it stood for
    ctx.apply("compression", [system, summary])
    dropped = [e for e in ctx.events if e.type == ev.COMPACTION][-1]
    assert dropped["dropped_messages"] == [[3, 4]]


def test_an_empty_stand_in_keeps_nothing_whichever_way_it_arrives() -> None:
    ctx = recorded()
    view = list(ctx.view.messages)
    blanked = [*view[:3], EMPTY, RESULT]
    ctx.apply("blank", blanked, sources=view)
    assert kept(ctx) == [0, 1, 2, None, 4]
    ctx = recorded()
    ctx.apply("blank", blanked)  # a rewrite in place, paired by the alignment
    assert kept(ctx) == [0, 1, 2, None, 4]
    ctx = recorded()
    ctx.reassemble(blanked, view)
    assert kept(ctx) == [0, 1, 2, None, 4]


def test_a_reassembled_part_gets_the_same_index_as_a_declared_one() -> None:
    declared, reassembled = recorded(), recorded()
    view = list(declared.view.messages)
    prompt = [view[0], Message("user", "summary"), CALLS_ONLY, RESULT]
    declared.apply("compression", prompt, sources=[view[0], None, TURN, RESULT])
    reassembled.reassemble(prompt, [view[0], None, TURN, RESULT])
    assert kept(declared) == kept(reassembled) == [0, None, 3, 4]
