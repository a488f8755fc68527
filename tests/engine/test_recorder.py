"""The recorder's trace attribution behind the replay context: which recorded message each prompt message stands
for, by one rule whichever way the strategy changed the prompt (``apply`` with or without
declared sources, ``reassemble``)."""

from __future__ import annotations

import dataclasses
import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.prompt import Change
from ctxbench.engine.recorder import InPlace, _rewrites_in_place, change_of, recorder_of
from ctxbench.trace import Message, ToolCall
from tests.factories import replay_context
from tests.test_pairing import chunks_of

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
        recorder_of(ctx).append_recorded(message, index)
    return ctx


def kept(ctx: ReplayContext) -> list[int | None]:
    return [recorder_of(ctx).trace_index(m) for m in ctx.view.messages]


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


def _difflib_account(
    before: list[Message], after: list[Message]
) -> tuple[int, int, int, list[int]]:
    """``_account`` as the alignment defines it, on difflib's own opcodes (no fast path)."""
    ctx = recorded_pool(before)
    a, b = [m.fingerprint for m in before], [m.fingerprint for m in after]
    dropped = rewritten = added = 0
    gone: list[int] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        olds, news = before[i1:i2], after[j1:j2]
        if tag == "equal":
            continue
        if (
            tag == "replace"
            and len(olds) == len(news)
            and all(o.role == n.role for o, n in zip(olds, news))
        ):
            rewritten += len(news)
            continue
        dropped, added = dropped + len(olds), added + len(news)
        gone += [i for i in map(recorder_of(ctx).trace_index, olds) if i is not None]
    return dropped, rewritten, added, sorted(set(gone))


def _account(
    ctx: ReplayContext, before: list[Message], after: list[Message]
) -> tuple[int, int, int, list[int]]:
    """A compaction's change, carried out on ``ctx``: (dropped, rewritten, added, the trace
    indices of the dropped messages)."""
    change = change_of(before, after, _keys(before), _keys(after))
    found = recorder_of(ctx).settle(change)
    gone = sorted({i for indices in found for i in indices if i is not None})
    return change.dropped, change.rewritten, change.added, gone


def recorded_pool(messages: list[Message]) -> ReplayContext:
    ctx = replay_context()
    for index, message in enumerate(messages):
        recorder_of(ctx).append_recorded(message, index)
    return ctx


@st.composite
def compactions(draw: st.DrawFn) -> tuple[list[Message], list[Message]]:
    """A prompt and what a layer makes of it: messages kept, dropped, rewritten in place (of
    the same role or not), inserted or repeated."""
    roles = st.sampled_from(["user", "assistant", "tool"])
    before = [Message(draw(roles), f"m{i}") for i in range(draw(st.integers(0, 14)))]
    after: list[Message] = []
    for i, message in enumerate(before):
        action = draw(st.sampled_from(["keep", "keep", "drop", "rewrite", "retype", "insert"]))
        if action == "keep":
            after.append(message)
        elif action == "rewrite":
            after.append(message.with_text(f"cut{i}"))
        elif action == "retype":
            after.append(Message("user" if message.role != "user" else "tool", f"as{i}"))
        elif action == "insert":
            after += [Message("user", f"new{i}"), message]
    repeat: bool = draw(st.booleans())
    if after and repeat:
        after.insert(draw(st.integers(0, len(after))), draw(st.sampled_from(after)))
    return before, after


@settings(max_examples=400, deadline=None)
@given(compactions())
def test_a_compactions_counts_are_those_of_difflibs_alignment(
    pair: tuple[list[Message], list[Message]],
) -> None:
    before, after = pair
    ctx = recorded_pool(before)
    assert _account(ctx, before, after) == _difflib_account(before, after)


def test_rewrites_in_place_of_a_long_prompt_are_counted_without_the_opcodes() -> None:
    before = [Message("user" if i % 2 else "assistant", f"m{i}") for i in range(400)]
    after = [m.with_text(f"cut{i}") if i % 2 and i < 300 else m for i, m in enumerate(before)]
    assert _rewrites_in_place(before, after, _keys(before), _keys(after)) == list(range(1, 300, 2))
    retyped = [*after[:-1], Message("tool", "other")]
    assert _rewrites_in_place(before, retyped, _keys(before), _keys(retyped)) is None
    ctx = recorded_pool(before)
    assert _account(ctx, before, after) == (0, 150, 0, [])
    assert [recorder_of(ctx).trace_index(m) for m in after] == list(
        range(400)
    )  # the cuts keep their index


def _keys(messages: list[Message]) -> list[str]:
    return [m.fingerprint for m in messages]


