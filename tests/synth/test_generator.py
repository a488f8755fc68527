"""The generator: deterministic, valid, and every planted fact sits where its probe says, with
distractors that look alike but never count as the answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbench.formats.canonical import read_traces, write_traces
from ctxbench.pairing import rounds
from ctxbench.probes.model import PROBE_KINDS
from ctxbench.probes.scoring import TextIndex, normalise
from ctxbench.synth import generate, load_scenario, scenario_names
from ctxbench.synth.phrases import opening_phrases
from ctxbench.synth.scenario_file import parse_scenario
from ctxbench.trace import Trace, message_search_text
from ctxbench.validation import validate

#: every embedded scenario (``tests/synth/test_scenario_file.py`` holds the ones that must ship)
SCENARIOS = tuple(scenario_names())


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    """One trace of every embedded scenario (seed 11)."""
    return {name: next(generate(load_scenario(name), 11)) for name in SCENARIOS}


def _indexes(trace: Trace) -> list[TextIndex]:
    return [TextIndex.of(message_search_text(m)) for m in trace.messages]


def _visible_from(trace: Trace) -> list[int]:
    """For each message, the first model call whose prompt contains it."""
    out, calls = [], 0
    for message in trace.messages:
        if message.role == "assistant":
            calls += 1
        out.append(calls)
    return out


# -- determinism ------------------------------------------------------------------------------


def test_same_scenario_and_seed_give_byte_identical_files(tmp_path: Path) -> None:
    spec = load_scenario("sql_agent")
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_traces(a, generate(spec, 5, count=2))
    write_traces(b, generate(load_scenario("sql_agent"), 5, count=2))
    assert a.read_bytes() == b.read_bytes()


def test_a_different_seed_gives_a_different_trace() -> None:
    spec = load_scenario("support_agent")
    one, two = next(generate(spec, 1)), next(generate(spec, 2))
    assert one.content_hash != two.content_hash
    assert [p.answers for p in one.probes] != [p.answers for p in two.probes]


def test_trace_ids_are_stable_and_independent_of_count() -> None:
    spec = load_scenario("support_agent")
    three = list(generate(spec, 4, count=3))
    assert [t.id for t in three] == [
        "support_agent-s4-0",
        "support_agent-s4-1",
        "support_agent-s4-2",
    ]
    assert next(generate(spec, 4, count=1)) == three[0]
    assert len({t.content_hash for t in three}) == 3


def test_generated_traces_round_trip_through_the_canonical_format(
    tmp_path: Path, traces: dict[str, Trace]
) -> None:
    path = tmp_path / "t.jsonl"
    write_traces(path, [traces["cjk_agent"], traces["sql_agent"]])
    assert list(read_traces(path)) == [traces["cjk_agent"], traces["sql_agent"]]


# -- structure --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_embedded_scenario_generates_a_valid_trace(
    name: str, traces: dict[str, Trace]
) -> None:
    trace = traces[name]
    assert validate(trace) == []
    spec = load_scenario(name)
    assert len(trace.call_indices) == spec.rounds + 1  # one call per round, plus the final answer
    # every kind; needed facts where a planted value reaches the agent before it writes it
    assert set(PROBE_KINDS) - {"needed"} <= {p.kind for p in trace.probes}
    assert trace.meta["scenario"] == name and trace.meta["seed"] == 11


@pytest.mark.parametrize("name", SCENARIOS)
def test_traces_are_long_enough_to_force_compaction_at_an_8k_window(
    name: str, traces: dict[str, Trace]
) -> None:
    chars = sum(len(m.content) for m in traces[name].messages)
    assert chars > 4 * 8192 * 4  # several times an 8k window even by a len/4 estimate


def test_the_long_horizon_trace_exceeds_a_128k_window() -> None:
    # measured with the real tokenizer elsewhere (benchmarks/bench_synth.py); len/4 is a lower bound here
    trace = next(generate(load_scenario("long_horizon"), 0))
    assert sum(len(m.content) for m in trace.messages) // 4 > 128_000
    assert len(trace.call_indices) > 300


def test_text_react_traces_use_thought_action_observation(traces: dict[str, Trace]) -> None:
    trace = traces["sql_agent"]
    assert trace.tools == ()  # tools are described in the system prompt, as DB-GPT does
    assert "Action Input:" in trace.messages[0].content
    calls = [m for m in trace.messages if m.role == "assistant"]
    assert all(m.content.startswith("Thought: ") and "\nAction: " in m.content for m in calls)
    assert all(not m.tool_calls for m in calls)
    for call in calls[:-1]:
        payload = call.content.split("\nAction Input: ", 1)[1]
        assert isinstance(json.loads(payload), dict)
    observations = [m for m in trace.messages if m.is_observation]
    assert len(observations) == load_scenario("sql_agent").rounds
    # a round closes at each observation: DB-GPT's segmentation
    assert sum(1 for r in rounds(trace) if trace.messages[r.last].is_observation) == len(
        observations
    )


def test_native_traces_have_parallel_calls_and_tool_schemas(traces: dict[str, Trace]) -> None:
    trace = traces["coding_agent"]
    assert {t.name for t in trace.tools} >= {"bash", "read_file", "edit_file"}
    widths = [len(m.tool_calls) for m in trace.messages if m.role == "assistant"]
    assert max(widths) >= 2 and max(widths) <= load_scenario("coding_agent").parallel.max_calls
    for call in (c for m in trace.messages for c in m.tool_calls):
        assert isinstance(json.loads(call.arguments), dict)


def test_tool_results_carry_their_content_class(traces: dict[str, Trace]) -> None:
    classes = {
        m.meta.get("content_class") for m in traces["sql_agent"].messages if m.is_observation
    }
    assert "tables" in classes
    synth = {m.meta.get("synth_class") for m in traces["sql_agent"].messages if m.is_observation}
    assert {"sql_table", "csv"} <= synth
    assert {
        m.meta.get("content_class") for m in traces["cjk_agent"].messages if m.role == "tool"
    } >= {"cjk", "logs"}


def test_image_parts_are_attached_only_by_the_tools_allowed_to(traces: dict[str, Trace]) -> None:
    sql = traces["sql_agent"]
    with_images = [i for i, m in enumerate(sql.messages) if m.media_parts]
    assert with_images, "save_chart results carry images"
    for i in with_images:
        part = sql.messages[i].media_parts[0]
        assert part.type == "image_url"
        assert part.data["image_url"]["url"].startswith("data:image/png;base64,")
        assert sql.messages[i].is_observation
        assert "Action: save_chart" in sql.messages[i - 1].content
    assert not any(m.media_parts for m in traces["coding_agent"].messages)


def test_very_large_observations_appear_at_their_rate() -> None:
    spec = load_scenario("research_agent")
    large = [m for t in generate(spec, 0, count=3) for m in t.messages if m.meta.get("large")]
    assert large and all(len(m.content) > 40_000 for m in large)


# -- planted facts ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_answer_is_in_its_evidence_and_nowhere_else(
    name: str, traces: dict[str, Trace]
) -> None:
    trace = traces[name]
    indexes = _indexes(trace)
    for probe in trace.probes:
        holding = [i for i, idx in enumerate(indexes) if idx.has_any(probe.answers)]
        if probe.kind == "needed":  # its evidence: the messages before the call that uses it
            holding = [i for i in holding if i < probe.meta["used_at"]]
        assert holding == list(probe.evidence), probe.id
        text = "\n".join(message_search_text(trace.messages[e]) for e in probe.evidence)
        assert all(a in text for a in probe.answers), f"{probe.id}: answer not verbatim"


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_fact_kind_is_planted_where_it_belongs(name: str, traces: dict[str, Trace]) -> None:
    trace = traces[name]
    msgs = trace.messages
    for probe in trace.probes:
        if probe.kind == "needed":  # found in the trace, not planted (tests/probes/test_needed.py)
            continue
        roles = {msgs[e].role for e in probe.evidence}
        planted = probe.meta["planted"]
        if planted == "turn":
            assert roles == {"user"} and min(probe.evidence) > 1, "a user message mid-run"
            assert not any(msgs[e].is_observation for e in probe.evidence)
        elif probe.kind == "constraint":
            assert probe.evidence in ((0,), (1,)), (
                "a rule lives in the system prompt or the first user message"
            )
        elif planted == "argument":  # a tool result may hand the value over first (learned)
            first = next(msgs[e] for e in probe.evidence if msgs[e].role == "assistant")
            assert {msgs[e].role for e in probe.evidence} <= {"assistant", "tool", "user"}
            args = (
                first.content
                if not first.tool_calls
                else " ".join(c.arguments for c in first.tool_calls)
            )
            assert probe.answers[0] in args, "an artifact is a tool-call argument"
        elif planted == "tool":
            assert all(
                m.role == "tool" or m.is_observation for m in (msgs[e] for e in probe.evidence)
            )
        elif planted == "assistant":
            assert roles == {"assistant"}
            assert all(probe.answers[0] in msgs[e].content for e in probe.evidence)
        elif planted == "user":
            assert roles == {"user"} and not any(msgs[e].is_observation for e in probe.evidence)


@pytest.mark.parametrize("name", SCENARIOS)
def test_superseded_values_change_later_and_the_old_one_is_stale(
    name: str, traces: dict[str, Trace]
) -> None:
    trace = traces[name]
    indexes = _indexes(trace)
    for probe in (p for p in trace.probes if p.kind == "superseded"):
        assert probe.stale_answers and probe.stale_answers != probe.answers
        old_at = [i for i, idx in enumerate(indexes) if idx.has_any(probe.stale_answers)]
        assert old_at == probe.meta["stale_evidence"]
        assert max(old_at) < min(probe.evidence), "the new value comes after the old one"


@pytest.mark.parametrize("name", SCENARIOS)
def test_distractors_are_near_duplicates_that_never_count_as_answers(
    name: str, traces: dict[str, Trace]
) -> None:
    trace = traces[name]
    indexes = _indexes(trace)
    with_distractors = [p for p in trace.probes if p.meta.get("distractors")]
    assert with_distractors
    for probe in with_distractors:
        for dup in probe.meta["distractors"]:
            assert dup not in probe.answers and len(dup) == len(probe.answers[0])
            assert sum(a != b for a, b in zip(dup, probe.answers[0])) <= 2  # one swap or one digit
            assert not TextIndex.of(dup).has_any(probe.answers)
            found = [i for i, idx in enumerate(indexes) if idx.has(dup)]
            assert found and not set(found) & set(probe.evidence), "planted elsewhere than the fact"


def test_facts_are_planted_early_middle_and_late(traces: dict[str, Trace]) -> None:
    for name in SCENARIOS:
        positions = {p.meta["position"] for p in traces[name].probes}
        assert {"early", "middle", "late"} <= positions, name
        n = len(traces[name].messages)
        firsts = sorted(p.evidence[0] for p in traces[name].probes if p.meta["position"] != "start")
        assert firsts[0] < n / 3 and firsts[-1] > 2 * n / 3


def test_probes_are_asked_at_the_end_and_mid_trace_after_their_evidence() -> None:
    spec = load_scenario("coding_agent")
    asked_mid = asked_end = 0
    for trace in generate(spec, 3, count=3):
        visible = _visible_from(trace)
        n_calls = len(trace.call_indices)
        for probe in trace.probes:
            if probe.ask_at is None:
                asked_end += 1
                continue
            asked_mid += 1
            assert visible[max(probe.evidence)] <= probe.ask_at < n_calls, probe.id
    assert asked_mid and asked_end


def test_continuation_probes_are_asked_before_the_plan_runs_out() -> None:
    spec = load_scenario("long_horizon")
    for trace in generate(spec, 2):
        visible = _visible_from(trace)
        for probe in (p for p in trace.probes if p.kind == "continuation"):
            if probe.ask_at is None:
                assert probe.evidence == (len(trace.messages) - 1,), (
                    "the final plan is asked at the end"
                )
            else:
                assert (
                    1 <= probe.ask_at - visible[probe.evidence[0]] <= max(2, spec.rounds // 6) + 1
                )


# -- property ---------------------------------------------------------------------------------

SMALL = {
    "schema": "ctxbench.scenario/1",
    "name": "small",
    "rounds": 12,
    "domain": "support",
    "parallel": {"probability": 0.5, "max_calls": 3},
    "output": {
        "json": {"weight": 2, "median_chars": 300},
        "csv": {"weight": 1, "median_chars": 300},
        "cjk": {"weight": 1, "median_chars": 200},
    },
    "images": {"probability": 0.2},
    "large": {"probability": 0.05, "median_chars": 3000},
    "probes": {k: 1 for k in PROBE_KINDS if k != "needed"} | {"distractors": 2, "mid_trace": 0.5},
    "tools": [
        {
            "name": "get_reservation_details",
            "produces": ["json"],
            "parameters": {
                "type": "object",
                "required": ["reservation_id"],
                "properties": {"reservation_id": {"type": "string"}},
            },
        },
        {
            "name": "refund_payment",
            "parameters": {
                "type": "object",
                "properties": {"payment_id": {"type": "string"}, "amount": {"type": "number"}},
            },
        },
    ],
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**40), react=st.booleans())
def test_generated_traces_validate_for_any_seed(seed: int, react: bool) -> None:
    data = dict(SMALL)
    if react:
        data = {**data, "format": "react_text", "parallel": {}}
    spec = parse_scenario(data, source="<small>")
    trace = next(generate(spec, seed))
    assert validate(trace) == []
    indexes = _indexes(trace)
    for probe in trace.probes:
        holding = [i for i, idx in enumerate(indexes) if idx.has_any(probe.answers)]
        if probe.kind == "needed":  # the messages before the call that uses it
            holding = [i for i in holding if i < probe.meta["used_at"]]
        assert holding == list(probe.evidence)


def test_every_embedded_scenario_is_listed_with_a_unique_name() -> None:
    names = scenario_names()
    assert len(names) == len(set(names)) and set(SCENARIOS) <= set(names)


def test_explicit_scenario_facts_are_planted_as_written() -> None:
    facts = [
        {
            "kind": "recall",
            "question": "Which code?",
            "value": "ZX-{d4}",
            "text": "code {value} seen",
            "position": "late",
            "ask": "mid",
        },
        {
            "kind": "artifact",
            "question": "Which payment?",
            "value": "PAY-{d6}",
            "tool": "refund_payment",
            "argument": "payment_id",
            "position": "early",
            "ask": "end",
        },
    ]
    spec = parse_scenario({**SMALL, "probes": {"distractors": 0}, "facts": facts}, source="<small>")
    trace = next(generate(spec, 0))
    recall, artifact, task, system = trace.probes
    assert (task.kind, task.evidence, system.kind, system.evidence) == (
        "task",
        (1,),
        "constraint",
        (0,),
    )
    assert (
        recall.id == "recall-1"
        and recall.answers[0].startswith("ZX-")
        and recall.meta["position"] == "late"
    )
    assert recall.ask_at is not None
    assert artifact.ask_at is None and artifact.meta["position"] == "early"
    (call,) = trace.messages[artifact.evidence[0]].tool_calls
    assert (
        call.name == "refund_payment"
        and json.loads(call.arguments)["payment_id"] == artifact.answers[0]
    )


# -- probes on the opening ------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_trace_asks_about_its_task_and_its_system_prompt(
    name: str, traces: dict[str, Trace]
) -> None:
    """The task probe's answer is in the first user message and nowhere else, the system
    probe's in the system prompt and nowhere else: dropping either loses exactly that."""
    trace = traces[name]
    by_id = {p.id: p for p in trace.probes}
    for probe_id, kind, index in (("task-1", "task", 1), ("system-1", "constraint", 0)):
        probe = by_id[probe_id]
        assert probe.kind == kind and probe.evidence == (index,) and probe.ask_at is None
        answer = normalise(probe.answers[0])
        holders = [i for i, m in enumerate(trace.messages) if answer in normalise(m.content)]
        assert holders == [index]
    assert not by_id["system-1"].answers[0].lower().startswith("you are")


