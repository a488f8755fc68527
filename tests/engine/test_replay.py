"""The replay engine: open-loop semantics, the simulated provider, events and the result row."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.engine.caches import Caches, using
from ctxbench.engine.context import ReplayContext, safe_component, safe_path
from ctxbench.engine.provider import ERROR_STYLES, SimulatedProvider, is_overflow_error
from ctxbench.engine.recorder import recorder_of
from ctxbench.engine.replay import MAX_ATTEMPTS, ReplayOutput, replay
from ctxbench.engine.result import Identity, Prices, result_from_events
from ctxbench.errors import ConfigError, ProviderOverflowError
from ctxbench.probes.model import Probe
from ctxbench.probes.needed import needed_uses
from ctxbench.strategies import build_strategy
from ctxbench.strategies.base import ReplyAborted, Strategy
from ctxbench.trace import Message, ToolCall, Trace
from tests.factories import tool_trace, valid_messages

CHARS4 = get_counter("chars4")


def run(
    trace: Trace, strategy: Strategy | str, window: int = 100_000, reserved: int = 0, **kw: Any
) -> ReplayOutput:
    strat = build_strategy(strategy) if isinstance(strategy, str) else strategy
    return replay(
        trace,
        strat,
        SimulatedProvider(window, reserved),
        true_counter=CHARS4,
        estimator=CHARS4,
        **kw,
    )


def lines(out: ReplayOutput) -> str:
    return "\n".join(ev.event_line(e) for e in out.events)


# -- provider ------------------------------------------------------------------------------------


@pytest.mark.parametrize("style", ERROR_STYLES)
def test_provider_accepts_exactly_the_limit_and_rejects_one_more(style: str) -> None:
    provider = SimulatedProvider(1000, 100, style)
    provider.check(900)
    with pytest.raises(ProviderOverflowError) as info:
        provider.check(901)
    assert info.value.prompt_tokens == 901 and info.value.limit == 900
    assert is_overflow_error(str(info.value))


def test_provider_messages_read_like_the_real_providers() -> None:
    def text(style: str) -> str:
        with pytest.raises(ProviderOverflowError) as info:
            SimulatedProvider(8192, 1000, style).check(9000)
        return str(info.value)

    assert "context_length_exceeded" in text(
        "openai"
    ) and "maximum context length is 8192 tokens" in text("openai")
    assert "prompt is too long: 10000 tokens > 8192 maximum" in text("anthropic")
    assert "maximum context length is 8192 tokens" in text(
        "vllm"
    ) and "9000 in the messages" in text("vllm")


@pytest.mark.parametrize("window,reserved", [(0, 0), (100, 100), (100, -1)])
def test_provider_rejects_impossible_windows(window: int, reserved: int) -> None:
    with pytest.raises(ConfigError):
        SimulatedProvider(window, reserved)


# -- open-loop replay ------------------------------------------------------------------------------


def test_every_recorded_assistant_message_is_one_call_and_prompts_grow_as_recorded() -> None:
    trace = tool_trace(6, calls=2)
    out = run(trace, "none")
    calls = [e for e in out.events if e.type == ev.PROVIDER_CALL]
    assert [e.call for e in calls] == list(range(len(trace.call_indices)))
    for e, index in zip(calls, trace.call_indices):
        # the prompt before call k is every recorded message before that assistant message
        assert e["true_tokens"] == CHARS4.count_prompt(trace.messages[:index])
        assert e["messages"] == index
    assert out.result.calls == len(trace.call_indices) and out.result.failed_calls == 0


def test_on_call_hears_every_model_call_in_order_and_changes_nothing() -> None:
    trace = tool_trace(5, calls=2)
    heard: list[tuple[int, int]] = []
    out = run(
        trace,
        "sliding_window",
        window=3000,
        on_call=lambda done, total: heard.append((done, total)),
    )
    n = len(trace.call_indices)
    assert heard == [(k, n) for k in range(1, n + 1)]
    assert lines(out) == lines(run(trace, "sliding_window", window=3000))


def test_same_inputs_give_byte_identical_events_and_rows() -> None:
    trace = tool_trace(20, calls=2, output="x" * 300)
    a = run(trace, "sliding_window", window=3000)
    b = run(trace, build_strategy("sliding_window"), window=3000)
    assert lines(a) == lines(b)
    assert a.result == b.result


def test_a_prompt_over_the_window_is_a_failed_call_when_the_strategy_cannot_help() -> None:
    trace = tool_trace(10, output="y" * 400)
    out = run(trace, "none", window=800)
    failed = [e for e in out.events if e.type == ev.CALL_FAILED]
    assert failed and out.result.failed_calls == len(failed) == out.result.overflow_errors
    first = failed[0]
    ordered = [e for e in out.events if e.call == first.call]
    assert [e.type for e in ordered] == [ev.CONTEXT_STATUS, ev.PROVIDER_CALL, ev.CALL_FAILED]
    assert "maximum context length" in ordered[1]["error"]
    assert out.result.peak_ratio > 1


class AlwaysRetry(Strategy):
    name = "always_retry"

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        return True


def test_a_strategy_that_always_retries_is_stopped_by_the_attempt_valve() -> None:
    out = run(tool_trace(3, output="z" * 400), AlwaysRetry(), window=300)
    first_failed = next(e for e in out.events if e.type == ev.CALL_FAILED)
    assert first_failed["attempts"] == MAX_ATTEMPTS


class RaisesBefore(Strategy):
    """A framework whose context code raises before the model call at call 2."""

    name = "raises_before"

    def before_call(self, ctx: ReplayContext) -> None:
        if ctx.call == 2:
            raise ReplyAborted("ValueError: Load resource error")


class RaisesOnOverflow(Strategy):
    """A framework that turns the provider's overflow into its own exception."""

    name = "raises_on_overflow"

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        raise ReplyAborted(f"ValueError: {error}")


