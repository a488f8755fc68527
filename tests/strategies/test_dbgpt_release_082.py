"""dbgpt==0.8.2 as docs/sources.md describes it, Layer 1's snapshot path, and the estimator drift that
causes real overflows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.strategies import build_strategy
from ctxbench.strategies.dbgpt import DbgptStrategy
from ctxbench.strategies.dbgpt.memory import stored
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.trace import Message, Trace
from tests.factories import tool_trace
from tests.replaying import Failing
from tests.strategies.dbgpt_cases import (
    CHARS4,
    ONLY_L3,
    compactions,
    react,
    run,
    run_release,
)

# -- estimator drift ------------------------------------------------------------------------------


def test_chars4_on_cjk_output_causes_real_overflows_and_layer4_recoveries_that_exact_counting_avoids() -> (
    None
):
    """chars/4 undercounts Chinese ~3.7x with o200k: DB-GPT believes the prompt is small, the
    provider rejects it, and Layer 4 recovers; with the exact estimator the proactive layers
    act in time and the provider never rejects a prompt."""
    from ctxbench.synth import generate, load_scenario

    trace = next(generate(load_scenario("cjk_agent"), 0))
    true = get_counter("tiktoken:o200k_base")

    def replay_with(estimator: str) -> ReplayOutput:
        return replay(
            trace,
            build_strategy("dbgpt", {"release": "design"}),
            SimulatedProvider(32768, 4096),
            true_counter=true,
            estimator=get_counter(estimator),
            summarizer=ExtractiveSummarizer(),
        )

    drifting, exact = replay_with("chars4"), replay_with("tiktoken:o200k_base")
    assert drifting.result.overflow_errors > 0
    assert json.loads(drifting.result.compactions).get("layer4", 0) > 0
    assert drifting.result.reactive_retries == json.loads(drifting.result.compactions)["layer4"]
    assert exact.result.overflow_errors == 0 and "layer4" not in json.loads(
        exact.result.compactions
    )
    # every overflow happened while the strategy's own estimate said the prompt fitted
    for e in drifting.events:
        if e.type == ev.PROVIDER_CALL and not e["ok"]:
            assert e["estimated_tokens"] <= e["limit"] < e["true_tokens"]


# -- dbgpt==0.8.2 (docs/sources.md) and the Layer-1 snapshot path -----------------------------------


def test_0_8_2_layer3_fails_on_model_name_and_the_breaker_stops_all_compaction() -> None:
    out = run_release(react(60), 4000, min_keep_tokens=100_000)
    errors = [e for e in out.events if e.type == "strategy.error"]
    assert len(errors) == 3 and all("model_name" in e["error"] for e in errors)
    assert not [e for e in out.events if e.type == ev.SUMMARY], "the LLM is never asked"
    tripped = errors[-1].call
    assert not [c for c in compactions(out) if c["call"] > tripped], "nothing compacts after"
    failed = [e for e in out.events if e.type == ev.CALL_FAILED]
    assert failed and all(e.call > tripped for e in failed)


def test_0_8_2_layer4_is_unreachable_so_an_overflow_fails_the_call() -> None:
    out = run_release(react(40, obs_chars=2000), 3000, max_compact_failures=0)
    assert out.result.failed_calls > 0 and out.result.reactive_retries == 0
    assert not [c for c in compactions(out) if c["layer"] == "layer4"]


def test_0_8_2_recomputes_compaction_on_the_fresh_history_at_every_call() -> None:
    """The agent rebuilds its messages from memory: Layer 1 runs again at every call over the
    warning ratio (a persistent view would cut each observation once)."""
    kw: dict[str, Any] = {"min_keep_tokens": 100_000, "max_compact_failures": 100}
    released = run_release(react(40), 5000, **kw)
    designed = run(react(40), 5000, release="design", **kw)
    per_call = [c["call"] for c in compactions(released) if c["layer"] == "layer1"]
    assert (
        len(per_call)
        == len(set(per_call))
        > 2 * len([c for c in compactions(designed) if c["layer"] == "layer1"])
    )
    # every call starts again from the full history, so the same old observations are cut
    # again each time (and one more as a round ages)
    cut = [c["changed"] for c in compactions(released) if c["layer"] == "layer1"]
    assert cut == sorted(cut) and cut[-1] > cut[0] > 1


def test_0_8_2_sees_native_results_as_the_react_agent_stores_them() -> None:
    """The ReAct agent keeps text rounds: each native result is an ``Observation:`` turn that
    ends a round, so Layer 1 cuts it (the stored text, prefix included, without the prefix in
    the tool message) and Layer 2 drops whole rounds."""
    out = run_release(
        tool_trace(40, output="o" * 600), 3000, max_compact_failures=100, min_keep_tokens=500
    )
    assert {"layer1", "layer2"} <= {c["layer"] for c in compactions(out)}
    out = run_release(tool_trace(40, output="o" * 600), 6000, max_compact_failures=100)
    cut = [m for m in out.final_view if m.role == "tool" and "[truncated" in m.content]
    assert cut and all(m.content.startswith("o" * 187 + "...") for m in cut)
    assert all(not m.content.startswith("o" * 188) for m in cut)


def test_0_8_2_counts_the_stored_form_with_the_task_progress_and_not_the_question() -> None:
    strategy = build_strategy("dbgpt", {"release": "0.8.2"})
    assert isinstance(strategy, DbgptStrategy)
    out = replay(
        tool_trace(6, output="x" * 40),
        strategy,
        SimulatedProvider(100_000, 0),
        true_counter=CHARS4,
        estimator=CHARS4,
    )
    system = next(m for m in out.final_view if m.role == "system")
    progress = [line for line in system.content.splitlines() if line.startswith("\u2705 Step")]
    assert len(progress) == 6
    assert progress[0].startswith("\u2705 Step 1: Action=") and "| ref: step_001_" in progress[0]
    question = Message("user", "q" * 4000)
    view = (*out.final_view, question)
    managed, tail = strategy._managed(view)
    assert tail == [question] and question not in managed
    tool = next(m for m in view if m.role == "tool")
    assert stored(tool).content.startswith("Observation: x")  # what 0.8.2 counts and cuts


def test_0_8_2_an_overflow_fails_with_the_value_error_of_thinking() -> None:
    out = run_release(react(40, obs_chars=2000), 3000, max_compact_failures=0)
    failed = [e for e in out.events if e.type == ev.CALL_FAILED]
    assert failed and all(e["kind"] == ev.OVERFLOW for e in failed)
    assert all(str(e["error"]).startswith("ValueError: ") for e in failed)


def test_0_8_2_an_empty_summary_counts_as_a_success() -> None:
    """With the defect patched, the client swallows the error and returns "": no breaker step."""
    strategy = build_strategy(
        "dbgpt",
        {"release": "0.8.2", "patch_model_name": True, "max_compact_failures": 1, **ONLY_L3},
    )
    failing = Failing()
    replay(
        react(30),
        strategy,
        SimulatedProvider(4000),
        true_counter=CHARS4,
        estimator=CHARS4,
        summarizer=failing,
    )
    assert failing.calls > 1 and strategy.compact_failures == 0  # type: ignore[attr-defined]


def test_0_8_2_snapshots_are_named_per_reply_step_in_the_conversation_folder() -> None:
    out = run_release(react(3), 100_000)
    assert sorted(out.files) == [f"r/step_00{i}_sql_query.json" for i in (1, 2, 3)]
    payload = json.loads(out.files["r/step_001_sql_query.json"])
    assert payload["phase"] == "" and payload["action_intention"] == "" and payload["step"] == 1


def test_0_8_2_persistence_has_no_window_scaling_and_no_turn_budget() -> None:
    big = "Observation: " + "z" * 60_000
    trace = Trace(
        "p",
        (
            Message("system", "s"),
            Message("user", "task"),
            Message("assistant", "Thought: t\nAction: sql_query\nAction Input: q"),
            Message("user", big),
            Message("assistant", "done"),
        ),
    )
    released = run_release(trace, 100_000)
    designed = run(trace, 100_000, release="design")
    assert not [f for f in released.files if f.startswith("persisted_results/")], "60,000 < 100,000"
    assert [f for f in designed.files if f.startswith("persisted_results/")], "15% of the window"


def test_truncated_observation_max_chars_follows_the_entry_point() -> None:
    assert DbgptStrategy(build_strategy("dbgpt", {}).config).cfg.observation_max_chars == 200
    core = build_strategy("dbgpt", {"entry_point": "core"})
    assert isinstance(core, DbgptStrategy) and core.cfg.observation_max_chars == 500
    explicit = build_strategy(
        "dbgpt", {"entry_point": "core", "truncated_observation_max_chars": 80}
    )
    assert isinstance(explicit, DbgptStrategy) and explicit.cfg.observation_max_chars == 80


@pytest.mark.parametrize("release", ["0.8.2", "design"])
def test_recutting_an_observation_keeps_its_snapshot_path(release: str) -> None:
    """Our former Layer-1 bug: a cut observation lost its pointer when cut again."""
    strategy = build_strategy("dbgpt", {"release": release, "max_observation_age_rounds": 0})
    assert isinstance(strategy, DbgptStrategy)
    path = "r/step_001_sql_query.json"
    first = Message("user", f"Observation: {'x' * 500}\n[Full detail available at: {path}]")
    msgs = (Message("assistant", "Thought: a"), first, Message("assistant", "Thought: b"))
    once = strategy.layer1(msgs, current_round=10)
    cut = once[1].with_text(once[1].content + "y" * 100)  # a longer text still points there
    twice = strategy.layer1((msgs[0], cut, msgs[2]), current_round=10)
    assert once[1].content.endswith(f"[truncated, full detail at: {path}]")
    assert twice[1].content.endswith(f"[truncated, full detail at: {path}]")


def test_every_cut_observation_keeps_its_path_on_a_60_round_trace() -> None:
    out = run(react(60, obs_chars=800), 8000, release="design", min_keep_tokens=100_000)
    cut = [m for m in out.final_view if m.is_observation and "[truncated" in m.content]
    assert len(cut) > 30
    assert all("[truncated, full detail at: " in m.content for m in cut)
