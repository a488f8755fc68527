"""Events are typed: one frozen, slotted class per event type, each line of an events file
decoded back into its class (an unknown type kept as it was read), the same bytes both ways."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ctxbench.engine import events as ev
from ctxbench.jsontext import compact_json
from tests.factories import replay_context

#: one line of each type, as the replay and the answerer write them
LINES = (
    '{"type":"context.status","used":10,"budget":100,"ratio":0.1,"state":"normal","compact_layer":null,"call":0,"step":0}',
    '{"type":"compaction","layer":"l1","est_before":9,"est_after":5,"true_before":10,"true_after":6,"messages_before":4,"messages_after":3,"dropped":1,"changed":0,"added":0,"dropped_messages":[[1,1]],"pairing_violations":0,"system_kept":true,"note":"","call":2,"step":5}',
    '{"type":"provider.call","attempt":0,"estimated_tokens":9,"true_tokens":10,"limit":100,"ok":false,"error":"too long","error_kind":"overflow","cached_tokens":0,"messages":3,"call":1,"step":2}',
    '{"type":"call.failed","true_tokens":200,"limit":100,"attempts":2,"kind":"overflow","call":3,"step":7}',
    '{"type":"call.failed","true_tokens":20,"limit":100,"attempts":1,"kind":"aborted","error":"RuntimeError: x","call":3,"step":7}',
    '{"type":"summary","layer":"l3","ok":true,"input_tokens":30,"output_tokens":5,"error":null,"source":"fallback:model_like","why":"none recorded","call":4,"step":8}',
    '{"type":"summary","layer":"l3","ok":false,"input_tokens":30,"output_tokens":0,"error":"crash: x","call":4,"step":8}',
    '{"type":"snapshot","path":"a/b.json","bytes":12,"sha256":"ab","call":1,"step":3}',
    '{"type":"probe","probe_id":"p1","kind":"path","outcome":"in_context","bare":true,"call":5,"step":9}',
    '{"type":"probe","probe_id":"p2","kind":"path","outcome":"lost","reason":"after_failure","call":5,"step":10}',
    '{"type":"probe","probe_id":"p3","kind":"path","outcome":"stale","call":5,"step":11}',
    '{"type":"recorded.compaction","trigger":"auto","pre_tokens":1000,"source":"claude_code","note":"n","call":6,"step":12}',
    '{"type":"open_loop.break","value":"x.py","source_message":3,"message":9,"call":6,"step":13}',
    '{"type":"probe.answer","probe_id":"p1","kind":"path","question":"q?","answer":"a","verdict":"answered","outcome":"in_context","prompt_tokens":10,"completion_tokens":2,"call":5,"step":14}',
    '{"type":"next_action","trigger":"sample","agree":true,"uncompacted":{"tool":"ls","args":{}},"compacted":{"tool":"ls","args":{}},"uncompacted_answer":"a","compacted_answer":"b","prompt_tokens":3,"completion_tokens":4,"call":2,"step":15}',
    '{"type":"shipped","release":"agentscope==2.0.11","framework_version":"2.0.11","env_hash":"h","driver":"d.py","notes":["n"],"call":0,"step":0}',
    '{"type":"shipped.call","layers":["a"],"info":{"k":1},"exception":null,"call":0,"step":1}',
    '{"type":"strategy.decision","tokens":10,"threshold":20,"anchored":false,"compact":false,"call":0,"step":1}',
    '{"type":"strategy.error","strategy":"dbgpt","layer":"layer3","error":"e","call":1,"step":4}',
    '{"type":"strategy.error","strategy":"agentscope","error":"e","call":1,"step":4}',
    '{"type":"strategy.skipped","strategy":"hermes","reason":"ineffective","trigger":"overflow","ineffective":2,"fallback_streak":0,"call":1,"step":4}',
    '{"type":"strategy.skipped","strategy":"hermes","reason":"ineffective","ineffective":2,"fallback_streak":0,"call":1,"step":4}',
)


@pytest.mark.parametrize("line", LINES, ids=[json.loads(x)["type"] for x in LINES])
def test_a_line_decodes_to_its_class_and_encodes_to_the_same_bytes(line: str) -> None:
    event = ev.decode(line)
    assert type(event) is ev.EVENT_CLASSES[event.type]
    assert event.to_json() == line
    assert ev.event_line(event) == line
    assert event.to_json() == compact_json(event.to_dict())


def test_every_event_type_has_a_class_and_a_line_here() -> None:
    assert {json.loads(x)["type"] for x in LINES} == set(ev.EVENT_CLASSES)
    assert set(ev.EVENT_TYPES) <= set(ev.EVENT_CLASSES)


def test_events_are_frozen_and_slotted() -> None:
    event = ev.decode(LINES[8])
    assert isinstance(event, ev.ProbeScored)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.outcome = "lost"  # type: ignore[misc]
    assert not hasattr(event, "__dict__")


def test_fields_read_as_attributes_and_through_the_transitional_dict() -> None:
    event = ev.decode(LINES[9])
    assert isinstance(event, ev.ProbeScored)
    assert (event.probe_id, event.outcome, event.reason, event.bare) == (
        "p2",
        "lost",
        ev.AFTER_FAILURE,
        False,
    )
    assert event.type == ev.PROBE
    assert event.data == {
        "probe_id": "p2",
        "kind": "path",
        "outcome": "lost",
        "reason": "after_failure",
    }
    assert event["outcome"] == "lost"


def test_an_unknown_type_is_kept_as_read() -> None:
    line = '{"type":"strategy.note","text":"a","nested":{"k":[1]},"call":2,"step":3}'
    event = ev.decode(line)
    assert isinstance(event, ev.UnknownEvent)
    assert (event.type, event.call, event.step, event.data) == (
        "strategy.note",
        2,
        3,
        {"text": "a", "nested": {"k": [1]}},
    )
    assert event.to_json() == line


def test_a_field_missing_from_an_older_line_reads_as_its_default_or_zero() -> None:
    event = ev.decode('{"type":"provider.call","attempt":1,"ok":false,"call":1,"step":0}')
    assert isinstance(event, ev.ProviderCall)
    assert (event.attempt, event.true_tokens, event.error_kind, event.cached_tokens) == (
        1,
        0,
        None,
        0,
    )
    probe = ev.decode('{"type":"probe","probe_id":"p","call":1,"step":0}')
    assert isinstance(probe, ev.ProbeScored) and (probe.kind, probe.outcome) == ("", "")


def test_a_known_type_with_a_field_its_class_lacks_is_kept_as_read() -> None:
    line = '{"type":"probe","probe_id":"p","kind":"k","outcome":"lost","x":1,"call":1,"step":0}'
    extra = ev.decode(line)
    assert isinstance(extra, ev.UnknownEvent)
    assert extra.data["x"] == 1 and extra.to_json() == line


def test_a_run_id_before_the_event_is_not_part_of_it() -> None:
    event = ev.decode(
        '{"run_id":"r1","type":"snapshot","path":"a","bytes":1,"sha256":"","call":0,"step":0}'
    )
    assert isinstance(event, ev.Snapshot)
    assert ev.event_line(event, run_id="r1").startswith('{"run_id":"r1","type":"snapshot"')


def test_stamping_sets_the_step_and_call_only() -> None:
    event = ev.OpenLoopBreak(value="v", source_message=1, message=2)
    assert (event.step, event.call) == (-1, -1)
    stamped = event.stamped(4, 7)
    assert (stamped.step, stamped.call, stamped.value) == (4, 7, "v")


def test_optional_fields_are_written_only_when_set() -> None:
    plain = ev.CallFailed(true_tokens=1, limit=2, attempts=1)
    assert "error" not in plain.data
    assert ev.CallFailed(true_tokens=1, limit=2, attempts=1, error="").data["error"] == ""
    assert "source" not in ev.Summary(layer="l", ok=True, input_tokens=1, output_tokens=1).data


def test_emit_stamps_an_event_object_with_the_call_and_the_next_step() -> None:
    ctx = replay_context()
    first = ctx.emit(ev.StrategyDecision(tokens=5, threshold=9))
    ctx.call = 3
    second = ctx.emit(ev.OpenLoopBreak(value="v", source_message=0, message=1))
    assert (first.step, first.call, second.step, second.call) == (0, 0, 1, 3)
    assert ctx.events == [first, second]


def test_emit_by_type_name_records_the_types_class_else_an_unknown_event() -> None:
    """How a plug-in's own ``strategy.*`` events (and code written before the classes) emit."""
    ctx = replay_context()
    known = ctx.emit(ev.STRATEGY_ERROR, strategy="mine", error="boom")
    own = ctx.emit("strategy.note", text="kept")
    assert isinstance(known, ev.StrategyError) and known.error == "boom"
    assert isinstance(own, ev.UnknownEvent)
    assert own.to_json() == '{"type":"strategy.note","text":"kept","call":0,"step":1}'


def test_an_event_still_reads_as_its_dict_for_readers_written_before_the_classes() -> None:
    event = ev.decode(LINES[4])
    assert (event["type"], event["call"], event["error"]) == ("call.failed", 3, "RuntimeError: x")
    assert "error" in event and "layer" not in event