def test_a_reply_aborted_before_the_call_fails_it_without_a_provider_attempt() -> None:
    out = run(tool_trace(4), RaisesBefore())
    at_two = [e for e in out.events if e.call == 2]
    assert [e.type for e in at_two] == [ev.CONTEXT_STATUS, ev.CALL_FAILED]
    assert at_two[1]["kind"] == ev.ABORTED and at_two[1]["attempts"] == 0
    assert at_two[1]["error"] == "ValueError: Load resource error"
    assert out.result.failed_calls == 1


def test_a_reply_aborted_on_overflow_fails_the_call_with_the_frameworks_text() -> None:
    out = run(tool_trace(3, output="z" * 400), RaisesOnOverflow(), window=300)
    failed = [e for e in out.events if e.type == ev.CALL_FAILED]
    assert failed and all(e["kind"] == ev.OVERFLOW and e["attempts"] == 1 for e in failed)
    calls = [e for e in out.events if e.type == ev.PROVIDER_CALL and e.call == failed[0].call]
    assert len(calls) == 1, "no retry after the framework raised"
    assert failed[0]["error"] == f"ValueError: {calls[0]['error']}"


class Reassembles(Strategy):
    """Rebuilds its prompt from memory with a marker on the system prompt, as DB-GPT's ReAct
    agent adds its task progress, without compacting."""

    name = "reassembles"
    kept: ClassVar[list[list[int | None]]] = []

    def before_call(self, ctx: ReplayContext) -> None:
        view = list(ctx.view.messages)
        prompt = [
            m.with_text(f"{m.content} #{ctx.call}") if m.role == "system" else m for m in view
        ]
        ctx.reassemble(prompt, view)
        self.kept.append([recorder_of(ctx).trace_index(m) for m in ctx.view.messages])


def test_a_reassembled_prompt_is_no_compaction_and_keeps_trace_indices() -> None:
    Reassembles.kept.clear()
    out = run(tool_trace(3), Reassembles())
    assert not [e for e in out.events if e.type == ev.COMPACTION]
    assert all(kept[0] == 0 and None not in kept for kept in Reassembles.kept)
    # each call's rewrite of the rewrite still names trace message 0
    assert len(Reassembles.kept) == 4
    assert out.final_view[0].content == "You are a careful agent. #0 #1 #2 #3"


