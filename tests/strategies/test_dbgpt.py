"""DB-GPT agent context management as designed: the budget and states, Layers 1-4 and their order
and events, one test per rule of the design document and the repository reading (docs/sources.md)."""

from __future__ import annotations

import pytest

from ctxbench.counting.base import TokenCounter
from ctxbench.engine import events as ev
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import replay
from ctxbench.errors import ConfigError, SummarizerError
from ctxbench.pairing import rounds
from ctxbench.strategies import build_strategy
from ctxbench.strategies.dbgpt import DbgptStrategy
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.trace import Message, Trace
from tests.replaying import Failing
from tests.strategies.dbgpt_cases import (
    CHARS4,
    ONLY_L3,
    compactions,
    dbgpt,
    estimator_only_ctx,
    final_view,
    react,
    run,
    statuses,
)

# -- budget and states ---------------------------------------------------------------------------


def test_effective_budget_is_max_context_minus_reserved() -> None:
    out = run(react(1), 10_000, reserved=1000)
    assert statuses(out)[0]["budget"] == 9000
    out = run(react(1), 10_000, reserved=1000, max_context_tokens=8000, reserved_tokens=500)
    assert statuses(out)[0]["budget"] == 7500


def test_non_positive_max_context_falls_back_to_120000() -> None:
    out = run(react(1), 10_000, max_context_tokens=0, reserved_tokens=4096)
    assert statuses(out)[0]["budget"] == 120_000 - 4096


@pytest.mark.parametrize(
    "ratio,state",
    [
        (0.0, "normal"),
        (0.6999, "normal"),
        (0.70, "warning"),
        (0.8999, "warning"),
        (0.90, "error"),
        (0.9499, "error"),
        (0.95, "critical"),
        (0.9999, "critical"),
        (1.0, "overflow"),
        (3.0, "overflow"),
    ],
)
def test_states_at_the_threshold_boundaries(ratio: float, state: str) -> None:
    assert DbgptStrategy().state_of(ratio, 1000) == state


def test_configured_thresholds_move_the_boundaries() -> None:
    strat = dbgpt({"warning_threshold": 0.5, "error_threshold": 0.6, "critical_threshold": 0.7})
    assert [strat.state_of(r, 100) for r in (0.49, 0.5, 0.6, 0.7)] == [
        "normal",
        "warning",
        "error",
        "critical",
    ]


def test_zero_budget_is_overflow() -> None:
    assert DbgptStrategy().state_of(0.0, 0) == "overflow"


def test_thresholds_out_of_order_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="warning_threshold <= error_threshold"):
        build_strategy("dbgpt", {"warning_threshold": 0.95, "error_threshold": 0.9})


def test_status_ratio_is_rounded_to_four_places() -> None:
    for status in statuses(run(react(5), 3001)):
        assert status["ratio"] == round(status["used"] / status["budget"], 4)


def test_normal_state_never_compacts() -> None:
    out = run(react(6), 100_000, snapshots=False)
    assert compactions(out) == []
    assert all(s["state"] == "normal" and s["compact_layer"] is None for s in statuses(out))


# -- layer 1 ---------------------------------------------------------------------------------------


def test_layer1_truncates_observations_older_than_max_age_only() -> None:
    strat = DbgptStrategy(
        build_strategy("dbgpt", {"release": "design", "max_observation_age_rounds": 2}).config
    )
    msgs = react(6).messages[:-1]
    out = strat.layer1(msgs, current_round=len(rounds(msgs)))
    segs = rounds(msgs)
    for r in segs:
        obs = [i for i in r.indices if msgs[i].is_observation]
        for i in obs:
            old = r.index < len(segs) - 2
            assert (out[i].content != msgs[i].content) == old


def test_layer1_cuts_to_max_chars_with_the_truncated_suffix() -> None:
    strat = dbgpt({"max_observation_age_rounds": 0, "truncated_observation_max_chars": 50})
    msgs = react(2).messages
    out = strat.layer1(msgs, current_round=3)
    obs = out[3]
    assert obs.content == msgs[3].content[:50] + "... [truncated]"


def test_layer1_skips_observations_within_max_chars_plus_30() -> None:
    strat = dbgpt({"max_observation_age_rounds": 0, "truncated_observation_max_chars": 200})
    short = Message("user", "Observation: " + "y" * (230 - 13))  # exactly 230 chars = max + 30
    msgs = (
        Message("user", "go"),
        Message("assistant", "Thought: a"),
        short,
        Message("assistant", "x"),
    )
    assert strat.layer1(msgs, current_round=5)[2] is short


def test_layer1_skips_persisted_output() -> None:
    strat = dbgpt({"max_observation_age_rounds": 0})
    persisted = Message("user", "Observation: <persisted-output>\n" + "p" * 900)
    msgs = (Message("assistant", "Thought: a"), persisted, Message("assistant", "x"))
    assert strat.layer1(msgs, current_round=5)[1] is persisted


