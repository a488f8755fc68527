"""DB-GPT agent context management: one test per rule of the design document and REFERENCE.md."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.cli import cli
from ctxbench.counting import get_counter
from ctxbench.counting.base import TokenCounter
from ctxbench.engine import events as ev
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.errors import ConfigError, SummarizerError
from ctxbench.formats.canonical import write_traces
from ctxbench.pairing import pairing_violations, rounds
from ctxbench.strategies import build_strategy
from ctxbench.strategies.dbgpt import DbgptStrategy, generate_preview, manager_rounds
from ctxbench.strategies.dbgpt.memory import stored
from ctxbench.summarizers.base import Summarizer, SummaryRequest
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.trace import Message, ToolCall, Trace
from tests.factories import replay_context, tool_trace
from tests.replaying import Failing

CHARS4 = get_counter("chars4")


#: knobs that leave only layer 3 to act (nothing is old enough for layer 1, nothing droppable for layer 2)
ONLY_L3: dict[str, Any] = {
    "warning_threshold": 0.5,
    "error_threshold": 0.5,
    "critical_threshold": 0.9,
    "max_observation_age_rounds": 100,
    "min_keep_tokens": 100_000,
}


def react(n: int, obs_chars: int = 400, trace_id: str = "r") -> Trace:
    msgs = [
        Message("system", "You are a data agent. Task progress: none."),
        Message("user", "Sum sales by region."),
    ]
    for i in range(n):
        msgs.append(
            Message("assistant", f"Thought: step {i}\nAction: sql_query\nAction Input: SELECT {i}")
        )
        body = f"row{i}|" + ("x" * (obs_chars - 20))
        msgs.append(Message("user", f"Observation: {body}"))
    msgs.append(Message("assistant", "Final answer"))
    return Trace(trace_id, tuple(msgs))


def dbgpt(params: dict[str, Any]) -> DbgptStrategy:
    """A DB-GPT strategy built by name, typed as what it is, as designed (the rules these
    tests describe; 0.8.2's are tested at the end)."""
    strategy = build_strategy("dbgpt", {"release": "design", **params})
    assert isinstance(strategy, DbgptStrategy)
    return strategy


def run(
    trace: Trace,
    window: int,
    *,
    reserved: int = 0,
    summarizer: Summarizer | None = None,
    counter: TokenCounter = CHARS4,
    estimator: TokenCounter = CHARS4,
    style: str = "openai",
    **params: Any,
) -> ReplayOutput:
    strategy = build_strategy("dbgpt", {"release": "design", **params})
    return replay(
        trace,
        strategy,
        SimulatedProvider(window, reserved, style),
        true_counter=counter,
        estimator=estimator,
        summarizer=summarizer,
    )


def statuses(out: ReplayOutput, call: int | None = None) -> list[dict[str, Any]]:
    return [
        e.to_dict()
        for e in out.events
        if e.type == ev.CONTEXT_STATUS and (call is None or e.call == call)
    ]


def compactions(out: ReplayOutput) -> list[dict[str, Any]]:
    return [e.to_dict() for e in out.events if e.type == ev.COMPACTION]


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
        for m in _final_view(out)
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
    out = strat.layer2(msgs, _ctx_for(strat))
    # the last three rounds are (assistant, observation) x 2 and the final answer
    assert out == [msgs[0], *msgs[-5:]]


def test_layer2_walks_back_until_min_keep_tokens_are_kept() -> None:
    strat = dbgpt({"min_keep_recent_rounds": 1, "min_keep_tokens": 250})
    msgs = react(8, obs_chars=400).messages  # each round ~ 110 tokens by chars4
    out = strat.layer2(msgs, _ctx_for(strat))
    kept_rounds = rounds([m for m in out if m.role != "system"])
    kept_tokens = sum(CHARS4.count_message(m) for m in out if m.role != "system")
    # rounds are added until >= 250 tokens; the round where the walk stops is counted, not kept
    assert kept_tokens < 250 + 120 and len(kept_rounds) == 3


def test_layer2_with_few_rounds_changes_nothing() -> None:
    strat = dbgpt({"min_keep_recent_rounds": 3})
    msgs = react(2).messages
    assert strat.layer2(msgs, _ctx_for(strat)) == list(msgs)


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
    view = _final_view(out)
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


# -- snapshots and persistence ------------------------------------------------------------------------


def test_every_tool_result_gets_a_snapshot_file_and_a_pointer() -> None:
    out = run(react(3), 100_000)
    assert sorted(out.files) == [f"op_snapshots/r/step_{i:03d}_sql_query.json" for i in (1, 2, 3)]
    snap = json.loads(out.files["op_snapshots/r/step_002_sql_query.json"])
    assert list(snap) == [
        "step",
        "action",
        "phase",
        "action_intention",
        "action_reason",
        "thought",
        "action_input",
        "observation",
        "timestamp",
        "conv_id",
    ]
    assert (
        snap["step"] == 2 and snap["action"] == "sql_query" and snap["action_input"] == "SELECT 1"
    )
    assert snap["observation"].startswith("row1|") and snap["thought"] == "step 1"
    view = _final_view(out)
    assert view[3].content.endswith(
        "\n[Full detail available at: op_snapshots/r/step_001_sql_query.json]"
    )


def test_native_tool_results_get_snapshots_named_after_the_tool() -> None:
    out = run(tool_trace(2), 100_000)
    snap = json.loads(out.files["op_snapshots/t/step_001_bash.json"])
    assert snap["action"] == "bash" and snap["action_input"] == '{"cmd": "step 0.0"}'


def test_oversized_results_are_persisted_with_a_preview() -> None:
    trace = Trace(
        "p",
        (
            Message("user", "go"),
            Message("assistant", "Thought: q\nAction: kb_grep\nAction Input: x"),
            Message("user", "Observation: " + "line\n" * 5000),
            Message("assistant", "done"),
        ),
    )
    out = run(trace, 100_000, tool_result_threshold=10_000, scale_to_window=False, snapshots=False)
    kept = _final_view(out)[2].content
    assert kept.startswith(
        "Observation: <persisted-output>\nThis tool result was too large (25,013 characters, 24.4 KB)."
    )
    path = next(p for p in out.files if p.startswith("persisted_results/p/"))
    assert f"Full output saved to: {path}" in kept and kept.endswith("\n...\n</persisted-output>")
    assert out.files[path].decode().startswith("Observation: line")
    assert [c["layer"] for c in compactions(out)] == ["persist"]


def test_read_file_results_are_never_persisted() -> None:
    trace = tool_trace(1, output="r" * 50_000)
    trace = Trace(
        "rf",
        tuple(
            m
            if not m.tool_calls
            else m.__class__(
                "assistant",
                "",
                tool_calls=tuple(c.__class__(c.id, "read_file", c.arguments) for c in m.tool_calls),
            )
            for m in trace.messages
        ),
    )
    out = run(trace, 100_000, tool_result_threshold=1000, scale_to_window=False, snapshots=False)
    assert not out.files


def test_turn_budget_spills_the_largest_results_first() -> None:
    trace = tool_trace(1, calls=3, output="s" * 9000)
    big = trace.messages[3].with_text("B" * 15_000)
    msgs = list(trace.messages)
    msgs[3] = big
    out = run(
        Trace("tb", tuple(msgs)),
        100_000,
        scale_to_window=False,
        tool_result_threshold=50_000,
        turn_result_budget=30_000,
        snapshots=False,
    )
    view = _final_view(out)
    persisted = [i for i, m in enumerate(view) if "<persisted-output>" in m.content]
    assert persisted == [3]


def test_preview_cuts_at_the_last_newline_past_half() -> None:
    assert generate_preview("a" * 10 + "\n" + "b" * 10, 15) == ("a" * 10 + "\n", True)
    assert generate_preview("ab\n" + "c" * 20, 15) == ("ab\n" + "c" * 12, True)


# -- configuration -------------------------------------------------------------------------------------


def test_the_agent_context_toml_section_is_accepted_by_run_config(tmp_path: Path) -> None:
    (tmp_path / "dbgpt.toml").write_text(
        "[service.web.agent_context]\nmax_context_tokens = 120000\nreserved_tokens = 4096\nwarning_threshold = 0.70\n"
        "error_threshold = 0.90\ncritical_threshold = 0.95\nmin_keep_recent_rounds = 3\nmax_observation_age_rounds = 5\n"
        "truncated_observation_max_chars = 200\nmin_keep_tokens = 10000\nmax_compact_failures = 3\n",
        "utf-8",
    )
    write_traces(tmp_path / "t.jsonl", [react(3)])
    result = CliRunner().invoke(
        cli,
        [
            "run",
            str(tmp_path / "t.jsonl"),
            "-s",
            "dbgpt",
            "--config",
            str(tmp_path / "dbgpt.toml"),
            "-w",
            "32000",
            "--counter",
            "chars4",
            "--estimator",
            "chars4",
            "--json",
            "--files-dir",
            str(tmp_path / "files"),
        ],
    )
    assert result.exit_code == 0, result.output
    row = json.loads(result.output.splitlines()[0])
    assert json.loads(row["params"])["max_context_tokens"] == 120000
    # 0.8.2 (the default) names snapshots {conv_id}/step_NNN_<action>.json
    assert (tmp_path / "files" / row["run_id"] / "r" / "step_001_sql_query.json").exists()


def test_unknown_set_key_lists_valid_keys_with_types_and_defaults(tmp_path: Path) -> None:
    write_traces(tmp_path / "t.jsonl", [react(1)])
    result = CliRunner().invoke(
        cli,
        [
            "run",
            str(tmp_path / "t.jsonl"),
            "-s",
            "dbgpt",
            "-w",
            "8000",
            "--counter",
            "chars4",
            "--set",
            "warn_threshold=0.5",
        ],
    )
    assert result.exit_code != 0
    text = str(result.exception) + result.output
    assert "warn_threshold" in text and "warning_threshold (float, default 0.7)" in text


def test_defaults_match_the_agent_context_section() -> None:
    cfg = DbgptStrategy().cfg
    assert (cfg.warning_threshold, cfg.error_threshold, cfg.critical_threshold) == (
        0.70,
        0.90,
        0.95,
    )
    assert (
        cfg.min_keep_recent_rounds,
        cfg.max_observation_age_rounds,
        cfg.observation_max_chars,
    ) == (3, 5, 200)
    assert cfg.release == "0.8.2", "the default is the latest release"
    assert (cfg.min_keep_tokens, cfg.max_compact_failures) == (10_000, 3)
    assert DbgptStrategy.default_estimator == "dbgpt"


def test_dbgpt_keeps_tool_pairs_on_native_traces() -> None:
    out = run(tool_trace(40, calls=3, output="o" * 500), 6000, summarizer=ExtractiveSummarizer())
    assert compactions(out) and out.result.pairing_violations == 0
    assert pairing_violations(_final_view(out)) == 0


# -- helpers ----------------------------------------------------------------------------------------------


def _final_view(out: ReplayOutput) -> list[Message]:
    return list(out.final_view)


def _ctx_for(strategy: Any) -> Any:
    """Layer 2 reads only the estimator from the context."""

    class Ctx:
        estimator = CHARS4

    return Ctx()


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


# -- dbgpt==0.8.2 (RELEASES.md) and the Layer-1 snapshot path --------------------------------------


def run_release(trace: Trace, window: int, **params: Any) -> ReplayOutput:
    return replay(
        trace,
        build_strategy("dbgpt", {"release": "0.8.2", **params}),
        SimulatedProvider(window, 0),
        true_counter=CHARS4,
        estimator=CHARS4,
        summarizer=ExtractiveSummarizer(),
    )


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


# -- the layers as rounds define them, whichever way the rounds are found ---------------------------


#: the kinds of message :func:`histories` draws from, each as likely as its count here
KINDS = ("system", "user", "text", "call", "tool", "obs", "obs")


@st.composite
def histories(
    draw: st.DrawFn,
    kinds: Sequence[str] = KINDS,
    bodies: Sequence[int] = (10, 400),
    most: int = 24,
) -> tuple[Message, ...]:
    """A manager's input: system messages anywhere, questions, text and tool-calling turns,
    tool results and ``Observation:`` turns, long and short."""
    out: list[Message] = []
    for i in range(draw(st.integers(0, most))):
        kind = draw(st.sampled_from(kinds))
        body = "x" * draw(st.sampled_from(bodies))
        if kind == "system":
            out.append(Message("system", f"s{i}"))
        elif kind == "user":
            out.append(Message("user", f"q{i}"))
        elif kind == "text":
            out.append(Message("assistant", f"Thought: {i}"))
        elif kind == "call":
            out.append(Message("assistant", f"t{i}", tool_calls=(ToolCall(f"c{i}", "bash"),)))
        elif kind == "tool":
            out.append(Message("tool", f"r{i} {body}", tool_call_id=f"c{i - 1}"))
        else:
            out.append(Message("user", f"Observation: {i} {body}"))
    return tuple(out)


def _layer1_by_rounds(
    strat: DbgptStrategy, msgs: tuple[Message, ...], current: int
) -> list[Message]:
    """Layer 1 as written: every message of a round older than the cutoff, cut."""
    out = list(msgs)
    for r, indices in enumerate(manager_rounds(msgs, strat.rules)):
        if r < current - strat.cfg.max_observation_age_rounds:
            for i in indices:
                out[i] = strat._cuts(out[i])
    return out


def _layer2_by_rounds(strat: DbgptStrategy, msgs: tuple[Message, ...], ctx: Any) -> list[Message]:
    """Layer 2 as written: walk back over whole rounds until both floors are kept."""
    system = [m for m in msgs if m.role == "system"]
    conv = [m for m in msgs if m.role != "system"]
    segs = manager_rounds(conv, strat.rules)
    if not conv or len(segs) <= strat.cfg.min_keep_recent_rounds:
        return list(msgs)
    keep_from, kept = len(segs) - strat.cfg.min_keep_recent_rounds, 0
    for r in range(len(segs) - 1, -1, -1):
        kept += sum(strat._counts([conv[i]], ctx)[0] for i in segs[r])
        if r < keep_from and kept >= strat.cfg.min_keep_tokens:
            break
        keep_from = min(keep_from, r)
    if keep_from <= 0:
        return list(msgs)
    keep = {i for seg in segs[keep_from:] for i in seg}
    return system + [m for i, m in enumerate(conv) if i in keep]


@settings(max_examples=300, deadline=None)
@given(
    histories(),
    st.sampled_from(["0.8.2", "design"]),
    st.integers(0, 4),
    st.integers(0, 12),
    st.sampled_from([0, 150, 600]),
)
def test_layers_1_and_2_keep_and_cut_whole_rounds_as_manager_rounds_segments_them(
    msgs: tuple[Message, ...], release: str, keep_rounds: int, current: int, keep_tokens: int
) -> None:
    strat = build_strategy(
        "dbgpt",
        {
            "release": release,
            "min_keep_recent_rounds": keep_rounds,
            "max_observation_age_rounds": 2,
            "min_keep_tokens": keep_tokens,
            "truncated_observation_max_chars": 40,
        },
    )
    assert isinstance(strat, DbgptStrategy)
    ctx = replay_context()
    assert strat._round_ends(msgs) == [r[-1] for r in manager_rounds(msgs, strat.rules)]
    assert strat.layer1(msgs, current) == _layer1_by_rounds(strat, msgs, current)
    assert strat.layer2(msgs, ctx) == _layer2_by_rounds(strat, msgs, ctx)