def test_cached_tokens_are_the_prefix_shared_with_the_previous_accepted_prompt() -> None:
    trace = tool_trace(4)
    calls = [e for e in run(trace, "none").events if e.type == ev.PROVIDER_CALL]
    assert calls[0]["cached_tokens"] == 0
    for prev, cur in itertools.pairwise(calls):
        assert cur["cached_tokens"] == prev["true_tokens"]


def test_compaction_breaks_the_prompt_cache() -> None:
    trace = tool_trace(12, output="w" * 200)
    calls = [
        e for e in run(trace, "sliding_window", window=100_000).events if e.type == ev.PROVIDER_CALL
    ]
    slid = [c for c in calls if c.call > 8]
    # the window slides every call: only the system prompt stays a shared prefix
    system_tokens = CHARS4.count_message(trace.messages[0])
    assert all(c["cached_tokens"] == system_tokens for c in slid)


def test_probes_are_scored_on_the_prompt_before_their_call() -> None:
    trace = tool_trace(3, output="secret")
    late = Probe("late", "recall", "q", ("secret 2.0",), evidence=(8,), ask_at=2)
    now = Probe("now", "recall", "q", ("secret 2.0",), evidence=(8,), ask_at=3)
    end = Probe("end", "recall", "q", ("secret 0.0",), evidence=(4,))
    out = run(trace, "none", probes=(late, now, end))
    outcome = {e["probe_id"]: (e["outcome"], e.call) for e in out.events if e.type == ev.PROBE}
    assert outcome == {"late": ("lost", 2), "now": ("in_context", 3), "end": ("in_context", 4)}
    assert out.result.probes == 3 and out.result.retention == round(2 / 3, 4)


def test_result_row_is_a_function_of_the_events_alone() -> None:
    trace = tool_trace(
        15,
        calls=2,
        output="v" * 250,
        probes=(Probe("p", "recall", "q", ("v" * 10,), evidence=(3,)),),
    )
    out = run(trace, "sliding_window", window=2000)
    from_dicts = result_from_events(
        [json.loads(ev.event_line(e)) for e in out.events],
        Identity(trace_id=trace.id, strategy="sliding_window"),
    )
    assert from_dicts == out.result


def test_cost_uses_fresh_cached_and_summary_tokens() -> None:
    prices = Prices(input_per_mtok=2.0, cached_input_per_mtok=0.5, output_per_mtok=8.0)
    assert prices.cost(1_000_000, 400_000, 0, 0) == pytest.approx(1.2 + 0.2)
    out = run(tool_trace(3), "none", prices=prices)
    r = out.result
    expected = (
        (r.input_tokens_total - r.cached_input_tokens) * 2.0 + r.cached_input_tokens * 0.5
    ) / 1e6
    assert r.cost_usd == pytest.approx(expected, abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(valid_messages(), st.integers(0, 2**16))
def test_incremental_totals_equal_a_full_recount_after_any_compaction(
    msgs: list[Message], seed: int
) -> None:
    if not any(m.role == "assistant" for m in msgs):
        return
    rng = random.Random(seed)
    trace = Trace("p", tuple(msgs))

    class RandomDrop(Strategy):
        name = "random_drop"

        def before_call(self, ctx: ReplayContext) -> None:
            kept = [m for m in ctx.view.messages if rng.random() > 0.3]
            ctx.apply("drop", kept)
            assert ctx.view.true_tokens == CHARS4.count_prompt(kept)
            assert ctx.view.estimated_tokens == CHARS4.count_prompt(kept)

    run(trace, RandomDrop())


def test_status_events_have_exactly_dbgpt_fields_plus_call_and_step() -> None:
    status = next(e for e in run(tool_trace(1), "none").events if e.type == ev.CONTEXT_STATUS)
    assert list(status.to_dict()) == [
        "type",
        "used",
        "budget",
        "ratio",
        "state",
        "compact_layer",
        "call",
        "step",
    ]


def test_events_are_numbered_in_order() -> None:
    out = run(tool_trace(8, output="u" * 300), "sliding_window", window=1500)
    assert [e.step for e in out.events] == list(range(len(out.events)))
    assert [e.call for e in out.events] == sorted(e.call for e in out.events)


@pytest.mark.parametrize(
    "raw", ["../../etc/passwd", "/abs/path", "a/../../b", "..", "", "x" * 500, "ok-name_1.json"]
)
def test_file_names_from_untrusted_text_cannot_escape(raw: str) -> None:
    name = safe_component(raw)
    assert (
        "/" not in name
        and ".." not in name
        and name
        and not name.startswith(".")
        and len(name) <= 64
    )


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("snapshots/t/001_bash.json", "snapshots/t/001_bash.json"),
        ("../../etc/passwd", "etc/passwd"),
        ("/abs//./path", "abs/path"),
        ("..", "file"),
        ("", "file"),
    ],
)
def test_a_files_path_keeps_only_safe_components(raw: str, path: str) -> None:
    assert safe_path(raw) == path


