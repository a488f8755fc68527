"""Probe mining: canaries from recorded and synthetic traces, each verbatim in its evidence,
local to it, specific, deduplicated, capped and spread over the trace."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import replay
from ctxbench.formats.importing import open_source
from ctxbench.probes.mining import mine, mine_probes
from ctxbench.probes.model import Probe
from ctxbench.probes.needed import MIN_GAP
from ctxbench.probes.scoring import TextIndex
from ctxbench.strategies import build_strategy
from ctxbench.synth import generate, load_scenario
from ctxbench.trace import Message, ToolCall, Trace, message_search_text
from ctxbench.validation import validate

PROBE_PROBLEMS = {
    "probe_evidence_out_of_range",
    "probe_answer_not_in_evidence",
    "probe_ask_at_out_of_range",
    "duplicate_probe_id",
}


def assert_well_formed(trace: Trace, probes: tuple[Probe, ...], cap: int) -> None:
    assert len(probes) <= cap
    problems = [p for p in validate(replace(trace, probes=probes)) if p.code in PROBE_PROBLEMS]
    assert problems == []
    indexes = [TextIndex.of(message_search_text(m)) for m in trace.messages]
    answers = [p.answers[0] for p in probes]
    for probe in probes:
        answer = probe.answers[0]
        if probe.kind == "needed":
            assert_needed(trace, probe, indexes)
            continue
        assert probe.kind in ("artifact", "recall") and probe.ask_at is None
        assert answer in message_search_text(trace.messages[probe.meta["source_message"]]), (
            "verbatim"
        )
        holding = [i for i, idx in enumerate(indexes) if idx.has(answer)]
        assert holding == list(probe.evidence), f"{answer!r} occurs outside its evidence"
        assert all(trace.messages[i].role != "system" for i in holding)
        assert len(answer) >= 5
        assert not any(
            answer != other and (answer in other or other in answer) for other in answers
        ), "deduplicated"


def assert_needed(trace: Trace, probe: Probe, indexes: list[TextIndex]) -> None:
    """A needed probe: asked at the call whose message uses the answer, learned from a user
    message or tool result at least MIN_GAP messages before, its evidence every earlier message
    that holds it."""
    answer = probe.answers[0]
    used_at, source = probe.meta["used_at"], probe.meta["source_message"]
    assert probe.ask_at is not None and trace.call_indices[probe.ask_at] == used_at
    assert trace.messages[used_at].role == "assistant"
    assert trace.messages[source].role in ("user", "tool")
    assert source + MIN_GAP <= used_at
    holding = [i for i in range(used_at) if indexes[i].has(answer)]
    assert holding and holding[0] == source and list(probe.evidence) == holding
    assert indexes[used_at].has(answer)


def tool_trace(
    outputs: list[str], *, system: str = "You are an agent.", args: list[dict] | None = None
) -> Trace:
    messages = [Message("system", system), Message("user", "Please fix the build.")]
    for i, output in enumerate(outputs):
        arguments = json.dumps((args or [{}] * len(outputs))[i] or {"command": f"step {i}"})
        messages.append(
            Message("assistant", f"Step {i}.", tool_calls=(ToolCall(f"c{i}", "bash", arguments),))
        )
        messages.append(Message("tool", output, tool_call_id=f"c{i}", name="bash"))
    messages.append(Message("assistant", "Done."))
    return Trace("t", tuple(messages))


# -- rules on hand-built traces ----------------------------------------------------------------


def test_canaries_of_every_category_are_mined_with_their_kind() -> None:
    trace = tool_trace(
        [
            "Traceback (most recent call last):\nValueError: could not convert string to float: 'abc'",
            "wrote build/artifacts/report_final.csv (1843 rows)",
            "deployed revision 9f3a2c1e in 842 ms, payload 18432 bytes",
            "see https://staging.example.org/app/v2 for the status",
            "customer ana.silva@example.com booked on 2024-05-20",
        ],
        args=[
            {"command": "pytest tests/test_parse.py -k float && cd /repo"},
            {},
            {},
            {},
            {"reservation_id": "RSV-88213"},
        ],
    )
    probes = mine_probes(trace, 50, max_others=50)
    assert_well_formed(trace, probes, 50)
    mined = {p.answers[0]: (p.kind, p.meta["mined"]) for p in probes}
    assert mined["ValueError: could not convert string to float: 'abc'"] == ("recall", "error")
    assert mined["build/artifacts/report_final.csv"] == ("artifact", "path")
    assert mined["pytest tests/test_parse.py -k float"] == ("artifact", "command")
    assert mined["18432 bytes"] == ("recall", "number")
    assert not {"842 ms", "9f3a2c1e", "2024-05-20"} & set(mined), "trivia is skipped"
    why = {s.answer: s.reason for s in mine(trace, 50, max_others=50).skipped}
    assert why["https://staging.example.org/app/v2"].startswith("a URL in a tool's output")
    assert why["ana.silva@example.com"].startswith("an e-mail address in a tool result")
    assert mined["RSV-88213"] == (
        "recall",
        "identifier",
    )  # an id is recalled, wherever it was typed
    assert "cd /repo" not in mined, "a bare cd is generic"


def test_urls_and_e_mails_the_user_gave_are_mined() -> None:
    trace = tool_trace(["ok"] * 3)
    user = Message(
        "user", "Deploy to https://staging.example.org/app/v2 and tell ana.silva@example.com"
    )
    trace = replace(trace, messages=(trace.messages[0], user, *trace.messages[2:]))
    mined = {p.answers[0]: (p.kind, p.meta["mined"]) for p in mine_probes(trace, 50, max_others=50)}
    assert mined["https://staging.example.org/app/v2"] == ("artifact", "url")
    assert mined["ana.silva@example.com"] == ("recall", "email")


def test_trivia_is_skipped_and_every_skip_says_why() -> None:
    trace = tool_trace(
        [
            "deployed revision 9f3a2c1e at 2024-05-20 14:03:11 in 842 ms",
            "request id f47ac10b-58cc-4372-a567-0e02b2c3d479 done at 09:41",
            "matched pattern ^user_[a-z]+.*$ in src/app/routes_v2.py",
            "[File: src/app/models.py (1342 lines total)]",
            "[File: src/app/views.py (2210 lines total)]",
            "[File: src/app/forms.py (1876 lines total)]",
            "wrote build/out/report_final.csv (1843 rows)",
        ]
    )
    found = mine(trace, 50, max_others=50)
    answers = {p.answers[0] for p in found.probes}
    assert {"build/out/report_final.csv", "1843 rows", "src/app/routes_v2.py"} <= answers
    why = {s.answer: s.reason for s in found.skipped}
    assert why["9f3a2c1e"] == "a hash: trivia"
    assert why["f47ac10b-58cc-4372-a567-0e02b2c3d479"] == "a hash: trivia"
    assert why["2024-05-20 14:03:11"] == why["09:41"] == "a date or time: trivia"
    assert why["842 ms"].startswith("a duration")
    assert why["1342 lines"] == (
        "a number in boilerplate (the line '[File: ~ # lines total)]', repeated in 3+ messages)"
    )
    assert not answers & set(why), "a candidate is either a probe or skipped"
    assert found.probes == mine_probes(trace, 50, max_others=50)


def test_regex_fragments_and_numbers_of_the_tool_definitions_are_skipped() -> None:
    from ctxbench.trace import ToolSpec

    trace = replace(
        tool_trace(
            ["grep -E 'ERR[0-9]+.*timeout' found 3 lines", "limit is 4096 tokens per call"],
            args=[{"command": "grep -E 'ERR[0-9]+.*timeout' logs/app_2.log"}, {}],
        ),
        tools=(ToolSpec("bash", "Run a command; output is cut at 4096 tokens", {}),),
    )
    why = {s.answer: s.reason for s in mine(trace, 50, max_others=50).skipped}
    assert why["grep -E 'ERR[0-9]+.*timeout' logs/app_2.log"] == "a regex fragment"
    assert why["4096 tokens"].startswith("a number in boilerplate (the tool definitions)")


def test_values_repeated_far_apart_are_not_mined() -> None:
    outputs = (
        ["config loaded from etc/app/settings_v2.yaml"]
        + ["nothing here"] * 6
        + ["reloaded etc/app/settings_v2.yaml"]
    )
    assert "etc/app/settings_v2.yaml" not in {
        p.answers[0] for p in mine_probes(tool_trace(outputs), 50, max_others=50)
    }


def test_values_in_the_system_prompt_are_not_mined() -> None:
    trace = tool_trace(
        ["see docs/guide/setup_notes.md"], system="Read docs/guide/setup_notes.md first."
    )
    assert "docs/guide/setup_notes.md" not in {
        p.answers[0] for p in mine_probes(trace, 50, max_others=50)
    }


def test_one_message_yields_at_most_two_probes() -> None:
    trace = tool_trace(["a/b/one_1.py a/b/two_2.py a/b/three_3.py a/b/four_4.py"])
    assert len(mine_probes(trace, 50, max_others=50)) == 2


def test_small_numbers_and_short_values_are_not_mined() -> None:
    trace = tool_trace(["took 5 ms, 10% done, 2 GB free, id ab12"])
    assert mine_probes(trace, 50, max_others=50) == ()


def test_the_cap_spreads_probes_over_early_middle_and_late_thirds() -> None:
    outputs = [f"wrote out/part_{i:03d}/data_{i}.parquet ({1000 + i} rows)" for i in range(30)]
    trace = tool_trace(outputs)
    probes = mine_probes(trace, 6, max_others=6)
    assert len(probes) == 6
    n = len(trace.messages)
    thirds = sorted(min(2, 3 * p.meta["source_message"] // n) for p in probes)
    assert thirds == [0, 0, 1, 1, 2, 2]


def test_mining_is_deterministic() -> None:
    trace = next(generate(load_scenario("coding_agent"), 1))
    assert mine_probes(trace) == mine_probes(trace)


def test_no_candidates_means_no_probes() -> None:
    assert mine_probes(Trace("t", (Message("user", "hi"), Message("assistant", "hello")))) == ()
    assert mine_probes(tool_trace(["ok"]), 0) == ()


# -- synthetic traces ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["coding_agent", "sql_agent", "support_agent", "cjk_agent"])
def test_mining_synthetic_traces_gives_well_formed_probes(name: str) -> None:
    trace = next(generate(load_scenario(name), 3))
    probes = mine_probes(trace, 12, max_others=12)
    assert len(probes) == 12
    assert_well_formed(trace, probes, 12)


def test_planted_artifact_paths_are_found_by_the_miner() -> None:
    trace = next(generate(load_scenario("coding_agent"), 3))
    mined = {p.answers[0] for p in mine_probes(trace, 500, max_others=500)}
    planted = [
        p.answers[0]
        for p in trace.probes
        if p.kind == "artifact" and "/" in p.answers[0] and " " not in p.answers[0]
    ]
    assert planted and set(planted) <= mined


def test_mined_probes_are_all_kept_by_a_replay_without_compaction() -> None:
    trace = next(generate(load_scenario("support_agent"), 0))
    probes = mine_probes(trace)
    counter = get_counter("chars4")
    out = replay(
        trace,
        build_strategy("none"),
        SimulatedProvider(10**8, 0),
        true_counter=counter,
        estimator=counter,
        probes=probes,
    )
    assert [e.data["outcome"] for e in out.events if e.type == ev.PROBE] == ["in_context"] * len(
        probes
    )


# -- real recorded traces ------------------------------------------------------------------------


def _recorded(shared_traces: Path) -> list[Path]:
    return sorted(
        p
        for p in shared_traces.rglob("*")
        if p.is_file() and p.suffix in (".json", ".jsonl", ".traj")
    )


def test_mining_real_traces_yields_probes_whose_answers_are_in_their_evidence(
    shared_traces: Path,
) -> None:
    files = _recorded(shared_traces)
    assert files
    total = 0
    for path in files:
        for trace in list(open_source(path).traces())[:25]:
            probes = mine_probes(trace, 12)
            assert_well_formed(trace, probes, 12)
            total += len(probes)
    assert total >= 5 * len(files)


def test_probes_mine_why_prints_the_reason_of_every_skip(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ctxbench.cli import cli
    from ctxbench.formats.canonical import write_traces

    write_traces(tmp_path / "t.jsonl", [tool_trace(["deployed 9f3a2c1e at 09:41 in 842 ms"])])
    out = CliRunner().invoke(
        cli, ["probes", "mine", str(tmp_path / "t.jsonl"), "-o", str(tmp_path / "m.jsonl"), "--why"]
    )
    assert out.exit_code == 0, out.output
    assert "skipped t message 3 identifier '9f3a2c1e': a hash: trivia" in out.stdout
    assert "'09:41': a date or time: trivia" in out.stdout