def test_layer1_keeps_the_snapshot_pointer() -> None:
    out = run(react(12), 2000, max_observation_age_rounds=2)
    truncated = [
        m
        for m in final_view(out)
        if "... [truncated, full detail at: op_snapshots/r/step_" in m.content
    ]
    assert truncated, "old observations should carry the pointer to their snapshot"
    assert all(m.content.endswith(".json]") for m in truncated)


def test_layer1_loop_counter_variant_ages_rounds_by_model_calls() -> None:
    strat = dbgpt(
        {
            "observation_age_from": "loop_counter",
            "max_observation_age_rounds": 2,
            "truncated_observation_max_chars": 50,
        },
    )
    msgs = react(3).messages
    # with the loop counter at 10, every round in the prompt counts as old, even the newest
    out = strat.layer1(msgs, current_round=10)
    assert all(
        out[i].content.endswith("... [truncated]") for i, m in enumerate(msgs) if m.is_observation
    )


# -- layer 2 ---------------------------------------------------------------------------------------


def test_layer2_drops_whole_old_rounds_and_keeps_min_recent_rounds() -> None:
    strat = dbgpt({"min_keep_recent_rounds": 3, "min_keep_tokens": 0})
    msgs = react(8).messages
    out = strat.layer2(msgs, estimator_only_ctx(strat))
    # the last three rounds are (assistant, observation) x 2 and the final answer
    assert out == [msgs[0], *msgs[-5:]]


def test_layer2_walks_back_until_min_keep_tokens_are_kept() -> None:
    strat = dbgpt({"min_keep_recent_rounds": 1, "min_keep_tokens": 250})
    msgs = react(8, obs_chars=400).messages  # each round ~ 110 tokens by chars4
    out = strat.layer2(msgs, estimator_only_ctx(strat))
    kept_rounds = rounds([m for m in out if m.role != "system"])
    kept_tokens = sum(CHARS4.count_message(m) for m in out if m.role != "system")
    # rounds are added until >= 250 tokens; the round where the walk stops is counted, not kept
    assert kept_tokens < 250 + 120 and len(kept_rounds) == 3


def test_layer2_with_few_rounds_changes_nothing() -> None:
    strat = dbgpt({"min_keep_recent_rounds": 3})
    msgs = react(2).messages
    assert strat.layer2(msgs, estimator_only_ctx(strat)) == list(msgs)


# -- layer 3 ---------------------------------------------------------------------------------------


def test_layer3_summary_sits_between_system_and_recent_rounds_as_a_user_message() -> None:
    out = run(
        react(30),
        6000,
        summarizer=ExtractiveSummarizer(),
        min_keep_tokens=10_000,
        warning_threshold=0.5,
        error_threshold=0.5,
        critical_threshold=0.9,
        max_observation_age_rounds=50,
    )
    view = final_view(out)
    summary_at = [i for i, m in enumerate(view) if m.content.startswith("[Context Summary of ")]
    assert summary_at, "layer 3 should have run"
    i = summary_at[-1]
    assert view[i].role == "user" and all(m.role == "system" for m in view[:i])
    assert "## 1. Original Task" in view[i].content and "## 6. Next Steps" in view[i].content


def test_layer3_runs_only_at_error_and_only_with_a_summarizer() -> None:
    out = run(react(30), 6000, summarizer=None, warning_threshold=0.5, error_threshold=0.5)
    assert not [c for c in compactions(out) if c["layer"] == "layer3"]
    out = run(
        react(30),
        6000,
        summarizer=ExtractiveSummarizer(),
        warning_threshold=0.5,
        error_threshold=0.99,
        critical_threshold=0.995,
        min_keep_tokens=100_000,
    )
    assert all(
        s["state"] in ("normal", "warning") or s["compact_layer"] != "layer3" for s in statuses(out)
    )


def test_layer3_request_uses_the_six_heading_prompt_and_2000_tokens() -> None:
    seen: list[SummaryRequest] = []

    class Recording(ExtractiveSummarizer):
        def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
            seen.append(request)
            return super().summarize(request, counter)

    run(react(40), 4000, summarizer=Recording(), **ONLY_L3)
    assert seen
    req = seen[0]
    assert req.max_tokens == 2000 and "You are a context summarizer for a ReAct agent" in req.prompt
    assert "[human]: Sum sales by region." in req.prompt and "[ai]: Thought: step 0" in req.prompt
    assert req.sections[0] == "1. Original Task" and len(req.sections) == 6


