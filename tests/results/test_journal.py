"""A journal record: one JSON line whose events each stand after a tab, so the events file is
written from it without decoding them; the text is what ``json.dumps`` would write."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.engine.events import Event, event_line, event_of
from ctxbench.engine.result import RunResult
from ctxbench.jsontext import compact_json
from ctxbench.results.journal import EVENT_MARK, record_line, split_record
from tests.factories import tool_trace


def _run() -> tuple[RunResult, tuple[Event, ...]]:
    trace = tool_trace(6)
    spec = resolve_spec(
        RunSpec(trace_id=trace.id, trace_hash=trace.content_hash, strategy="none", window=8000)
    )
    output = run_spec(spec, trace)
    return output.result, output.events


def test_a_record_of_events_is_the_record_of_their_dicts() -> None:
    result, events = _run()
    assert record_line(result, events) == record_line(result, [e.to_dict() for e in events])


def test_a_record_splits_into_its_row_and_each_events_text() -> None:
    result, events = _run()
    line = record_line(result, events)
    parts = split_record(line + "\n")
    assert parts is not None
    row, texts = parts
    assert row == json.loads(line)["row"]
    assert [json.loads(t) for t in texts] == [e.to_dict() for e in events]
    assert [event_line(Event.from_dict(json.loads(t))) for t in texts] == texts


def test_a_tab_or_a_comma_in_an_events_text_does_not_split_it() -> None:
    result, _ = _run()
    tricky = event_of(
        "strategy.note", {"text": "a,\tb", "nested": {"k": [1, ",\t"]}}, step=0, call=0
    )
    parts = split_record(record_line(result, [tricky, tricky]))
    assert parts is not None
    assert [json.loads(t) for t in parts[1]] == [tricky.to_dict()] * 2


def test_a_record_without_events_is_decoded_whole() -> None:
    result, _ = _run()
    line = record_line(result, [])
    assert EVENT_MARK not in line
    assert split_record(line) is None
    assert json.loads(line)["events"] == []


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_the_compact_encoder_writes_what_json_dumps_writes(value: Any) -> None:
    assert compact_json(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@given(st.dictionaries(st.sampled_from(["a", "b", "note", "x"]), JSON, max_size=4))
def test_an_events_text_is_its_dicts_json(data: dict[str, Any]) -> None:
    event = event_of("strategy.note", data, step=3, call=2)
    assert event.to_json() == compact_json(event.to_dict())
