"""Drift judged by what the provider billed, and the prompt cache the provider bills."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.counting import get_counter
from ctxbench.counting.content_class import classify
from ctxbench.engine.provider import DEEPSEEK_CACHE, PromptCache
from ctxbench.formats.importing import import_file
from ctxbench.report.decisions import (
    CallRecord,
    recorded_prompts,
    usage_ratios,
    with_recorded_truth,
)
from ctxbench.report.document import replay_drift
from ctxbench.trace import Message, ToolCall, Trace, Usage

WINDOW, RESERVED = 20_000, 0


def billed_trace(trace_id: str, billed: list[int | None]) -> Trace:
    """Small prompts the provider billed as ``billed`` (None: no usage recorded)."""
    msgs: list[Message] = [Message("system", "You are an agent."), Message("user", "Go.")]
    for i, tokens in enumerate(billed):
        call = ToolCall(f"{trace_id}{i}", "ls", "{}")
        usage = Usage(tokens, 5) if tokens is not None else None
        msgs.append(Message("assistant", "Listing.", tool_calls=(call,), usage=usage))
        msgs.append(Message("tool", "a.txt b.txt " * 20, tool_call_id=call.id))
    return Trace(trace_id, tuple(msgs))


def test_recorded_prompt_tokens_replace_the_counter_where_present() -> None:
    trace = billed_trace("t", [100, None, 19_500])
    recorded = recorded_prompts(trace)
    assert recorded == {0: 100, 2: 19_500}
    records = [CallRecord(c, 0, 50, 60, WINDOW, True) for c in range(3)]
    judged, used = with_recorded_truth(records, recorded)
    assert used == 2 and [r.true for r in judged] == [100, 60, 19_500]
    too_long = with_recorded_truth([CallRecord(0, 0, 50, 60, 90, True)], recorded)[0][0]
    assert too_long.ok is False  # the provider billed more than the limit


def test_drift_uses_recorded_usage_when_present_and_says_so() -> None:
    # the last call was billed near the limit: the state by the bill is "critical" while
    # every counter of these small messages says "normal"
    with_usage = billed_trace("u", [300, 400, 19_500])
    without = billed_trace("n", [None, None, None])
    [cell] = replay_drift([with_usage], ["tiktoken:o200k_base"], ["chars4"], [WINDOW], RESERVED)
    assert cell.recorded_calls == 3 and cell.truth == "recorded"
    assert cell.drift.under == 1 and cell.drift.flips[0][:2] == ("normal", "critical")
    [plain] = replay_drift([without], ["tiktoken:o200k_base"], ["chars4"], [WINDOW], RESERVED)
    assert plain.recorded_calls == 0 and plain.truth == "counter" and plain.drift.under == 0
    [mixed] = replay_drift(
        [billed_trace("m", [300, None, 400])],
        ["tiktoken:o200k_base"],
        ["chars4"],
        [WINDOW],
        RESERVED,
    )
    assert mixed.truth == "recorded+counter"


def test_usage_ratios_are_estimate_over_recorded_per_call() -> None:
    trace = billed_trace("u", [300, None, 900])
    counter = get_counter("chars4")
    ratios = usage_ratios([trace], [counter], classify)
    assert [r.call for r in ratios] == [0, 2]
    index = trace.call_indices[2]
    assert ratios[1].ratio == counter.count_prompt(trace.messages[:index]) / 900


def cache_hits(trace: Trace, counter: str) -> list[int]:
    """The cached tokens of every provider call of a replay without compaction, built by the
    runner (which picks the provider's cache model from the counter)."""
    spec = resolve_spec(
        RunSpec(
            trace_id=trace.id,
            trace_hash=trace.content_hash,
            strategy="none",
            window=1_000_000,
            reserved=0,
            counter=counter,
            estimator="chars4",
        )
    )
    events = [e.to_dict() for e in run_spec(spec, trace).events]
    return [e["cached_tokens"] for e in events if e["type"] == "provider.call"]


def test_deepseek_bills_its_cache_in_64_token_units_with_the_reply() -> None:
    assert DEEPSEEK_CACHE.billed(63) == 0 and DEEPSEEK_CACHE.billed(1000) == 960
    assert PromptCache().billed(1000) == 1000 and PromptCache().billed(0) == 0
    trace = billed_trace("c", [None] * 4)

    deepseek = get_counter("hf:deepseek-v3.1")
    got = cache_hits(trace, "hf:deepseek-v3.1")
    for k, previous in enumerate(trace.call_indices[:-1], 1):
        # the previous prompt and its reply (the assistant message at ``previous``)
        shared = deepseek.prompt_overhead() + sum(
            deepseek.count_message(m) for m in trace.messages[: previous + 1]
        )
        assert got[k] == shared // 64 * 64
    exact = get_counter("tiktoken:o200k_base")
    plain = cache_hits(trace, "tiktoken:o200k_base")
    assert plain[1] == exact.prompt_overhead() + sum(
        exact.count_message(m) for m in trace.messages[: trace.call_indices[0]]
    )


def test_the_engine_cache_matches_the_recorded_deepseek_cache_hits(shared_traces: Path) -> None:
    """Replayed without compaction with the model's counter, the engine's cache hits are
    within 7% of what DeepSeek billed (the rest is the prompt undercount a profile fixes)."""
    traces, _ = import_file(shared_traces / "mini-swe-agent" / "astropy__astropy-12907.traj.json")
    trace = traces[0]
    recorded = [m.usage.cached_tokens for m in trace.messages if m.role == "assistant" and m.usage]
    got = cache_hits(trace, "hf:deepseek-v3")
    assert all(g % 64 == 0 for g in got)
    pairs = [(g, r) for g, r in zip(got[1:], recorded[1:]) if r]
    ratio = sum(g for g, _ in pairs) / sum(r for _, r in pairs)
    assert 0.93 <= ratio <= 1.0


def test_calls_after_a_recorded_compaction_count_the_compacted_prompt() -> None:
    """Calibration counts what the agent sent after its own compaction (the summary and the
    messages since); drift stops using recorded usage there (a replay does not compact)."""
    from ctxbench.calibration import samples
    from ctxbench.trace import RecordedCompaction

    plain = billed_trace("k", [300, 400, 500])
    cut = plain.call_indices[2] - 1  # the tool result before the third call starts afresh
    trace = replace(
        plain, recorded_compactions=(RecordedCompaction(2, cut, summary="Listed files twice."),)
    )
    counter = get_counter("chars4")
    last = samples(trace, counter)[-1]
    prompt = [trace.messages[0], Message("user", "Listed files twice."), trace.messages[cut]]
    assert last.counted == counter.count_prompt(prompt) and last.messages == 3
    assert samples(plain, counter)[-1].counted > last.counted
    assert recorded_prompts(trace) == {0: 300, 1: 400}