def test_opening_probe_counts_and_repeat_are_scenario_knobs() -> None:
    base = parse_scenario(SMALL, source="<small>")
    more = parse_scenario(
        {
            **SMALL,
            "probes": {
                **cast("dict[str, Any]", SMALL["probes"]),
                "repeat": 3,
                "task": 2,
                "system": 0,
            },
        },
        source="<small>",
    )
    plain, repeated = next(generate(base, 0)), next(generate(more, 0))
    kinds = [p.kind for p in repeated.probes]
    assert kinds.count("task") == 2 and not any(p.id.startswith("system") for p in repeated.probes)
    assert kinds.count("recall") == 3 * [p.kind for p in plain.probes].count("recall")
    assert len(repeated.probes) > 2 * len(plain.probes)
    assert len({p.id for p in repeated.probes}) == len(repeated.probes)
    planted = [p for p in repeated.probes if p.kind != "needed"]  # a needed probe asks a
    assert len({p.answers[0] for p in planted}) == len(planted)  # planted value at its use
    assert more.probe_counts()["task"] == 2 and more.probe_counts()["recall"] == 3


def test_opening_phrases_skip_the_identity_sentence_and_short_clauses() -> None:
    text = "You are an agent. Never delete data, ask first. Keep every reply under ten words."
    # "Never delete data" has three words: too short to ask about; "ask first" too
    assert opening_phrases(text, "en", rules=True) == ["Keep every reply under ten words"]
    assert opening_phrases(text, "en")[0] == "Keep every reply under ten words"
    assert opening_phrases("只用一句话。请在修改数据库之前先确认备份", "zh") == [
        "请在修改数据库之前先确认备份"
    ]