@st.composite
def call_by_call(draw: st.DrawFn) -> list[tuple[tuple[Message, ...], tuple[Message, ...]]]:
    """A replay's (view, rebuilt prompt) pairs, call after call, as DB-GPT 0.8.2 makes them: the
    history grows, the rebuilt prompt rewrites some of it in place and carries a new system
    prompt; now and then a pair that is anything else (a retyped or repeated message, another
    length, a history started again)."""
    roles = st.sampled_from(["user", "assistant", "tool"])
    history: list[Message] = [Message("system", "sys")]
    rewrites: dict[int, Message] = {}
    pairs = []
    for call in range(draw(st.integers(1, 12))):
        seen = len(history)
        history += [Message(draw(roles), f"h{call}.{i}") for i in range(draw(st.integers(0, 30)))]
        for i in range(1, len(history)):
            if i not in rewrites and draw(st.integers(0, 1 if i >= seen else 40)) == 0:
                rewrites[i] = history[i].with_text(f"cut{i}")
            elif i in rewrites and draw(st.integers(0, 20)) == 0:
                del rewrites[i]  # no longer rewritten (the same objects elsewhere)
        after = [rewrites.get(i, m) for i, m in enumerate(history)]
        after[0] = Message("system", f"sys, progress {call}")
        shape = draw(st.sampled_from(["rebuilt"] * 6 + list(SHAPES)))
        before = list(history)
        if shape == "retyped" and len(after) > 1:
            after[-1] = Message("user" if after[-1].role != "user" else "tool", f"as{call}")
        elif shape == "repeated" and len(after) > 2:
            after[1] = after[-1]
        elif shape == "repeated before" and len(before) > 2:
            before[1] = before[-1]
        elif shape == "new key of before" and len(before) > 2 and len(after) > 1:
            after[1] = before[-1] if after[1] is not before[1] else after[1]
        elif shape == "longer":
            after.append(Message("user", f"extra{call}"))
        elif shape == "shorter":
            cut = draw(st.integers(0, len(after)))
            before, after = before[:cut], after[:cut]
        elif shape == "moved" and len(after) > 3:
            i, j = sorted(draw(st.lists(st.integers(1, len(after) - 1), min_size=2, max_size=2)))
            before[i], before[j] = before[j], before[i]
            after[i], after[j] = after[j], after[i]
        elif shape == "reset":
            history = [Message(draw(roles), f"r{call}.{i}") for i in range(len(history))]
            rewrites.clear()
            before = list(history)
        pairs.append((tuple(before), tuple(after)))
    return pairs


#: the pairs other than a DB-GPT rebuild (:func:`call_by_call`)
SHAPES = (
    "retyped",
    "repeated",
    "repeated before",
    "new key of before",
    "longer",
    "shorter",
    "moved",
    "reset",
)


@settings(max_examples=300, deadline=None)
@given(call_by_call())
def test_rewrites_in_place_started_from_the_last_call_are_those_of_the_whole_lists(
    pairs: list[tuple[tuple[Message, ...], tuple[Message, ...]]],
) -> None:
    in_place = InPlace()
    for before, after in pairs:
        a, b = _keys(list(before)), _keys(list(after))
        assert in_place.rewrites(before, after, a, b) == _rewrites_in_place(before, after, a, b)
        # a list (which may change after) is read whole, and not remembered
        assert in_place.rewrites(list(before), after, a, b) == _rewrites_in_place(
            before, after, a, b
        )
        assert in_place.rewrites(before, after, a, b) == _rewrites_in_place(before, after, a, b)


def _columns(change: Change | None) -> object:
    """A change as the accounting reads it: the rewrites by key (a carried column may hold an
    earlier object of the same key)."""
    if change is None:
        return None
    steps = [(new, old, [m.fingerprint for m in ms], gone) for new, old, ms, gone in change.steps]
    return change.dropped, change.rewritten, change.added, steps


@settings(max_examples=300, deadline=None)
@given(call_by_call(), st.integers(1, 8))
def test_a_change_carried_from_the_last_call_is_the_one_worked_out_whole(
    pairs: list[tuple[tuple[Message, ...], tuple[Message, ...]]], chunk: int
) -> None:
    """Call after call, whatever the pairs in between (a list with a repeated key, a retyped
    rewrite, a move, a shorter or longer pair, a history started again)."""
    in_place = InPlace()
    with chunks_of(chunk):
        for before, after in pairs:
            a, b = _keys(list(before)), _keys(list(after))
            whole = change_of(before, after, a, b)
            carried = change_of(before, after, a, b, in_place)
            assert _columns(carried) == _columns(whole)
            if carried.unique:
                assert len(set(a)) == len(a) and len(set(b)) == len(b)


@st.composite
def views_call_by_call(draw: st.DrawFn) -> list[list[Message]]:
    """Views one after another: the last one with a few places changed (a system message
    becomes another role, or another system message), grown or cut, or a new list."""
    pool = [
        Message(role, f"{role} {i}") for role in ("system", "user", "assistant") for i in range(3)
    ]
    pool += [Message("system", "sys, and progress"), Message("system", "before sys")]
    views = [draw(st.lists(st.sampled_from(pool), max_size=30))]
    for _ in range(draw(st.integers(0, 8))):
        view = list(draw(st.sampled_from(views)))
        for i in draw(st.lists(st.integers(0, 40), max_size=3)):
            if i < len(view):
                view[i] = draw(st.sampled_from(pool))
        shape = draw(st.sampled_from(["changed", "grown", "cut", "new"]))
        if shape == "grown":
            view += draw(st.lists(st.sampled_from(pool), max_size=5))
        elif shape == "cut":
            view = view[: draw(st.integers(0, len(view)))]
        elif shape == "new":
            view = draw(st.lists(st.sampled_from(pool), max_size=30))
        views.append(view)
    return views


@settings(max_examples=200, deadline=None)
@given(views_call_by_call())
def test_the_system_texts_survive_when_some_system_message_holds_each(
    views: list[list[Message]],
) -> None:
    recorder = recorder_of(replay_context())
    recorder.system = ("sys", "system 1")
    for view in views:
        recorder.view.replace(view)
        expected = all(
            any(m.role == "system" and orig in m.content for m in view) for orig in recorder.system
        )
        assert recorder.system_kept() == expected
