"""An event's JSON line is written once for the events holding the same values, and is the
line the general encoder writes whatever was written before: equal values of another type
(``1``, ``1.0``, ``True``), ``-0.0`` and ``0.0``, lists and tuples, values no key holds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.engine import events as ev
from ctxbench.event_json import EventTexts
from ctxbench.jsontext import compact_json


def _status(ratio: Any, used: Any = 10, layer: Any = None, step: int = 0) -> ev.ContextStatus:
    return ev.ContextStatus(
        used=used, budget=100, ratio=ratio, state="normal", compact_layer=layer
    ).stamped(step, 1)


def _compaction(dropped: Any, changed: Any = 0, step: int = 0) -> ev.Compaction:
    return ev.Compaction(
        layer="layer2",
        est_before=9,
        est_after=5,
        true_before=10,
        true_after=6,
        messages_before=4,
        messages_after=3,
        dropped=1,
        changed=changed,
        dropped_messages=dropped,
    ).stamped(step, 2)


def _general(event: ev.Event) -> str:
    return compact_json(event.to_dict())


def test_a_repeated_event_is_written_as_the_first_with_its_own_call_and_step() -> None:
    first, again = _status(0.25, step=3), _status(0.25, step=9)
    assert first.to_json() == _general(first)
    assert again.to_json() == _general(again)
    assert again.to_json().endswith(',"call":1,"step":9}')


def test_equal_values_of_other_types_are_written_apart() -> None:
    # 1 == 1.0 == True, but each has its own text
    events = [_status(1.0), _status(1), _status(True), _status(0.0), _status(-0.0), _status(0)]
    texts = [e.to_json() for e in events]
    assert texts == [_general(e) for e in events]
    assert '"ratio":-0.0' in texts[4] and '"ratio":0.0' in texts[3] and '"ratio":0,' in texts[5]


def test_lists_and_tuples_with_equal_items_are_written_as_their_items() -> None:
    events = [
        _compaction([[1, 3], [7, 7]]),
        _compaction(((1, 3), (7, 7))),
        _compaction([[1.0, 3], [7, 7]]),
        _compaction([[-0.0, 3]]),
        _compaction([[0.0, 3]]),
        _compaction([]),
        _compaction(()),
    ]
    assert [e.to_json() for e in events] == [_general(e) for e in events]


def test_values_no_key_holds_are_written_each_time() -> None:
    class Ratio(float):  # a subclass: written by the encoder, not kept
        pass

    texts = EventTexts(compact_json)
    plan = ev._json_plan(ev.ContextStatus)
    assert plan is not None
    for ratio in (Ratio(-0.0), Ratio(0.0)):
        event = _status(ratio)
        assert texts.text(event, plan) == _general(event)
    assert len(texts) == 0


def test_the_texts_kept_are_bounded() -> None:
    texts = EventTexts(compact_json, limit=4)
    plan = ev._json_plan(ev.ContextStatus)
    assert plan is not None
    for used in range(10):
        event = _status(0.5, used=used)
        assert texts.text(event, plan) == _general(event)
        assert len(texts) <= 4


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, float("inf")]),
    st.text(max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            _SCALARS,
            _SCALARS,
            st.lists(st.lists(_SCALARS, max_size=2), max_size=2),
            st.booleans(),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_sequence_of_events_is_written_as_the_general_encoder_writes_it(
    values: list[tuple[Any, Any, list[list[Any]], bool]],
) -> None:
    texts = EventTexts(compact_json)
    plans = ev._json_plan(ev.ContextStatus), ev._json_plan(ev.Compaction)
    for step, (a, b, nested, tupled) in enumerate(values):
        dropped: Any = tuple(map(tuple, nested)) if tupled else nested
        for event, plan in zip((_status(a, used=b, step=step), _compaction(dropped, a)), plans):
            assert plan is not None
            assert texts.text(event, plan) == _general(event)