def test_a_files_path_is_each_component_made_safe() -> None:
    raw = "persisted/a b:c/" + "x" * 100 + ".txt"
    parts = safe_path(raw).split("/")
    assert parts == [safe_component(p) for p in raw.split("/")]
    assert safe_path(raw) is safe_path(raw)  # worked out once


def test_a_summarizer_that_crashes_counts_as_a_failed_summary_not_a_crashed_replay() -> None:
    from ctxbench.counting.base import TokenCounter
    from ctxbench.summarizers.base import Summarizer, SummaryRequest

    class Broken(Summarizer):
        def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
            raise RuntimeError("bug in a plug-in")

    trace = tool_trace(30, output="b" * 400)
    strategy = build_strategy(
        "dbgpt",
        {
            "release": "design",
            "warning_threshold": 0.5,
            "error_threshold": 0.5,
            "critical_threshold": 0.9,
        },
    )
    out = replay(
        trace,
        strategy,
        SimulatedProvider(4000),
        true_counter=CHARS4,
        estimator=CHARS4,
        summarizer=Broken(),
    )
    failures = [e for e in out.events if e.type == ev.SUMMARY]
    assert failures and all(
        not e["ok"] and e["error"].startswith("crash: the summarizer raised RuntimeError")
        for e in failures
    )
    assert out.result.summary_calls == len(failures) and out.result.calls == len(trace.call_indices)


@pytest.mark.parametrize("strategy", ["sliding_window", "observation_masking"])
def test_a_run_that_ends_with_a_submit_call_has_no_broken_pair_when_compacted_at_the_end(
    strategy: str,
) -> None:
    # mini-swe-agent's and SWE-agent's runs end with a `submit` call that nothing answers; a
    # probe asked at the end makes the strategy compact the prompt that ends with it
    done = Message("assistant", "", tool_calls=(ToolCall("end", "submit", "{}"),))
    base = tool_trace(12, output="x" * 400)
    trace = Trace("t", (*base.messages[:-1], done), probes=(Probe("p", "task", "q", ("Fix",)),))
    strat = build_strategy(strategy, {"keep_rounds": 2} if strategy == "sliding_window" else {})
    out = run(trace, strat, window=1_000)
    end = [e for e in out.events if e.type == ev.COMPACTION and e.call == len(trace.call_indices)]
    assert end, "the strategy compacted the prompt that ends with the submit call"
    assert out.result.pairing_violations == 0


