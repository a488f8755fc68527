"""The context view: its totals, keys and cached prefix are those of its messages, however it
got them (appends, replaces keeping a head and a tail, rewrites, drops)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.counting import get_counter
from ctxbench.engine.view import ContextView, _Held
from ctxbench.trace import Message
from tests.test_pairing import chunks_of

CHARS4 = get_counter("chars4")
WORDS = get_counter("dbgpt")


@dataclass
class Naive:
    """The view as its definition reads: every total summed from the messages."""

    messages: list[Message] = field(default_factory=list)
    marked: int = 0
    dirty_from: int = 1 << 62

    def replace(self, new: list[Message]) -> None:
        k = 0
        while k < min(len(self.messages), len(new)) and (
            self.messages[k].fingerprint == new[k].fingerprint
        ):
            k += 1
        self.dirty_from = min(self.dirty_from, k)
        self.messages = list(new)

    def cached(self, with_reply: bool) -> int:
        marked = self.marked + (with_reply and self.marked > 0)
        prefix = min(self.dirty_from, marked, len(self.messages))
        if prefix == 0:
            return 0
        return CHARS4.prompt_overhead(()) + sum(
            CHARS4.count_message(m) for m in self.messages[:prefix]
        )


@st.composite
def edits(draw: st.DrawFn, messages: list[Message]) -> list[Message]:
    """``messages`` with a run dropped, some rewritten, some inserted, or as they are."""
    out = list(messages)
    drop: bool = draw(st.booleans())
    if out and drop:
        i = draw(st.integers(0, len(out) - 1))
        del out[i : draw(st.integers(i, len(out)))]
    for i in range(len(out)):
        if draw(st.integers(0, 4)) == 0:
            out[i] = out[i].with_text(draw(st.sampled_from([out[i].content, "short", "x" * 90])))
    if draw(st.booleans()):
        out.insert(draw(st.integers(0, len(out))), Message("user", draw(st.text(max_size=20))))
    return out


@st.composite
def rebuilt(draw: st.DrawFn, earlier: list[Message]) -> list[Message]:
    """An earlier list again, a few places rewritten and messages added at its end (DB-GPT
    0.8.2 rebuilding the last call's prompt)."""
    out = list(earlier)
    for _ in range(draw(st.integers(0, 2))):
        if out:
            i = draw(st.integers(0, len(out) - 1))
            out[i] = out[i].with_text(f"rebuilt {draw(st.integers(0, 9))}")
    return out + [Message("user", f"more {i}") for i in range(draw(st.integers(0, 3)))]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_totals_keys_and_cached_prefix_are_those_of_the_messages(data: st.DataObject) -> None:
    view, naive = ContextView(WORDS, CHARS4), Naive()
    held: list[list[Message]] = []
    for i in range(data.draw(st.integers(0, 40))):
        message = Message("user" if i % 2 else "assistant", "w " * (i % 7) + str(i))
        view.append(message)
        naive.messages.append(message)
    for step in range(data.draw(st.integers(1, 12))):
        action = data.draw(st.sampled_from(["append", "replace", "replace", "rebuild", "mark"]))
        if action == "rebuild" and held:
            new = data.draw(rebuilt(data.draw(st.sampled_from(held))))
            view.replace(new)
            naive.replace(new)
        elif action == "append":
            message = Message("assistant", data.draw(st.text(max_size=40)) + f" {step}")
            view.append(message)
            naive.messages.append(message)
        elif action in ("replace", "rebuild"):
            held.append(list(naive.messages))
            new = data.draw(edits(naive.messages))
            view.replace(new)
            naive.replace(new)
        else:
            view.mark_sent()
            naive.marked, naive.dirty_from = len(naive.messages), 1 << 62
        assert list(view) == naive.messages
        assert view.keys == [m.fingerprint for m in naive.messages]
        assert view.estimated_tokens == view.est_overhead + sum(
            WORDS.count_message(m) for m in naive.messages
        )
        assert view.true_tokens == view.true_overhead + sum(
            CHARS4.count_message(m) for m in naive.messages
        )
        for with_reply in (False, True):
            assert view.cached_prefix_tokens(with_reply=with_reply) == naive.cached(with_reply)


def test_a_rebuilt_list_takes_the_counts_of_the_list_it_repeats_but_where_it_differs() -> None:
    view = ContextView(WORDS, CHARS4)
    history = [Message("user", "word " * (i % 5 + 1) + str(i)) for i in range(40)]
    view.replace(history)
    view.replace(history[30:])  # a compaction
    rebuilt = [history[0].with_text("new system prompt"), *history[1:], Message("user", "next")]
    view.replace(rebuilt)  # the history rebuilt: place by place the list before last
    assert view.keys == [m.fingerprint for m in rebuilt]
    assert view.estimated_tokens == view.est_overhead + sum(map(WORDS.count_message, rebuilt))
    assert view.true_tokens == view.true_overhead + sum(map(CHARS4.count_message, rebuilt))


def test_a_run_dropped_from_the_middle_keeps_the_head_and_tail_counts() -> None:
    view = ContextView(WORDS, CHARS4)
    messages = [Message("user", "word " * (i + 1)) for i in range(10)]
    for message in messages:
        view.append(message)
    view.replace([*messages[:2], *messages[7:]])
    assert view.keys == [m.fingerprint for m in [*messages[:2], *messages[7:]]]
    assert view.true_tokens == view.true_overhead + sum(
        CHARS4.count_message(m) for m in [*messages[:2], *messages[7:]]
    )


def test_the_view_shows_a_list_of_its_messages_in_order_and_no_other() -> None:
    view = ContextView(WORDS, CHARS4)
    first, second = Message("user", "one"), Message("assistant", "two")
    view.replace([first, second])
    assert view.shows([first, second])
    assert view.shows((Message("user", "one"), second))  # equal messages are the same prompt
    assert not view.shows([second, first])
    assert not view.shows([first])


@st.composite
def aligned_pairs(draw: st.DrawFn) -> tuple[Sequence[Message], list[Message]]:
    """A list the view held (a list, or a prompt's tuple) and a new one that repeats it place
    by place but for a few places (rewritten, or an equal copy of the same message), cut or
    grown at its end."""
    pool = [
        Message(role, f"{role} {i} " * (i % 4 + 1)) for role in ("user", "tool") for i in range(6)
    ]
    old = draw(
        st.lists(st.sampled_from(pool), min_size=draw(st.sampled_from([0, 16])), max_size=70)
    )
    new = list(old)
    for i in draw(st.lists(st.integers(0, 80), max_size=draw(st.sampled_from([2, 8])))):
        if i < len(new):
            how = draw(st.sampled_from(["rewritten", "copy", "other"]))
            if how == "rewritten":
                new[i] = new[i].with_text(f"rewritten {draw(st.integers(0, 3))}")
            elif how == "copy":  # equal, not the same object
                new[i] = Message(new[i].role, new[i].content)
            else:
                new[i] = draw(st.sampled_from(pool))
    if draw(st.booleans()):
        new = new[: draw(st.integers(min(16, len(new)), len(new)))]
    new += draw(st.lists(st.sampled_from(pool), max_size=4))
    return (tuple(old) if draw(st.booleans()) else old), new


@settings(max_examples=400, deadline=None)
@given(aligned_pairs(), st.integers(1, 40))
def test_a_list_aligned_on_an_earlier_one_has_the_counts_and_keys_worked_out_whole(
    pair: tuple[Sequence[Message], list[Message]], chunk: int
) -> None:
    """The counts carried from the earlier list (only the places that may differ read, a
    chunk at a time, or a short list in one pass) are those of the new list's messages, or
    the list is not aligned."""
    old, new = pair
    view = ContextView(WORDS, CHARS4)
    whole = [(WORDS.count_message(m), CHARS4.count_message(m)) for m in old]
    held = _Held(
        old,
        [e for e, _ in whole],
        [t for _, t in whole],
        [m.fingerprint for m in old],
        sum(e for e, _ in whole),
        sum(t for _, t in whole),
    )
    with chunks_of(chunk):
        carried = view._aligned(new, held)
    n = min(len(old), len(new))
    near = n >= 16 and all(new[i] is old[i] for i in (n // 4, n // 2, n - 1 - n // 4))
    differ = sum(a is not b for a, b in zip(old, new))
    if near and differ <= n // 16:
        assert carried is not None  # read from the earlier list
    if carried is None:
        assert not near or differ > n // 16
        return
    assert carried.messages is new
    assert carried.est == [WORDS.count_message(m) for m in new]
    assert carried.true == [CHARS4.count_message(m) for m in new]
    assert carried.keys == [m.fingerprint for m in new]
    assert (carried.est_sum, carried.true_sum) == (sum(carried.est), sum(carried.true))
