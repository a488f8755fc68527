"""Hermes ``ContextCompressor``: one test per rule of its reading at the later commit
and its design document (docs/sources.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import pytest

from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.errors import ProviderOverflowError, SummarizerError
from ctxbench.pairing import pairing_violations
from ctxbench.strategies.base import ProviderCall
from ctxbench.strategies.hermes import (
    COMPRESSION_NOTE,
    DUPLICATE_TOOL_OUTPUT,
    IMAGE_STRIPPED,
    MERGED_PRIOR_CONTEXT_HEADER,
    MERGED_SUMMARY_DELIMITER,
    SCREENSHOT_REMOVED,
    SUMMARY_END_MARKER,
    SUMMARY_PREFIX,
    SUMMARY_SECTIONS,
    HermesConfig,
    HermesStrategy,
    bound_summary_input,
    compute_limits,
    fallback_summary,
    find_tail_cut,
    is_context_error,
    prune_old_tool_results,
    sanitize_tool_pairs,
    serialize_for_summary,
    shrink_json_arguments,
    summarize_tool_result,
)
from ctxbench.summarizers.base import Summarizer, SummaryRequest
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.summarizers.failing import FailingSummarizer
from ctxbench.trace import Message, Part, ToolCall, Trace
from tests import replaying
from tests.factories import tool_trace
from tests.replaying import Recording
from tests.upstream.helpers import context_with

HERMES = get_counter("hermes")
#: the tests below describe the rules of the later commit docs/sources.md names
LATER: Literal["0000416b"] = "0000416b"


def run(
    trace: Trace,
    window: int,
    *,
    reserved: int = 0,
    summarizer: Summarizer | None = None,
    **params: Any,
) -> ReplayOutput:
    return replaying.run(
        trace,
        "hermes",
        window,
        reserved=reserved,
        summarizer=summarizer if summarizer is not None else ExtractiveSummarizer(),
        estimator=HERMES,
        counter=HERMES,
        **{"release": LATER, **params},
    )


def context(
    strategy: HermesStrategy, window: int = 20_000, summarizer: Summarizer | None = None
) -> ReplayContext:
    ctx = context_with(
        strategy,
        (),
        window=window,
        estimator=HERMES,
        summarizer=summarizer or ExtractiveSummarizer(),
    )
    strategy.on_start(ctx)
    return ctx


def layers(out: ReplayOutput, *names: str) -> list[ev.Event]:
    return [e for e in out.events if e.type == ev.COMPACTION and e["layer"] in names]


def call(i: int, name: str = "terminal", args: dict[str, Any] | None = None) -> Message:
    return Message(
        "assistant",
        "",
        tool_calls=(ToolCall(f"c{i}", name, json.dumps(args or {"command": f"ls {i}"})),),
    )


def result(i: int, text: str) -> Message:
    return Message("tool", text, tool_call_id=f"c{i}")


def conversation(n: int, size: int = 2000, system: str = "You are Hermes.") -> list[Message]:
    msgs = [
        Message("system", system),
        Message("user", "Fix the failing test in /repo/tests/test_io.py"),
    ]
    for i in range(n):
        msgs += [call(i), result(i, f"output {i} " + "o" * size)]
    return msgs


# -- defaults and limits ----------------------------------------------------------------------------


def test_defaults_match_context_compressor() -> None:
    cfg = HermesConfig(release=LATER)
    assert (cfg.threshold_percent, cfg.protect_first_n, cfg.protect_last_n) == (0.50, 3, 20)
    assert cfg.summary_target_ratio == 0.20 and cfg.abort_on_summary_failure is False
    assert cfg.model_thresholds == {} and cfg.threshold_tokens_cap is None
    assert (cfg.proactive_prune_tokens, cfg.proactive_prune_min_result_chars) == (0, 8000)
    assert cfg.proactive_prune_min_reclaim_tokens == 4096 and cfg.min_tail_user_messages == 1
    assert cfg.max_compression_attempts == 3 and cfg.minimum_context_length == 64_000
    assert HermesStrategy.default_estimator == "hermes"


@pytest.mark.parametrize(
    ("window", "reserved", "threshold"),
    [
        (1_000_000, 0, 500_000),  # 50% of a large window
        (600_000, 100_000, 250_000),  # of the effective window (#43547)
        (200_000, 0, 150_000),  # windows under 512K: at least 75%
        (200_000, 20_000, 135_000),
        (64_000, 0, 54_400),  # the 64K floor meets the window: 85% (#14690)
        (8_000, 0, 6_800),
    ],
)
def test_threshold_is_a_share_of_the_effective_window_with_the_64k_floor(
    window: int, reserved: int, threshold: int
) -> None:
    assert (
        compute_limits(HermesConfig(release=LATER), window, reserved).threshold_tokens == threshold
    )


def test_threshold_tokens_cap_lowers_the_threshold_but_never_above_the_window() -> None:
    assert (
        compute_limits(
            HermesConfig(release=LATER, threshold_tokens_cap=40_000), 200_000, 0
        ).threshold_tokens
        == 40_000
    )
    assert (
        compute_limits(
            HermesConfig(release=LATER, threshold_tokens_cap=900_000), 200_000, 0
        ).threshold_tokens
        == 150_000
    )


def test_model_thresholds_use_the_longest_matching_key() -> None:
    cfg = HermesConfig(
        release=LATER, model="glm-5.2-1M", model_thresholds={"glm-5.2": 0.6, "glm-5.2-1M": 0.3}
    )
    assert compute_limits(cfg, 1_000_000, 0).threshold_tokens == 300_000
    with pytest.raises(ValueError, match="model_thresholds"):
        HermesConfig(release=LATER, model_thresholds={"x": 2.0})


def test_tail_budget_and_summary_ceiling_derive_from_the_threshold() -> None:
    limits = compute_limits(HermesConfig(release=LATER), 1_000_000, 0)
    assert limits.tail_token_budget == 100_000 and limits.max_summary_tokens == 10_000
    assert (
        compute_limits(
            HermesConfig(release=LATER, summary_target_ratio=0.95), 1_000_000, 0
        ).tail_token_budget
        == 400_000
    )
    assert compute_limits(HermesConfig(release=LATER), 100_000, 0).max_summary_tokens == 5_000


# -- the cheap prune ----------------------------------------------------------------------------------


def test_identical_tool_outputs_are_deduplicated_keeping_the_newest_even_in_the_tail() -> None:
    msgs = [
        Message("user", "go"),
        call(0),
        result(0, "same " * 60),
        call(1),
        result(1, "same " * 60),
    ]
    pruned, count = prune_old_tool_results(
        msgs, HERMES, protect_tail_count=20, protect_tail_tokens=None
    )
    assert pruned[2].content == DUPLICATE_TOOL_OUTPUT and pruned[4].content == "same " * 60
    assert count == 1


def test_duplicates_shorter_than_200_chars_are_kept() -> None:
    msgs = [call(0), result(0, "x" * 199), call(1), result(1, "x" * 199)]
    assert (
        prune_old_tool_results(msgs, HERMES, protect_tail_count=0, protect_tail_tokens=None)[1] == 0
    )


def test_old_tool_results_become_informative_one_line_summaries() -> None:
    msgs = [
        call(0, "terminal", {"command": "npm test"}),
        result(0, '{"exit_code": 0, "output": "' + "ok\\n" * 100 + '"}\nline2\nline3'),
        call(1, "read_file", {"path": "config.py", "offset": 1}),
        result(1, "r" * 1200),
        call(2, "grep_tool", {"pattern": "compress", "path": "agent/", "flags": "-n"}),
        result(2, "g" * 300),
        Message("user", "thanks"),
    ]
    pruned, _ = prune_old_tool_results(msgs, HERMES, protect_tail_count=1, protect_tail_tokens=None)
    assert pruned[1].content == "[terminal] ran `npm test` -> exit 0, 3 lines output"
    assert pruned[3].content == "[read_file] read config.py from line 1 (1,200 chars)"
    assert pruned[5].content == "[grep_tool] pattern=compress path=agent/ (300 chars result)"


def test_results_of_200_chars_or_fewer_are_not_summarised() -> None:
    msgs = [call(0), result(0, "x" * 200), Message("user", "next")]
    assert (
        prune_old_tool_results(msgs, HERMES, protect_tail_count=1, protect_tail_tokens=None)[1] == 0
    )


def test_long_tool_arguments_are_shrunk_keeping_valid_json() -> None:
    args = {"path": "/a/b.py", "content": "x" * 900, "lines": [1, 2]}
    shrunk = json.loads(shrink_json_arguments(json.dumps(args)))
    assert shrunk == {"path": "/a/b.py", "content": "x" * 200 + "...[truncated]", "lines": [1, 2]}
    assert shrink_json_arguments("not json " * 100) == "not json " * 100
    msgs = [call(0, "write_file", args), result(0, "ok"), Message("user", "go on")]
    pruned, _ = prune_old_tool_results(msgs, HERMES, protect_tail_count=1, protect_tail_tokens=None)
    assert json.loads(pruned[0].tool_calls[0].arguments)["content"].endswith("...[truncated]")


def test_images_in_old_tool_results_become_a_placeholder() -> None:
    image = Part("image_url", data={"image_url": {"url": "data:image/png;base64,AAAA"}})
    shot = Message.from_parts("tool", [Part("text", "screen"), image], tool_call_id="c0")
    pruned, _ = prune_old_tool_results(
        [call(0), shot, Message("user", "x")],
        HERMES,
        protect_tail_count=1,
        protect_tail_tokens=None,
    )
    assert [p.text for p in pruned[1].parts or ()] == ["screen", SCREENSHOT_REMOVED]


def test_the_protected_tail_is_not_pruned() -> None:
    msgs = conversation(6, size=1000)
    pruned, _ = prune_old_tool_results(msgs, HERMES, protect_tail_count=4, protect_tail_tokens=None)
    assert pruned[-4:] == msgs[-4:]
    assert pruned[3].content.startswith("[terminal] ran `ls 0`")


def test_pressure_pass_demotes_bulky_tail_results_but_keeps_the_last_three_messages() -> None:
    msgs = conversation(5, size=4000)  # the 8-message floor protects results 1-4 (~4,200 tokens)
    pruned, _ = prune_old_tool_results(
        msgs, HERMES, protect_tail_count=20, protect_tail_tokens=1500
    )
    assert pruned[5].content.startswith("[terminal] ran `ls 1`")
    assert pruned[7].content.startswith("[terminal] ran `ls 2`")  # now under 1.5 x 1500
    assert pruned[-3:] == msgs[-3:]


# -- head, tail and boundaries -----------------------------------------------------------------------


def test_head_is_the_system_prompt_plus_protect_first_n_then_decays_after_a_compaction() -> None:
    strategy = HermesStrategy(HermesConfig(release=LATER))
    msgs = conversation(20)
    assert strategy._head_size(msgs) == 4
    strategy.compression_count = 1
    assert strategy._head_size(msgs) == 1


def test_the_summarised_region_never_starts_on_a_tool_result() -> None:
    strategy = HermesStrategy(HermesConfig(release=LATER))
    ctx = context(strategy)
    msgs = conversation(20)  # head = system, user, call, result: the start lands after the result
    compressed, layer = strategy.compress(tuple(msgs), ctx)
    assert layer == "compaction"
    assert compressed[:2] == [
        msgs[0].with_text(msgs[0].content + "\n\n" + COMPRESSION_NOTE),
        msgs[1],
    ]
    assert compressed[2] == msgs[2] and compressed[3].tool_call_id == msgs[3].tool_call_id
    assert pairing_violations(compressed) == 0


def test_the_tail_never_splits_a_tool_group() -> None:
    msgs = conversation(30, size=400)
    for budget in range(50, 3000, 97):
        cut = find_tail_cut(msgs, 2, budget, HERMES, protect_last_n=20)
        assert msgs[cut].role != "tool"


def test_the_tail_keeps_at_least_min_protect_last_n_8_messages() -> None:
    msgs = conversation(30, size=4000)
    cut = find_tail_cut(msgs, 2, 10, HERMES, protect_last_n=20)
    assert len(msgs) - cut >= 8
    assert len(msgs) - find_tail_cut(msgs, 2, 10, HERMES, protect_last_n=2) >= 3


def test_the_last_user_message_stays_in_the_tail() -> None:
    msgs = [
        *conversation(6, size=200),
        Message("user", "now also fix test_b"),
        *[m for i in range(6, 20) for m in (call(i), result(i, "r" * 3000))],
    ]
    cut = find_tail_cut(msgs, 2, 100, HERMES, protect_last_n=3)
    assert cut <= msgs.index(msgs[14]) and msgs[cut].content == "now also fix test_b"


def test_the_last_assistant_reply_stays_in_the_tail() -> None:
    msgs = [
        *conversation(6, size=200),
        Message("assistant", "Here is what I found"),
        Message("user", "ok"),
    ]
    msgs += [m for i in range(6, 20) for m in (call(i), result(i, "r" * 3000))]
    cut = find_tail_cut(msgs, 2, 100, HERMES, protect_last_n=3)
    assert any(m.content == "Here is what I found" for m in msgs[cut:])


def test_when_everything_fits_the_soft_ceiling_the_tail_is_rewalked_with_the_raw_budget() -> None:
    msgs = conversation(10, size=100)
    total = sum(HERMES.count_message(m) for m in msgs[2:])
    budget = int(total / 1.4)  # everything fits 1.5 x budget, not the budget itself
    cut = find_tail_cut(msgs, 2, budget, HERMES, protect_last_n=3)
    assert 2 < cut < len(msgs)
    # the raw walk stops at the first message over the budget (it starts the tail)
    assert sum(HERMES.count_message(m) for m in msgs[cut + 2 :]) <= budget


# -- the summary ---------------------------------------------------------------------------------------


def test_summary_has_the_reference_only_prefix_and_the_end_marker() -> None:
    out = run(tool_trace(40, output="r" * 2000), 20_000)
    summaries = [m for m in out.final_view if m.meta.get("_compressed_summary")]
    assert len(summaries) == 1
    text = summaries[0].content
    assert text.startswith(SUMMARY_PREFIX + "\n## Historical Task Snapshot\n")
    assert text.endswith("\n\n" + SUMMARY_END_MARKER)
    assert "Respond ONLY to the latest user message" in SUMMARY_PREFIX


def test_summary_request_uses_the_template_headings_and_sends_no_token_cap() -> None:
    recording = Recording()
    run(tool_trace(40, output="r" * 2000), 20_000, summarizer=recording)
    first = recording.requests[0]
    assert first.sections == SUMMARY_SECTIONS and first.send_max_tokens is False
    assert "TURNS TO SUMMARIZE:" in first.prompt and "## Historical Task Snapshot" in first.prompt
    assert f"Target ~{first.max_tokens} tokens" in first.prompt and first.max_tokens == 2000
    assert "FOCUS TOPIC" in first.prompt  # derived from the last user turns


def test_later_compactions_update_the_previous_summary() -> None:
    recording = Recording()
    run(tool_trace(80, output="r" * 2000), 20_000, summarizer=recording)
    assert len(recording.requests) >= 2
    second = recording.requests[1]
    assert second.previous_summary and "PREVIOUS SUMMARY:" in second.prompt
    assert second.previous_summary in second.prompt
    assert not second.previous_summary.startswith(SUMMARY_PREFIX)


def test_serialisation_caps_each_message_and_labels_roles() -> None:
    text = serialize_for_summary(
        [
            Message("user", "hi"),
            call(1),
            result(1, "a" * 4000 + "b" * 3000),
            Message("assistant", "<think>hmm</think>done"),
        ]
    )
    assert text.startswith("[USER]: hi\n\n[ASSISTANT]: \n[Tool calls:\n  terminal(")
    assert "[TOOL RESULT c1]: " + "a" * 4000 + "\n...[truncated]...\n" + "b" * 1500 + "\n\n" in text
    assert text.endswith("[ASSISTANT]: done")


def test_summary_input_is_capped_at_160000_chars_around_an_omitted_middle() -> None:
    bounded = bound_summary_input("h" * 100_000 + "t" * 100_000)
    assert (
        len(bounded) <= 160_000
        and bounded.startswith("h" * 70_000)
        and bounded.endswith("t" * 80_000)
    )
    assert "...[summary input truncated: omitted " in bounded


def test_the_task_snapshot_is_overwritten_with_the_newest_user_turn() -> None:
    # the task sits in the protected head at the first compaction, in the middle at the next
    out = run(tool_trace(80, output="r" * 2000, task="Fix the bug in src/app.py"), 20_000)
    text = next(m for m in out.final_view if m.meta.get("_compressed_summary")).content
    snapshot = text.split("## Historical Task Snapshot\n", 1)[1].split("\n## ", 1)[0]
    assert (
        "User asked (deterministic, from compacted turns): 'Fix the bug in src/app.py'" in snapshot
    )


def test_the_system_prompt_gets_the_compaction_note_once() -> None:
    out = run(tool_trace(80, output="r" * 2000), 20_000)
    assert len(layers(out, "compaction")) >= 2
    assert out.final_view[0].content.count(COMPRESSION_NOTE) == 1


def test_the_summary_role_follows_the_head_and_merges_when_both_roles_collide() -> None:
    strategy = HermesStrategy(HermesConfig(release=LATER))
    strategy.summary_has_user_turn = True
    head = [Message("system", "s"), Message("user", "task"), Message("assistant", "reply")]
    standalone = strategy._assemble(head[:1], [], "S", [Message("assistant", "a")], 1)
    assert standalone[1].role == "user" and standalone[1].content == "S\n\n" + SUMMARY_END_MARKER
    flipped = strategy._assemble(head[:2], [], "S", [Message("user", "u")], 2)
    assert [m.role for m in flipped] == ["system", "user", "assistant", "user"]
    merged = strategy._assemble(head, [], "S", [Message("user", "later ask")], 3)
    assert len(merged) == 4 and merged[3].role == "user"
    assert merged[3].content == (
        f"{MERGED_PRIOR_CONTEXT_HEADER}\nlater ask\n\n{MERGED_SUMMARY_DELIMITER}\n\nS\n\n{SUMMARY_END_MARKER}"
    )
    forced = strategy._assemble(head[:1], [], "S", [Message("user", "u")], 1)
    assert forced[1].content == f"S\n\n{SUMMARY_END_MARKER}\n\nu"


def test_orphan_results_are_dropped_and_orphan_calls_stripped() -> None:
    msgs = [
        Message("assistant", "", tool_calls=(ToolCall("a", "t", "{}"), ToolCall("b", "t", "{}"))),
        Message("tool", "ra", tool_call_id="a"),
        Message("tool", "gone", tool_call_id="zzz"),
        Message("assistant", "", tool_calls=(ToolCall("c", "t", "{}"),)),
    ]
    clean = sanitize_tool_pairs(msgs)
    assert [c.id for c in clean[0].tool_calls] == ["a"]
    assert [m.content for m in clean] == ["", "ra", "(tool call removed)"]
    assert clean[2].tool_calls == ()


def test_images_before_the_newest_image_bearing_user_message_are_stripped_after_compaction() -> (
    None
):
    image = Part("image_url", data={"image_url": {"url": "https://e.com/a.png"}})
    msgs = [Message("system", "s"), Message.from_parts("user", [Part("text", "see"), image])]
    msgs += [m for i in range(3) for m in (call(i), result(i, f"r{i} " + "r" * 2000))]
    msgs.append(Message.from_parts("user", [Part("text", "and this"), image]))
    msgs += [m for i in range(3, 40) for m in (call(i), result(i, f"r{i} " + "r" * 2000))]
    out = run(Trace("img", (*msgs, Message("assistant", "done"))), 20_000)
    assert layers(out, "compaction")
    first, last = (m for m in out.final_view if m.parts)  # the protected head, the tail anchor
    assert first.content == f"see\n{IMAGE_STRIPPED}" and first.media_parts == ()
    assert last.media_parts == (image,)


# -- failures ------------------------------------------------------------------------------------------


def test_a_summarizer_failure_inserts_the_deterministic_fallback_summary() -> None:
    out = run(
        tool_trace(40, output="r" * 2000 + " Error: disk full at /var/log/app.log"),
        20_000,
        summarizer=FailingSummarizer(),
    )
    text = next(m for m in out.final_view if m.meta.get("_compressed_summary")).content
    assert text.startswith(SUMMARY_PREFIX) and len(text) <= 8000 + len("\n\n" + SUMMARY_END_MARKER)
    assert (
        "## Last Dropped Turns" in text
        and "Summary failure reason: http: injected http failure" in text
    )
    assert layers(out, "fallback_summary")


def test_the_fallback_summary_keeps_user_asks_tool_actions_paths_errors_and_last_turns() -> None:
    turns = [Message("user", "Please fix /srv/app/main.py")]
    for i in range(15):
        turns += [
            call(i, "read_file", {"path": f"/srv/f{i}.py"}),
            result(i, f"Traceback: ValueError in /srv/f{i}.py" if i == 3 else f"fine {i}"),
        ]
    text = fallback_summary(turns, "old summary", "http: down")
    assert "User asked: 'Please fix /srv/app/main.py'" in text
    assert "## Previous Summary Snapshot\nold summary" in text
    files = text.split("## Relevant Files\n")[1].split("\n\n")[0].splitlines()
    assert len(files) == 12 and files[0] == "- /srv/f0.py"
    assert "ValueError" in text.split("## Blocked\n")[1].split("\n\n")[0]
    dropped = text.split("## Last Dropped Turns\n")[1].split("\n\n")[0].splitlines()
    # the last 8 dropped turns, deduplicated (the 4 identical assistant turns become one)
    assert dropped == [
        "- ASSISTANT: tool calls: read_file",
        *[f"- TOOL: fine {i}" for i in range(11, 15)],
    ]
    assert len(fallback_summary([Message("user", "x" * 700)] * 200, "p" * 9000, None)) <= 8000


def test_abort_on_summary_failure_leaves_the_messages_unchanged() -> None:
    out = run(
        tool_trace(40, output="r" * 2000),
        20_000,
        summarizer=FailingSummarizer(),
        abort_on_summary_failure=True,
    )
    assert not layers(out, "compaction", "fallback_summary")
    assert not any(m.meta.get("_compressed_summary") for m in out.final_view)


@pytest.mark.parametrize("kind", ["auth", "connection"])
def test_access_and_network_failures_abort(kind: str) -> None:
    out = run(tool_trace(40, output="r" * 2000), 20_000, summarizer=FailingSummarizer(kind=kind))
    assert not layers(out, "compaction", "fallback_summary")


# -- guards -----------------------------------------------------------------------------------------------


def test_too_few_messages_is_an_ineffective_no_op() -> None:
    strategy = HermesStrategy(HermesConfig(release=LATER))
    ctx = context(strategy)
    msgs = tuple(conversation(1))
    assert strategy.compress(msgs, ctx) == (list(msgs), "compress_noop")
    assert strategy.ineffective_count == 1


def test_two_ineffective_compactions_block_automatic_triggering() -> None:
    # the system prompt alone sits over the threshold: each pass is a no-op (too few messages)
    trace = tool_trace(40, output="r" * 500, system="S" * 70_000)
    out = run(trace, 20_000)  # threshold 17,000; the system prompt alone is 17,510
    skipped = [e for e in out.events if e.type == "strategy.skipped"]
    assert skipped[0].call == 2 and skipped[0]["ineffective"] == 2
    assert len(skipped) > 10  # every later call over the threshold stays blocked


def test_a_provider_reading_over_the_threshold_after_a_compaction_is_a_strike() -> None:
    strategy = HermesStrategy(HermesConfig(release=LATER))
    ctx = context(strategy)
    threshold = strategy._limits(ctx).threshold_tokens
    for tokens, pending, expected in (
        (threshold, True, 1),
        (threshold + 5, False, 1),
        (threshold, True, 2),
        (threshold - 1, False, 0),
    ):
        strategy.verify_pending = pending
        call = ProviderCall(
            call=0,
            attempt=0,
            true_tokens=tokens,
            estimated_tokens=0,
            limit=10**6,
            accepted=True,
            error=None,
            cached_tokens=0,
            recorded_usage=None,
        )
        strategy.after_call(call, ctx)
        assert strategy.ineffective_count == expected and not strategy.verify_pending


def test_a_provider_reading_under_the_threshold_resets_the_ineffective_count() -> None:
    strategy = HermesStrategy(HermesConfig(release=LATER))
    strategy.ineffective_count = 1
    out = replay(
        tool_trace(5), strategy, SimulatedProvider(20_000), true_counter=HERMES, estimator=HERMES
    )
    assert out.result.calls == 6 and strategy.ineffective_count == 0


def test_two_fallback_compactions_in_a_row_block_automatic_triggering() -> None:
    out = run(tool_trace(120, output="r" * 2000), 20_000, summarizer=FailingSummarizer())
    skipped = [e for e in out.events if e.type == "strategy.skipped"]
    assert skipped and skipped[0]["fallback_streak"] >= 2
    first_skip = skipped[0].step
    assert len([e for e in layers(out, "fallback_summary") if e.step < first_skip]) >= 2


def test_proactive_prune_commits_only_when_it_reclaims_enough() -> None:
    trace = tool_trace(30, output="r" * 9000)
    pruned = run(trace, 1_000_000, proactive_prune_tokens=20_000, protect_last_n=4)
    assert layers(pruned, "proactive_prune")
    assert not layers(
        run(
            trace,
            1_000_000,
            proactive_prune_tokens=20_000,
            protect_last_n=4,
            proactive_prune_min_reclaim_tokens=10**9,
        ),
        "proactive_prune",
    )
    assert not layers(run(trace, 1_000_000), "proactive_prune")


# -- overflow -----------------------------------------------------------------------------------------------


def test_context_length_errors_are_recognised() -> None:
    assert is_context_error("This model's maximum context length is 8192 tokens")
    assert is_context_error("prompt is too long: 9000 tokens > 8192 maximum")
    assert is_context_error("Error code: 413 - request entity too large")
    assert not is_context_error("rate limit exceeded")


def test_an_overflow_compresses_and_retries_up_to_three_times_per_call() -> None:
    # the strategy believes the window is huge, so only the provider's rejections make it compress
    out = run(tool_trace(60, output="r" * 2000), 12_000, context_length=1_000_000)
    retries = [e for e in out.events if e.type == ev.PROVIDER_CALL and e["attempt"] > 0]
    assert retries and max(e["attempt"] for e in retries) <= 3
    assert out.result.overflow_errors > 0 and out.result.pairing_violations == 0


class Scripted(HermesStrategy):
    """Hermes whose compress() returns a scripted result (or drops the last message)."""

    def __init__(self, config: HermesConfig | None = None) -> None:
        super().__init__(config)
        self.result: list[Message] | None = None

    def compress(
        self, messages: Sequence[Message], ctx: ReplayContext
    ) -> tuple[list[Message], str]:
        return (list(messages)[:-1] if self.result is None else self.result), "compaction"


OVERFLOW = ProviderOverflowError("maximum context length exceeded", prompt_tokens=5000, limit=100)


def test_an_overflow_retry_needs_fewer_messages_or_a_5_percent_token_cut() -> None:
    strategy = Scripted()
    ctx = context(strategy)
    base = [Message("system", "s"), Message("user", "u" * 4000), Message("assistant", "a" * 4000)]

    def retried(messages: list[Message]) -> bool:
        ctx.view.replace(base)
        strategy.attempts = 0
        strategy.result = messages
        return strategy.on_overflow(OVERFLOW, 0, ctx)

    assert retried(base[:2]) is True  # one message fewer
    assert retried([base[0], base[1].with_text("u" * 3400), base[2]]) is True  # 7.5% fewer tokens
    assert retried([base[0], base[1].with_text("u" * 3800), base[2]]) is False  # only 2.5%
    assert retried(base) is False


def test_an_overflow_gives_up_after_max_compression_attempts() -> None:
    strategy = Scripted(HermesConfig(release=LATER, max_compression_attempts=2))
    ctx = context(strategy)
    for m in conversation(5):
        ctx.view.append(m)
    assert [strategy.on_overflow(OVERFLOW, i, ctx) for i in range(3)] == [True, True, False]


def test_summary_failures_are_reported_with_their_kind() -> None:
    with pytest.raises(SummarizerError):
        FailingSummarizer(kind="timeout").summarize(
            SummaryRequest("hermes", "compaction", "p", (), SUMMARY_SECTIONS), HERMES
        )


def test_summarize_tool_result_never_raises_on_odd_arguments() -> None:
    assert (
        summarize_tool_result(
            "web_extract", json.dumps({"urls": [{"href": "https://x"}, "y"]}), "c"
        )
        == "[web_extract] https://x (+1 more) (1 chars)"
    )
    assert (
        summarize_tool_result("terminal", json.dumps({"command": 5}), "")
        == "[terminal] ran `5` -> exit ?, 0 lines output"
    )


def test_runs_on_a_recorded_trace_without_breaking_tool_pairs(shared_traces: Any) -> None:
    from ctxbench.formats.importing import open_source

    source = open_source(shared_traces / "mini-swe-agent" / "astropy__astropy-12907.traj.json")
    trace = next(iter(source.traces()))
    out = run(trace, 32_000, reserved=2000)
    assert layers(out, "compaction")
    assert out.result.pairing_violations == 0 and out.result.system_kept


def test_a_rewrite_stands_for_what_the_driver_would_match_it_to() -> None:
    """``stand_ins``: a pruned result by its call id, an assistant turn by its tool-call ids,
    the tail message a summary was merged into by its old text; a summary is new."""
    from ctxbench.strategies.hermes.summary import (
        MERGED_PRIOR_CONTEXT_HEADER,
        MERGED_SUMMARY_DELIMITER,
        stand_ins,
    )

    call = Message("assistant", "let me look", tool_calls=(ToolCall("c1", "grep", "{}"),))
    result = Message("tool", "a long output", tool_call_id="c1")
    user = Message("user", "and now?")
    before = [Message("system", "sys"), call, result, user]
    merged = Message(
        "user",
        f"{MERGED_PRIOR_CONTEXT_HEADER}\nand now?\n\n{MERGED_SUMMARY_DELIMITER}\n\nsummary",
    )
    after = [
        before[0],
        Message("user", "a summary"),
        call.with_text(""),
        result.with_text("[pruned]"),
        merged,
    ]
    assert stand_ins(before, after) == [before[0], None, call, result, user]


def test_0_19_0_places_a_summary_before_an_empty_tail_as_if_a_user_turn_followed() -> None:
    """0.19.0 reads a missing tail as role "user" (context_compressor.py:3570): after a tool
    result the summary flips to "assistant"; after an assistant turn neither role fits, the
    summary is merged into a tail message that is not there, and is lost. The later commit
    places it as a user turn."""
    call = Message("assistant", "look", tool_calls=(ToolCall("c1", "grep", "{}"),))
    after_tool = [Message("user", "task"), call, Message("tool", "out", tool_call_id="c1")]
    after_reply = [Message("user", "task"), Message("assistant", "done")]
    released = HermesStrategy(HermesConfig(release="0.19.0"))
    placed = released._assemble(after_tool, [], "S", [], start=3)
    assert [m.role for m in placed] == ["user", "assistant", "tool", "assistant"]
    assert placed[-1].content.startswith("S")
    assert released._assemble(after_reply, [], "S", [], start=2) == after_reply
    later = HermesStrategy(HermesConfig(release=LATER))
    assert later._assemble(after_tool, [], "S", [], start=3)[-1].role == "user"