def test_a_caller_keeping_no_file_gets_the_same_events_and_only_the_contents_probes_read() -> None:
    """``file_contents=False``: a file written after the last call where something is scored
    is kept by path and hash alone; the events (snapshots, the probe's ``via_reference``) and
    the cited file are those of a replay keeping every content."""
    trace = tool_trace(12, output="filler " * 600 + "the code is")
    probe = Probe("p", "recall", "q", ("the code is 1.0",), evidence=(6,), ask_at=9)
    whole = run(trace, "dbgpt", window=6000, probes=(probe,))
    named = run(trace, "dbgpt", window=6000, probes=(probe,), file_contents=False)
    assert lines(named) == lines(whole) and named.result == whole.result
    assert named.cited == whole.cited == {"t/step_002_bash.json"}
    written = {e["path"]: (e["sha256"], e.call) for e in whole.events if e.type == ev.SNAPSHOT}
    assert named.written == whole.written == {p: sha for p, (sha, _) in written.items()}
    assert set(whole.files) == set(written)
    assert named.files == {p: whole.files[p] for p, (_, call) in written.items() if call <= 9}
    assert len(named.files) < len(whole.files)
    unasked = run(trace, "dbgpt", window=6000, file_contents=False)
    assert unasked.files == {} and unasked.written == whole.written


def test_a_caller_keeping_contents_after_one_that_kept_none_gets_every_file() -> None:
    """A sweep's cells share DB-GPT's snapshot memo: a cell keeping no file leaves only sizes
    and hashes there, and a later cell of the same caches that keeps its files still gets each
    file's bytes (the same bytes as a replay alone)."""
    trace = tool_trace(12, output="filler " * 600 + "the code is")
    alone = run(trace, "dbgpt", window=6000)
    with using(Caches()):
        named = run(trace, "dbgpt", window=6000, file_contents=False)
        whole = run(trace, "dbgpt", window=6000)
    assert named.files == {} and named.written == alone.written
    assert whole.files == alone.files and len(whole.files) == len(alone.written) > 0
    assert lines(whole) == lines(named) == lines(alone)


class Shuffles(Strategy):
    """Drops each message with probability ``drop`` at every call and may insert a hint
    anywhere (as AgentScope inserts its own)."""

    name = "shuffles"

    def __init__(self, seed: int, drop: float, insert: bool) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.drop, self.insert = drop, insert

    def before_call(self, ctx: ReplayContext) -> None:
        kept = [m for m in ctx.view.messages if self.rng.random() >= self.drop]
        if self.insert:
            kept.insert(self.rng.randrange(len(kept) + 1), Message("user", "hint"))
        if kept != list(ctx.view.messages):
            ctx.apply("shuffle", kept)


@pytest.mark.parametrize("drop", [0.0, 0.5, 0.9])
@pytest.mark.parametrize("insert", [False, True])
def test_needed_values_looked_up_lazily_break_where_looked_up_at_every_call(
    monkeypatch: pytest.MonkeyPatch, drop: float, insert: bool
) -> None:
    # the replay looks needed values up only once the prompt lacks a recorded message: the
    # same events as looking them up at every call
    from ctxbench.engine import replay as replay_module
    from tests.probes.test_needed import airline_trace

    trace = airline_trace()
    lazy = [lines(run(trace, Shuffles(seed, drop, insert))) for seed in range(30)]
    monkeypatch.setattr(replay_module._Shown, "all_before", lambda self, keys, index: False)
    eager = [lines(run(trace, Shuffles(seed, drop, insert))) for seed in range(30)]
    assert lazy == eager
    broken = sum(ev.OPEN_LOOP_BREAK in e for e in eager)
    assert broken == 0 if drop == 0.0 else broken > 0


def test_a_caller_keeping_no_file_keeps_the_contents_a_needed_value_may_be_read_from() -> None:
    """Needed values are scored at the calls that use them (recoverable through a snapshot):
    without probes, a caller keeping no file still holds every file written up to the last
    such call, and only those."""
    from tests.probes.test_needed import airline_trace

    trace = airline_trace()
    whole = run(trace, "dbgpt", window=400)
    named = run(trace, "dbgpt", window=400, file_contents=False)
    uses = needed_uses(trace)
    last = max(use.call for use in uses)
    written = {e["path"]: e.call for e in whole.events if e.type == ev.SNAPSHOT}
    assert uses and lines(named) == lines(whole)
    assert named.files == {p: whole.files[p] for p, call in written.items() if call <= last}
    assert named.files
