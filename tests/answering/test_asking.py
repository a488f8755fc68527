"""What the answerer is asked about a replay: the prompt the replay scored (byte for byte) and
the probe's question; next steps with and without compaction; the events and row fields."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxbench.answering.asking import (
    QUESTION,
    action_of,
    chat_message,
    naming_arguments,
    verdict,
)
from ctxbench.answering.cache import Reply, ToolChoice
from ctxbench.answering.client import Answerer, AnswererSettings
from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.engine.replay import ReplayOutput
from ctxbench.errors import ConfigError
from ctxbench.probes.model import Probe
from ctxbench.probes.scoring import PromptScorer
from ctxbench.trace import Trace
from ctxbench.view.capture import capture_run
from tests.answering.server import Scripted, fact_trace, facts_of, running, scripted_server


@pytest.fixture
def server() -> Iterator[Scripted]:
    yield from running(scripted_server(facts_of(fact_trace().probes)))


def cell(trace: Trace, strategy: str, **params: Any) -> RunSpec:
    return resolve_spec(
        RunSpec(
            trace_id=trace.id,
            trace_hash=trace.content_hash,
            strategy=strategy,
            params=params,
            window=100_000,
            reserved=0,
            counter="chars4",
            answerer="m",
            next_action=True,
        )
    )


def asked(
    server: Scripted,
    tmp_path: Path,
    trace: Trace,
    strategy: str,
    concurrency: int = 4,
    **params: Any,
) -> ReplayOutput:
    settings = AnswererSettings(
        model="m", base_url=server.url, cache_dir=str(tmp_path / "cache"), concurrency=concurrency
    )
    return run_spec(cell(trace, strategy, **params), trace, answerer=Answerer(settings))


def of_type(output: ReplayOutput, kind: str) -> list[dict[str, Any]]:
    return [e.to_dict() for e in output.events if e.type == kind]


def test_a_kept_fact_is_answered_and_a_dropped_one_missed(server: Scripted, tmp_path: Path) -> None:
    kept = asked(server, tmp_path, fact_trace(), "none")
    dropped = asked(server, tmp_path, fact_trace(), "sliding_window", keep_rounds=2)
    (yes,) = of_type(kept, "probe.answer")
    (no,) = of_type(dropped, "probe.answer")
    assert (yes["answer"], yes["verdict"], yes["outcome"]) == ("8471", "answered", "in_context")
    assert (no["answer"], no["verdict"], no["outcome"]) == ("unknown", "missed", "lost")
    assert yes["question"] == "Which port does the server listen on?"
    assert (kept.result.answered, kept.result.answered_retention) == (1, 1.0)
    assert (dropped.result.answered, dropped.result.answered_retention) == (0, 0.0)
    assert json.loads(dropped.result.answered_by_kind) == {"recall": 0.0}
    assert dropped.result.answerer_tokens > 0


def test_the_prompt_sent_is_byte_for_byte_the_prompt_the_replay_scored(
    server: Scripted, tmp_path: Path
) -> None:
    trace = fact_trace()
    spec = cell(trace, "sliding_window", keep_rounds=3)
    output = asked(server, tmp_path, trace, "sliding_window", keep_rounds=3)
    capture = capture_run(spec, trace, output.result)  # the viewer's own re-replay
    (answer,) = of_type(output, "probe.answer")
    scored = capture.prompt(answer["call"])
    questions = [b for b in server.bodies if "Question: " in str(b["messages"][-1]["content"])]
    (sent,) = questions
    want = json.dumps([chat_message(m) for m in scored], ensure_ascii=False)
    assert json.dumps(sent["messages"][:-1], ensure_ascii=False) == want
    assert sent["messages"][-1]["content"] == QUESTION.format(question=trace.probes[0].question)
    assert PromptScorer(scored, {}).score(trace.probes[0]) == answer["outcome"]


def test_next_steps_are_asked_at_compactions_with_the_tools_offered(
    server: Scripted, tmp_path: Path
) -> None:
    trace = fact_trace()
    output = asked(server, tmp_path, trace, "sliding_window", keep_rounds=2)
    actions = of_type(output, "next_action")
    n_calls = len(trace.call_indices)  # the end (probes' last prompt) has no next step
    compacted_at = sorted({e.call for e in output.events if e.type == "compaction"} - {n_calls})
    assert [a["call"] for a in actions] == compacted_at != []
    first = actions[0]
    # the script takes the prompt's earliest tool call: step 0 in the whole history, a later
    # step once the early rounds are compacted away
    assert first["uncompacted"] == {"tool": "bash", "args": {"command": "step 0"}}
    assert first["compacted"]["tool"] == "bash"
    assert first["compacted"]["args"] != {"command": "step 0"}
    assert first["agree"] is False and first["trigger"] == "compaction"
    steps = [b for b in server.bodies if "Question: " not in str(b["messages"][-1]["content"])]
    assert all(b["tools"][0]["function"]["name"] == "bash" for b in steps)
    assert output.result.next_action_calls == len(actions)
    assert output.result.next_action_agreement == 0.0


def test_uncompacted_runs_ask_no_next_step_and_agree_when_nothing_was_dropped(
    server: Scripted, tmp_path: Path
) -> None:
    output = asked(server, tmp_path, fact_trace(), "none")
    assert of_type(output, "next_action") == []
    assert output.result.next_action_agreement is None
    sampled = dataclasses.replace(cell(fact_trace(), "none"), next_action_every=3)
    settings = AnswererSettings(model="m", base_url=server.url, cache_dir=str(tmp_path / "c"))
    again = run_spec(sampled, fact_trace(), answerer=Answerer(settings))
    actions = of_type(again, "next_action")
    assert [a["call"] for a in actions] == [0, 3, 6]
    assert all(a["agree"] and a["trigger"] == "sample" for a in actions)
    assert again.result.next_action_agreement == 1.0


def test_events_are_the_same_whatever_the_concurrency_and_the_cache(
    server: Scripted, tmp_path: Path
) -> None:
    one = asked(server, tmp_path / "a", fact_trace(), "sliding_window", 1, keep_rounds=2)
    many = asked(server, tmp_path / "b", fact_trace(), "sliding_window", 8, keep_rounds=2)
    cached = asked(server, tmp_path / "b", fact_trace(), "sliding_window", 8, keep_rounds=2)
    lines = [[e.to_json() for e in out.events] for out in (one, many, cached)]
    assert lines[0] == lines[1] == lines[2]


def test_a_cell_naming_a_model_needs_its_client() -> None:
    trace = fact_trace()
    with pytest.raises(ConfigError, match="asks the model 'm', but no answerer was given"):
        run_spec(cell(trace, "none"), trace)
    other = Answerer(AnswererSettings(model="x", offline=True))
    with pytest.raises(ConfigError, match="the answerer serves 'x'"):
        run_spec(cell(trace, "none"), trace, answerer=other)


def test_the_verdict_is_the_probe_matching_on_the_answer() -> None:
    probe = Probe("p", "recall", "Which order?", ("ORD-4821",), stale_answers=("ORD-1000",))
    assert verdict(probe, "It is ORD-4821.") == "answered"
    assert verdict(probe, "ORD-48213") == "missed"  # a whole token only, as string presence
    assert verdict(probe, "ord-4821") == "missed"  # ids match case-sensitively
    assert verdict(probe, "the old one, ORD-1000") == "stale"


def test_naming_arguments_keep_paths_ids_and_commands_normalised() -> None:
    args = json.dumps({"path": "src/app.py", "command": "ls  -la", "limit": 5, "view_id": 3})
    assert naming_arguments(args) == {"command": "ls -la", "path": "src/app.py", "view_id": "3"}
    assert naming_arguments("SELECT * FROM t") == {"input": "SELECT * FROM t"}
    assert naming_arguments("") == {}


def test_the_next_step_is_the_first_tool_call_or_a_react_action() -> None:
    native = Reply("", (ToolChoice("bash", '{"command": "pytest"}'), ToolChoice("x", "{}")))
    assert action_of(native).to_json() == {"tool": "bash", "args": {"command": "pytest"}}
    react = Reply("Thought: look\nAction: sql_query\nAction Input: SELECT 1")
    assert action_of(react).to_json() == {"tool": "sql_query", "args": {"input": "SELECT 1"}}
    assert action_of(Reply("All done.")).to_json() == {"tool": "", "args": {}}


def test_a_model_recalling_only_recent_text_answers_less_than_presence_says(
    server: Scripted, tmp_path: Path
) -> None:
    server.recall = 2000  # the fact sits in the first of 8 rounds of 400+ characters
    output = asked(server, tmp_path, fact_trace(), "none")
    (answer,) = of_type(output, "probe.answer")
    assert (answer["outcome"], answer["verdict"]) == ("in_context", "missed")
    assert (output.result.retention, output.result.answered_retention) == (1.0, 0.0)