def test_breaker_trips_after_max_compact_failures_and_then_skips_every_layer() -> None:
    failing = Failing()
    out = run(
        react(40),
        4000,
        summarizer=failing,
        max_compact_failures=2,
        **{**ONLY_L3, "max_observation_age_rounds": 5},
    )
    assert failing.calls == 2
    failed = [e for e in out.events if e.type == ev.SUMMARY and not e["ok"]]
    assert len(failed) == 2 and "http" in failed[0]["error"]
    last_failure_call = failed[-1].call
    before = [
        c for c in compactions(out) if c["call"] <= last_failure_call and c["layer"] == "layer1"
    ]
    later = [
        s
        for s in statuses(out)
        if s["call"] > last_failure_call and s["compact_layer"] not in (None, "layer4")
    ]
    assert before, "layer 1 ran while the breaker was closed"
    assert later == [], "once tripped, the manager stops before layer 1"


def test_a_successful_summary_resets_the_failure_count() -> None:
    class FailsOnce(ExtractiveSummarizer):
        calls = 0

        def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
            FailsOnce.calls += 1
            if FailsOnce.calls == 1:
                raise SummarizerError("timeout", kind="timeout")
            return super().summarize(request, counter)

    strat = dbgpt({"max_compact_failures": 2, **ONLY_L3})
    replay(
        react(40),
        strat,
        SimulatedProvider(4000),
        true_counter=CHARS4,
        estimator=CHARS4,
        summarizer=FailsOnce(),
    )
    assert FailsOnce.calls >= 3 and strat.compact_failures == 0


# -- layer order, stopping, events -------------------------------------------------------------------


def test_layers_run_in_order_and_emit_status_after_each() -> None:
    out = run(
        react(40),
        4000,
        summarizer=ExtractiveSummarizer(),
        **{**ONLY_L3, "max_observation_age_rounds": 5},
    )
    call = next(c["call"] for c in compactions(out) if c["layer"] == "layer3")
    layers = [s["compact_layer"] for s in statuses(out, call)]
    assert layers == [None, "layer1", "layer2", "layer3"]


def test_compaction_stops_as_soon_as_the_state_is_safe() -> None:
    # layer 1 alone brings the prompt below warning: no layer 2 status at that call
    out = run(
        react(14, obs_chars=800),
        4000,
        max_observation_age_rounds=1,
        truncated_observation_max_chars=20,
    )
    first = next(c for c in compactions(out) if c["layer"] == "layer1")
    layers = [s["compact_layer"] for s in statuses(out, first["call"])]
    assert layers == [None, "layer1"]
    assert statuses(out, first["call"])[-1]["state"] == "normal"


def test_compaction_events_carry_estimated_and_true_tokens_before_and_after() -> None:
    out = run(
        react(14, obs_chars=800),
        4000,
        max_observation_age_rounds=1,
        truncated_observation_max_chars=20,
    )
    c = compactions(out)[0]
    assert c["est_after"] < c["est_before"] and c["true_after"] < c["true_before"]
    assert c["changed"] > 0 and c["pairing_violations"] == 0 and c["system_kept"] is True


# -- layer 4 ---------------------------------------------------------------------------------------


def test_layer4_keeps_system_and_the_last_two_rounds_and_retries_once() -> None:
    # the estimator undercounts 10x, so proactive layers never fire and the provider rejects
    class Tenth(TokenCounter):
        kind = "estimator"

        def __init__(self) -> None:
            super().__init__("tenth", "test")

        def count(self, text: str) -> int:
            return len(text) // 40

        def message_tokens(self, message: Message) -> int:
            return len(message.content) // 40

    out = run(react(30), 3000, estimator=Tenth(), snapshots=False)
    l4 = [c for c in compactions(out) if c["layer"] == "layer4"]
    assert l4
    call = l4[0]["call"]
    attempts = [e.to_dict() for e in out.events if e.type == ev.PROVIDER_CALL and e.call == call]
    assert (
        [a["attempt"] for a in attempts] == [0, 1]
        and attempts[0]["ok"] is False
        and attempts[1]["ok"] is True
    )
    assert statuses(out, call)[-1]["compact_layer"] == "layer4"
    assert l4[0]["messages_after"] == 1 + 2 * 2  # system + two (assistant, observation) rounds
    assert out.result.reactive_retries == len(l4)


def test_layer4_retries_only_once() -> None:
    big = Trace(
        "b",
        (
            Message("system", "s"),
            Message("user", "Observation: " + "q" * 20_000),
            Message("assistant", "a"),
        ),
    )
    out = run(big, 1000, snapshots=False, persist_tool_results=False)
    attempts = [e["attempt"] for e in out.events if e.type == ev.PROVIDER_CALL]
    assert attempts == [0, 1] and out.result.failed_calls == 1


def test_layer4_ignores_errors_without_its_markers() -> None:
    out = run(
        react(20),
        2000,
        style="anthropic",
        estimator=CHARS4,
        snapshots=False,
        warning_threshold=0.99,
        error_threshold=0.995,
        critical_threshold=0.999,
        max_context_tokens=100_000,
    )
    assert out.result.failed_calls > 0 and out.result.reactive_retries == 0
