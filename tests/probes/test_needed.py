"""Needed facts: values the agent writes in a later action after learning them from the user or
a tool; the uses the replay checks and the probes asked at the call that uses them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ctxbench.formats.importing import open_source
from ctxbench.probes.mining import mine_probes
from ctxbench.probes.needed import (
    MIN_GAP,
    action_values,
    needed_probes,
    needed_uses,
    used_after,
)
from ctxbench.synth import generate, load_scenario
from ctxbench.trace import Message, ToolCall, Trace


def call(i: int, name: str, **arguments: object) -> Message:
    return Message("assistant", "", tool_calls=(ToolCall(f"c{i}", name, json.dumps(arguments)),))


def result(i: int, text: str) -> Message:
    return Message("tool", text, tool_call_id=f"c{i}", name="tool")


def airline_trace() -> Trace:
    """The user gives an id, a tool result a reservation; the agent uses both rounds later."""
    return Trace(
        "airline",
        (
            Message("system", "You are an airline agent. Policy id POL-2024-77."),
            Message("user", "Hi, my user id is mia_li_3668."),
            call(0, "get_user_details", user_id="mia_li_3668"),  # too soon: gap 1
            result(0, '{"reservations": ["ZFA04Y", "NM1VX1"], "email": "mia@example.com"}'),
            call(1, "search", origin="JFK", destination="SEA", date="2024-05-20"),
            result(1, '[{"flight_number": "HAT069"}]'),
            call(2, "note", description="Looking up mia_li_3668 reservation ZFA04Y"),
            result(2, "ok"),
            call(3, "cancel_reservation", reservation_id="ZFA04Y", user_id="mia_li_3668"),
            result(3, "cancelled"),
            call(4, "check_policy", policy="POL-2024-77", flight="HAT069"),
            result(4, "ok"),
            Message("assistant", "Done: reservation ZFA04Y is cancelled."),
        ),
    )


def test_a_value_learned_from_the_user_or_a_tool_and_used_later_is_a_use() -> None:
    uses = {(u.value, u.message): u for u in needed_uses(airline_trace())}
    user_id = uses[("mia_li_3668", 8)]
    assert (user_id.source, user_id.call, user_id.category) == (1, 3, "identifier")
    reservation = uses[("ZFA04Y", 8)]
    assert reservation.source == 3 and reservation.call == 3
    assert uses[("ZFA04Y", 12)].call == 5, "the answer to the user uses it too"
    assert uses[("HAT069", 10)].source == 5


def test_what_the_agent_did_not_learn_or_used_at_once_is_not_a_use() -> None:
    values = {(u.value, u.message) for u in needed_uses(airline_trace())}
    assert ("mia_li_3668", 2) not in values, f"used {MIN_GAP - 2} messages after: tests nothing"
    assert not any(v == "POL-2024-77" for v, _ in values), "the system prompt always holds it"
    assert not any(v == "2024-05-20" for v, _ in values), "the agent wrote it first"
    assert not any(m == 6 for _, m in values), "a free-text description is the agent's prose"


def test_the_needed_facts_of_a_compaction_are_later_values_the_history_held() -> None:
    before = [
        Message("system", "the repo is /h/p/secret.txt"),
        Message("user", "work on PROJ-1234"),
        result(0, "lib/a.ex lib/b.ex"),
        Message("assistant", "I will edit lib/c.ex"),
    ]
    after = [
        call(1, "Bash", command="bd close PROJ-1234"),
        call(2, "Read", file_path="lib/b.ex"),
        call(3, "Read", file_path="/h/p/secret.txt"),  # only the system prompt held it
        call(4, "Read", file_path="lib/new.ex"),  # never seen before
        Message("user", "also lib/a.ex"),  # the user's, not the agent's
        call(5, "Edit", file_path="lib/c.ex", old_string="lib/a.ex", new_string="x"),
        call(6, "Read", file_path="lib/b.ex"),  # once, in the order of first use
    ]
    assert used_after(before, after) == ("PROJ-1234", "lib/b.ex", "lib/c.ex")
    assert used_after(before, after, limit=1) == ("PROJ-1234",)


def test_values_are_read_from_nested_arguments_commands_and_text() -> None:
    message = Message(
        "assistant",
        "I will edit `src/app/models.py` now.",
        tool_calls=(
            ToolCall(
                "c",
                "book",
                json.dumps(
                    {
                        "flights": [{"flight_number": "HAT069"}],
                        "payment": {"payment_id": "credit_card_4421486"},
                        "command": "cd /testbed && grep -n parse lib/io/reader.py 2>&1",
                        "description": "see docs/notes/README.md",
                        "line": 1475,
                        "cabin": "business",
                    }
                ),
            ),
        ),
    )
    found = dict(action_values(message))
    assert found["HAT069"] == "identifier"
    assert found["credit_card_4421486"] == "identifier"
    assert found["lib/io/reader.py"] == "path"
    assert found["src/app/models.py"] == "path"
    assert "docs/notes/README.md" not in found, "the description is prose"
    assert "1475" not in found, "a line number says where, not what"
    assert "business" not in found and "/testbed" not in found, "plain words and directories"


def test_trivia_paths_are_not_values() -> None:
    message = call(
        0,
        "bash",
        command="cat /usr/lib/python3.11/site-packages/numpy/core/numeric.py text/html a/b",
    )
    assert list(action_values(message)) == []


def test_a_path_learned_relative_counts_when_used_absolute() -> None:
    trace = Trace(
        "paths",
        (
            Message("user", "Fix the parser."),
            call(0, "bash", command="find . -name '*.py'"),
            result(0, "./src/app/parser.py\n./src/app/models.py"),
            call(1, "bash", command="ls"),
            result(1, "README.md"),
            call(2, "bash", command="cat /repo/src/app/parser.py"),
            result(2, "def parse(): ..."),
        ),
    )
    [use] = [u for u in needed_uses(trace) if u.value == "/repo/src/app/parser.py"]
    assert use.source == 2 and use.message == 5


def test_needed_probes_are_asked_at_the_call_that_uses_them_once_per_value() -> None:
    trace = airline_trace()
    probes = needed_probes(trace, 12)
    by_answer = {p.answers[0]: p for p in probes}
    assert len(by_answer) == len(probes), "one probe per value"
    reservation = by_answer["ZFA04Y"]
    assert reservation.kind == "needed"
    assert reservation.ask_at == 5, "the use farthest from the value's last mention"
    assert reservation.evidence == (3, 6, 8), "every earlier message that holds it"
    assert "message 3" in reservation.question and "call 5" in reservation.question
    assert [p.ask_at for p in probes] == sorted(p.ask_at or 0 for p in probes)
    assert needed_probes(trace, 1) and len(needed_probes(trace, 1)) == 1
    assert needed_probes(trace, 0) == ()


def test_the_miner_asks_needed_facts_first_and_others_in_at_most_as_many_places() -> None:
    probes = mine_probes(airline_trace(), 12)
    kinds = Counter(p.kind for p in probes)
    assert probes[0].kind == "needed"
    assert kinds["needed"] >= sum(v for k, v in kinds.items() if k != "needed")


def test_generated_traces_plant_needed_facts() -> None:
    trace = next(generate(load_scenario("coding_agent"), 1))
    needed = [p for p in trace.probes if p.kind == "needed"]
    assert needed
    for probe in needed:
        used_at = trace.call_indices[probe.ask_at or 0]
        assert any(probe.answers[0] in v for v, _ in action_values(trace.messages[used_at]))
        assert trace.messages[probe.meta["source_message"]].role in ("tool", "user")


def _from_each_start(trace: Trace, step: int = 1) -> None:
    everything = needed_uses(trace)
    for start in range(0, len(trace.messages) + 1, step):
        assert needed_uses(trace, start) == tuple(u for u in everything if u.message >= start)


def test_the_uses_from_a_message_on_are_those_of_the_whole_trace_from_there() -> None:
    _from_each_start(airline_trace())
    _from_each_start(next(generate(load_scenario("coding_agent"), 1)), step=7)


def test_a_value_the_agent_wrote_before_any_source_is_not_a_use_from_any_start() -> None:
    # the agent writes the path first (JSON escapes its slashes, so no message's text shows it
    # before the tool result does), a tool prints it, the agent uses it again later
    first = Message(
        "assistant",
        "",
        tool_calls=(ToolCall("c0", "write_file", '{"path": "src\\/app\\/main.py"}'),),
    )
    trace = Trace(
        "written-first",
        (
            Message("system", "You are a coding agent."),
            Message("user", "Fix the build."),
            first,
            result(0, "ok"),
            call(1, "ls"),
            result(1, "src/app/main.py\nsrc/app/util.py"),
            call(2, "noop"),
            result(2, "ok"),
            call(3, "noop"),
            result(3, "ok"),
            call(4, "read_file", path="src/app/main.py"),
            result(4, "print(1)"),
        ),
    )
    assert ("src/app/main.py", "path") in action_values(first)
    assert needed_uses(trace) == ()
    _from_each_start(trace)


# -- real recorded traces ------------------------------------------------------------------------

#: the shared sources, by folder: the share of needed probes mined from them is what this holds
SOURCES = ("tau-bench", "tau2-bench", "mini-swe-agent", "swe-agent", "marot+spotter")


@pytest.mark.parametrize("source", SOURCES)
def test_at_least_half_of_the_probes_mined_on_recorded_traces_are_needed_facts(
    shared_traces: Path, source: str
) -> None:
    files = sorted(
        p
        for p in (shared_traces / source).rglob("*")
        if p.suffix in (".json", ".jsonl", ".traj") and "subagents" not in p.parts
    )
    kinds: Counter[str] = Counter()
    for path in files:
        for trace in list(open_source(path).traces())[:40]:
            for probe in mine_probes(trace):
                kinds[probe.kind] += 1
                if probe.kind == "needed":  # its answer is written by a later action
                    used = trace.messages[probe.meta["used_at"]]
                    assert any(probe.answers[0] == v for v, _ in action_values(used))
    assert kinds["needed"] > 0
    assert kinds["needed"] >= sum(kinds.values()) / 2, dict(kinds)


@pytest.mark.parametrize("source", SOURCES)
def test_the_uses_from_any_call_on_recorded_traces_are_those_of_the_whole_trace(
    shared_traces: Path, source: str
) -> None:
    files = sorted(
        p for p in (shared_traces / source).rglob("*") if p.suffix in (".json", ".jsonl", ".traj")
    )
    for path in files:
        for trace in list(open_source(path).traces())[:4]:
            everything = needed_uses(trace)
            for start in trace.call_indices[::9]:
                assert needed_uses(trace, start) == tuple(
                    u for u in everything if u.message >= start
                )
