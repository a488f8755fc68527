"""AgentScope v2 context compression: one test per rule of its reading and design document
(docs/sources.md)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from ctxbench import parity
from ctxbench.counting import get_counter
from ctxbench.counting.base import TokenCounter, tool_schemas
from ctxbench.engine import events as ev
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.errors import ConfigError, SummarizerError
from ctxbench.pairing import pairing_violations
from ctxbench.probes.model import Probe
from ctxbench.strategies import build_strategy
from ctxbench.strategies.agentscope import (
    COMPRESSION_PROMPT,
    SUMMARY_SECTIONS,
    SUMMARY_TEMPLATE,
    TRUNCATED_SUMMARY,
    AgentScopeConfig,
    AgentScopeStrategy,
    parse_summary_fields,
    split_context,
    split_tool_result,
)
from ctxbench.strategies.layers import results_after_calls
from ctxbench.summarizers.base import Summarizer, SummaryRequest
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.summarizers.failing import FailingSummarizer
from ctxbench.trace import Message, Part, ToolCall, Trace
from tests import replaying
from tests.factories import tool_round, tool_trace
from tests.replaying import Recording

AGENTSCOPE = get_counter("agentscope")
CHARS4 = get_counter("chars4")
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="


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
        "agentscope",
        window,
        reserved=reserved,
        summarizer=summarizer if summarizer is not None else ExtractiveSummarizer(),
        estimator=AGENTSCOPE,
        counter=AGENTSCOPE,
        **{"release": "design", **params},
    )


def layers(out: ReplayOutput, layer: str) -> list[ev.Event]:
    return [e for e in out.events if e.type == ev.COMPACTION and e["layer"] == layer]


def summary_message(view: tuple[Message, ...]) -> Message:
    found = [m for m in view if m.meta.get("agentscope") == "summary"]
    assert len(found) == 1
    return found[0]


def msg(role: str, n_tokens: int, char: str, **kw: Any) -> Message:
    """A message of exactly ``n_tokens`` AgentScope tokens (4 bytes each)."""
    return Message(role, char * (4 * n_tokens), **kw)


# -- defaults and validation ------------------------------------------------------------------------


def test_defaults_match_agentscope_context_config() -> None:
    cfg = AgentScopeStrategy(AgentScopeConfig(release="design")).cfg
    assert (cfg.trigger_ratio, cfg.reserve_ratio) == (0.8, 0.1)
    assert cfg.tool_result_limit == 50_000
    assert cfg.max_image_num == 5
    assert cfg.context_buffer_ratio == 0.2
    assert cfg.context_size is None  # the run window (AgentScope's model default is 32768)
    assert cfg.offloads and cfg.compression_fallback_to_truncation and cfg.inject_runtime_state
    assert cfg.prompt.startswith("<system-hint>You have been working on the task")
    assert "continuation summary" in cfg.prompt
    assert cfg.summary_template.startswith(
        "<system-info>Here is a summary of your previous work\n# Task Overview\n{task_overview}"
    )
    assert cfg.summary_template.endswith(
        "# Context to Preserve\n{context_to_preserve}</system-info>"
    )
    assert AgentScopeStrategy.default_estimator == "agentscope"


def test_reserve_ratio_must_be_smaller_than_trigger_ratio() -> None:
    with pytest.raises(ConfigError, match="reserve_ratio"):
        build_strategy("agentscope", {"trigger_ratio": 0.5, "reserve_ratio": 0.5})


@pytest.mark.parametrize("ratio", [0.0, 0.91, 1.0])
def test_trigger_ratio_must_be_positive_and_at_most_0_9(ratio: float) -> None:
    with pytest.raises(ConfigError, match="trigger_ratio"):
        build_strategy("agentscope", {"trigger_ratio": ratio})


def test_trigger_ratio_of_0_9_is_allowed_since_pr_2396() -> None:
    assert build_strategy("agentscope", {"trigger_ratio": 0.9}).config.trigger_ratio == 0.9


# -- trigger --------------------------------------------------------------------------------------


def test_compression_runs_before_the_first_call_at_trigger_ratio_of_context_size() -> None:
    trace = tool_trace(30, output="r" * 400)
    out = run(trace, 20_000, context_size=4000)
    first = layers(out, "compression")[0]
    status = [e for e in out.events if e.type == ev.CONTEXT_STATUS and e.call == first.call]
    assert status[0]["used"] >= 0.8 * 4000 > first["est_after"]
    earlier = [
        e
        for e in out.events
        if e.type == ev.CONTEXT_STATUS and e.call < first.call and e["compact_layer"] is None
    ]
    assert all(e["used"] < 0.8 * 4000 for e in earlier)


def test_budget_is_context_size() -> None:
    out = run(tool_trace(3), 10_000, context_size=3000)
    assert {e["budget"] for e in out.events if e.type == ev.CONTEXT_STATUS} == {3000}


def test_over_threshold_with_only_the_system_prompt_records_an_error_and_leaves_the_prompt() -> (
    None
):
    trace = Trace("t", (Message("system", "s" * 4000), Message("assistant", "hi")))
    out = run(trace, 10_000, context_size=1000)
    errors = [e for e in out.events if e.type == "strategy.error"]
    assert errors and "cannot be compressed" in errors[0]["error"]
    assert not layers(out, "compression")


# -- the split -------------------------------------------------------------------------------------


SYSTEM_60 = [msg("system", 60, "0")]


def test_split_keeps_the_smallest_suffix_worth_reserve_tokens() -> None:
    # AgentScope tests/compress_context_test.py::test_split_function, case 1
    context = [msg("user", 30, "1"), msg("assistant", 10, "2"), msg("user", 10, "3")]
    compress, keep, _ = split_context(SYSTEM_60, context, 80, AGENTSCOPE)
    assert (compress, keep) == (context[:1], context[1:])


def test_split_compresses_a_boundary_message_that_would_overshoot() -> None:
    context = [msg("user", 30, "2"), msg("assistant", 15, "3"), msg("user", 10, "3")]
    compress, keep, _ = split_context(SYSTEM_60, context, 80, AGENTSCOPE)
    assert (compress, keep) == (context[:2], context[2:])


def test_split_compresses_everything_when_the_last_message_overshoots() -> None:
    context = [msg("user", 30, "2"), msg("assistant", 15, "3"), msg("user", 30, "3")]
    compress, keep, _ = split_context(SYSTEM_60, context, 80, AGENTSCOPE)
    assert (compress, keep) == (context, [])


def test_split_divides_a_multi_block_boundary_message() -> None:
    boundary = Message.from_parts("assistant", [Part("text", "b" * 40), Part("text", "c" * 40)])
    context = [msg("user", 30, "a"), boundary, msg("user", 10, "d")]
    compress, keep, _ = split_context(SYSTEM_60, context, 80, AGENTSCOPE)
    assert [m.content for m in compress] == ["a" * 120, "b" * 40]
    assert [m.content for m in keep] == ["c" * 40, "d" * 40]


def test_split_keeps_a_turns_calls_without_its_reasoning() -> None:
    """2.0.11 stores a turn as ThinkingBlock, TextBlock, ToolCallBlocks: the kept part of a
    boundary turn may drop its reasoning and keep its (empty-text) call and the result."""
    call = ToolCall("a", "bash", "{}")
    turn = Message("assistant", "", tool_calls=(call,), replay={"reasoning_content": "r" * 400})
    context = [msg("user", 10, "u"), turn, msg("tool", 30, "x", tool_call_id="a")]
    compress, keep, sources = split_context([], context, 35, AGENTSCOPE)
    assert keep == [dataclasses.replace(turn, replay={}), context[2]]
    assert compress == [context[0], Message("assistant", "", replay=turn.replay)]
    assert sources == [turn, context[2]]  # the kept call stands for the recorded turn


def test_split_cuts_a_reasoning_turn_between_its_reasoning_and_its_text() -> None:
    call = ToolCall("a", "bash", "{}")
    turn = Message("assistant", "t" * 40, tool_calls=(call,), replay={"reasoning": "r" * 400})
    context = [turn, msg("tool", 20, "x", tool_call_id="a")]
    compress, keep, _ = split_context([], context, 31, AGENTSCOPE)
    assert keep[0] == dataclasses.replace(turn, replay={})  # text and call, no reasoning
    assert compress == [Message("assistant", "", replay=turn.replay)]


def test_split_moves_tool_results_to_the_side_of_their_call() -> None:
    calls = (ToolCall("a", "bash", "{}"), ToolCall("b", "bash", "{}"))
    context = [
        msg("user", 10, "u"),
        Message("assistant", "", tool_calls=calls),
        msg("tool", 30, "x", tool_call_id="a"),
        msg("tool", 30, "y", tool_call_id="b"),
        msg("user", 5, "z"),
    ]
    compress, keep, _ = split_context([], context, 40, AGENTSCOPE)
    assert keep == [context[-1]]
    assert compress == context[:-1]
    assert pairing_violations(keep) == 0


def test_split_pairing_fix_iterates_to_a_fixed_point() -> None:
    def group(i: int) -> list[Message]:
        return [
            Message("assistant", "", tool_calls=(ToolCall(f"c{i}", "bash", "{}"),)),
            msg("tool", 20, "r", tool_call_id=f"c{i}"),
        ]

    context = [msg("user", 5, "u"), *group(1), *group(2), msg("user", 1, "q")]
    # the reserve boundary lands on the first result: moving it exposes no new orphans
    compress, keep, _ = split_context([], context, 45, AGENTSCOPE)
    assert pairing_violations(compress) == 0 and pairing_violations(keep) == 0
    assert compress + keep == context


def test_results_after_calls_moves_a_cut_past_every_result_of_an_earlier_call() -> None:
    msgs = [
        Message("user", "u"),
        Message("assistant", "", tool_calls=(ToolCall("a", "t", "{}"), ToolCall("b", "t", "{}"))),
        Message("tool", "ra", tool_call_id="a"),
        Message("tool", "rb", tool_call_id="b"),
        Message("assistant", "", tool_calls=(ToolCall("c", "t", "{}"),)),
        Message("tool", "rc", tool_call_id="c"),
    ]
    assert [results_after_calls(msgs, cut) for cut in range(7)] == [0, 1, 4, 4, 4, 6, 6]


def test_split_finds_nothing_to_compress_when_everything_fits_the_reserve() -> None:
    context = [msg("user", 10, "a"), msg("assistant", 10, "b")]
    assert split_context(SYSTEM_60, context, 1000, AGENTSCOPE) == ([], context, context)
    assert split_context(SYSTEM_60, context, 0, AGENTSCOPE)[:2] == (context, [])


def test_nothing_to_compress_retries_the_split_with_reserve_zero() -> None:
    # AgentScope test_context_compression_without_reserved_context: a one-off config whose
    # reserve exceeds the whole context
    strategy = AgentScopeStrategy(
        dataclasses.replace(AgentScopeStrategy.Config(), trigger_ratio=0.7, release="design")
    )
    object.__setattr__(strategy.cfg, "reserve_ratio", 0.89)
    trace = Trace("t", (msg("system", 20, "0"), msg("user", 55, "1"), Message("assistant", "ok")))
    out = replay(
        trace,
        strategy,
        SimulatedProvider(100),
        true_counter=AGENTSCOPE,
        estimator=AGENTSCOPE,
        summarizer=ExtractiveSummarizer(),
    )
    compression = [e for e in out.events if e.type == ev.COMPACTION and e["layer"] == "compression"]
    assert compression and compression[0]["messages_after"] == 2  # system + summary only


# -- the summary -----------------------------------------------------------------------------------


def test_summary_is_rendered_with_the_five_fields_of_the_template() -> None:
    out = run(tool_trace(30, output="r" * 400), 20_000, context_size=4000, offload=False)
    text = summary_message(out.final_view).content
    assert text.startswith(
        "<system-info>Here is a summary of your previous work\n# Task Overview\n"
    )
    headings = [line for line in text.splitlines() if line.startswith("# ")]
    assert headings == [f"# {title}" for title in SUMMARY_SECTIONS]
    assert text.endswith("</system-info>")


def test_summary_request_carries_the_compression_prompt_the_schema_and_the_previous_summary() -> (
    None
):
    recording = Recording()
    run(tool_trace(80, output="r" * 400), 20_000, context_size=4000, summarizer=recording)
    assert len(recording.requests) >= 2
    first, second = recording.requests[:2]
    assert first.sections == SUMMARY_SECTIONS
    assert COMPRESSION_PROMPT in first.prompt and "generate_structured_output" in first.prompt
    assert first.previous_summary is None
    assert second.previous_summary is not None
    assert second.previous_summary.startswith("<system-info>Here is a summary")
    assert first.max_tokens == 800  # the band above trigger_ratio


def test_summary_is_a_user_message_right_after_the_system_prompt() -> None:
    out = run(tool_trace(30, output="r" * 400), 20_000, context_size=4000)
    view = out.final_view
    assert view[0].role == "system"
    assert view[1].meta.get("agentscope") == "summary" and view[1].role == "user"
    assert pairing_violations(view) == 0


def test_compressed_messages_are_offloaded_and_the_summary_points_to_the_file() -> None:
    trace = tool_trace(
        30,
        output="r" * 400,
        probes=(Probe("p", "artifact", "which step?", ("step 0.0",), evidence=(2,)),),
    )
    out = run(trace, 20_000, context_size=4000, summarizer=FailingSummarizer())
    path = "offload/t/context.jsonl"
    assert path in out.files
    offloaded = [json.loads(line) for line in out.files[path].decode().splitlines()]
    assert any(
        c["arguments"] == '{"cmd": "step 0.0"}' for m in offloaded for c in m.get("tool_calls", [])
    )
    reminder = (
        f"<system-reminder>The compressed context is offloaded to '{path}', "
        "you can refer to it when needed.</system-reminder>"
    )
    assert summary_message(out.final_view).content.endswith(reminder)
    assert out.result.via_reference == 1  # only the offloaded file still holds the fact


def test_summary_failure_falls_back_to_the_truncation_marker_and_still_drops() -> None:
    out = run(
        tool_trace(30, output="r" * 400),
        20_000,
        context_size=4000,
        summarizer=FailingSummarizer(),
        offload=False,
    )
    assert summary_message(out.final_view).content == TRUNCATED_SUMMARY
    assert (
        layers(out, "compression")[0]["messages_after"]
        < layers(out, "compression")[0]["messages_before"]
    )


def test_summary_failure_keeps_the_previous_summary() -> None:
    class FailsAfterFirst(ExtractiveSummarizer):
        def __init__(self) -> None:
            self.calls = 0

        def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
            self.calls += 1
            if self.calls > 1:
                raise SummarizerError("down", kind="http")
            return super().summarize(request, counter)

    out = run(
        tool_trace(80, output="r" * 400),
        20_000,
        context_size=4000,
        summarizer=FailsAfterFirst(),
        offload=False,
    )
    compressions = layers(out, "compression")
    assert len(compressions) >= 2
    assert summary_message(out.final_view).content.startswith("<system-info>Here is a summary")


def test_summary_failure_without_the_fallback_leaves_the_context_and_records_an_error() -> None:
    out = run(
        tool_trace(30, output="r" * 400),
        20_000,
        context_size=4000,
        summarizer=FailingSummarizer(),
        compression_fallback_to_truncation=False,
    )
    assert not layers(out, "compression")
    assert any(e.type == "strategy.error" and "http" in e["error"] for e in out.events)


def test_an_overflowing_compression_request_drops_the_oldest_messages_and_retries_once() -> None:
    class FailsOnce(Recording):
        def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
            self.requests.append(request)
            if len(self.requests) == 1:
                raise SummarizerError("context length exceeded", kind="http")
            return ExtractiveSummarizer.summarize(self, request, counter)

    recording = FailsOnce()
    msgs = [Message("system", "sys"), Message("user", "task")]
    for i in range(6):
        msgs += [
            Message("assistant", "", tool_calls=(ToolCall(f"c{i}", "bash", "{}"),)),
            Message("tool", f"out{i} " + "z" * 1200, tool_call_id=f"c{i}"),
        ]
    msgs.append(Message("assistant", "done"))
    out = run(
        Trace("t", tuple(msgs)), 10_000, context_size=1500, summarizer=recording, offload=False
    )
    assert [r.layer for r in recording.requests[:2]] == ["compression", "compression_retry"]
    first, retry = recording.requests[:2]
    assert len(retry.messages) < len(first.messages)
    assert retry.messages == first.messages[len(first.messages) - len(retry.messages) :]
    assert summary_message(out.final_view).content.startswith("<system-info>Here is a summary")


def test_parse_summary_fields_reads_json_or_the_template_headings() -> None:
    fields = {
        "task_overview": "t",
        "current_state": "c",
        "important_discoveries": "d",
        "next_steps": "n",
        "context_to_preserve": "p",
    }
    assert parse_summary_fields(json.dumps(fields)) == fields
    rendered = "## Task Overview\n- t\n\n## Next Steps\n- n"
    parsed = parse_summary_fields(rendered)
    assert (parsed["task_overview"], parsed["next_steps"], parsed["current_state"]) == (
        "- t",
        "- n",
        "",
    )
    assert parse_summary_fields("free text")["task_overview"] == "free text"
    assert SUMMARY_TEMPLATE.format(**fields).count("# ") == 5


# -- tool results ------------------------------------------------------------------------------------


def test_tool_result_over_the_limit_keeps_the_leading_part_and_offloads_the_rest() -> None:
    result = Message("tool", "".join(chr(97 + i % 26) for i in range(1000)), tool_call_id="c1")
    kept, offloaded = split_tool_result(result, 100, AGENTSCOPE)
    # 250 tokens for 1000 chars: the text is cut in proportion, 100/250 of it
    assert kept.content == result.content[:400]
    assert "".join(p.text for p in offloaded) == result.content[400:]


def test_truncated_result_carries_the_marker_and_the_file_reference() -> None:
    trace = tool_trace(2, output="x" * 1000)
    out = run(trace, 50_000, tool_result_limit=100)
    results = [m for m in out.final_view if m.role == "tool"]
    path = "offload/t/tool_result-c0_0.txt"
    assert results[0].content.endswith(
        "\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for limited "
        f"context. You can refer to the file in '{path}' for the truncated content if needed."
        "</system-reminder>"
    )
    assert out.files[path].decode() == ("x" * 1000 + " 0.0")[400:]
    assert layers(out, "tool_result_limit")


def test_truncation_without_an_offloader_has_no_file_reference() -> None:
    out = run(tool_trace(1, output="x" * 1000), 50_000, tool_result_limit=100, offload=False)
    result = next(m for m in out.final_view if m.role == "tool")
    assert result.content.endswith(
        "\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for "
        "limited context.</system-reminder>"
    )
    assert not out.files


def test_tool_result_within_the_limit_is_unchanged() -> None:
    result = Message("tool", "x" * 400, tool_call_id="c1")
    assert split_tool_result(result, 100, AGENTSCOPE) == (result, [])


def test_a_non_text_boundary_block_is_dropped_whole() -> None:
    image = Part("image_url", data={"image_url": {"url": "https://example.com/a.png"}})
    result = Message.from_parts(
        "tool", [Part("text", "a" * 200), image, Part("text", "b" * 40)], tool_call_id="c"
    )
    kept, offloaded = split_tool_result(result, 100, AGENTSCOPE)
    assert kept.parts == (Part("text", "a" * 200),)
    assert [p.type for p in offloaded] == ["image_url", "text"]


# -- images and the pre-warning ------------------------------------------------------------------------


def _image_trace(urls: list[str]) -> Trace:
    msgs = [Message("system", "sys")]
    for i, url in enumerate(urls):
        part = Part("image_url", data={"image_url": {"url": url}, "name": f"img{i}"})
        msgs.append(Message.from_parts("user", [Part("text", f"look {i}"), part]))
        msgs.append(Message("assistant", f"seen {i}"))
    return Trace("img", tuple(msgs))


def test_images_beyond_max_image_num_are_replaced_oldest_first() -> None:
    urls = [
        "https://example.com/0.png",
        f"data:image/png;base64,{PNG}",
        "https://example.com/2.png",
    ]
    out = run(_image_trace(urls), 100_000, max_image_num=1)
    users = [m for m in out.final_view if m.role == "user"]
    assert users[0].content.endswith(
        "<system-reminder>The image named 'img0' is offloaded into https://example.com/0.png, "
        "you can refer to it when needed.</system-reminder>"
    )
    offloaded = [p for p in out.files if p.startswith("offload/img/image-")]
    assert len(offloaded) == 1 and f"offloaded into {offloaded[0]}" in users[1].content
    assert [p.type for p in users[2].parts or ()] == ["text", "image_url"]


def test_images_are_removed_without_an_offloader() -> None:
    out = run(
        _image_trace([f"data:image/png;base64,{PNG}", "https://e.com/1.png"]),
        100_000,
        max_image_num=1,
        offload=False,
    )
    first = next(m for m in out.final_view if m.role == "user")
    assert first.content.endswith(
        "<system-reminder>The image named 'img0' is removed to free up context space.</system-reminder>"
    )


def test_pre_warning_is_injected_at_the_first_call_of_a_reply_above_the_buffer_band() -> None:
    trace = Trace(
        "t",
        (
            Message("system", "sys"),
            msg("user", 700, "u"),
            Message("assistant", "ok"),
            msg("user", 5, "v"),
            Message("assistant", "ok"),
        ),
    )
    out = run(trace, 10_000, context_size=1000)  # 701+ tokens > (0.8 - 0.2) * 1000
    hints = [m for m in out.final_view if m.meta.get("agentscope") == "runtime_state"]
    assert len(hints) == 2
    assert hints[0].content.startswith(
        "<system-reminder><context-length>Your current context contains "
    )
    assert hints[0].content.endswith(
        " tokens. When reaching 800 tokens, your context will be compressed.</context-length></system-reminder>"
    )


def test_pre_warning_is_not_injected_mid_reply_or_below_the_band() -> None:
    assert not layers(
        run(tool_trace(3, output="r" * 3000), 100_000, context_size=3000), "runtime_state"
    )
    assert not layers(run(tool_trace(3), 100_000), "runtime_state")


# -- overflow and a real trace ----------------------------------------------------------------------------


def test_agentscope_does_not_compact_on_a_provider_overflow() -> None:
    out = run(tool_trace(20, output="r" * 400), 3000, reserved=1000, context_size=10_000)
    assert out.result.failed_calls > 0 and out.result.reactive_retries == 0


def test_runs_on_a_recorded_trace_without_breaking_tool_pairs(shared_traces: Any) -> None:
    from ctxbench.formats.importing import open_source

    source = open_source(shared_traces / "mini-swe-agent" / "astropy__astropy-12907.traj.json")
    trace = next(iter(source.traces()))
    out = replay(
        trace,
        build_strategy("agentscope", {"context_size": 16_000}),
        SimulatedProvider(16_000, 1000),
        true_counter=AGENTSCOPE,
        estimator=AGENTSCOPE,
        summarizer=ExtractiveSummarizer(),
    )
    assert layers(out, "compression")
    assert out.result.pairing_violations == 0 and out.result.system_kept


# -- agentscope==2.0.11 (docs/sources.md) --------------------------------------------------------------


def run_2_0_11(trace: Trace, window: int, **params: Any) -> ReplayOutput:
    return replaying.run(
        trace,
        "agentscope",
        window,
        summarizer=ExtractiveSummarizer(),
        estimator=AGENTSCOPE,
        counter=AGENTSCOPE,
        **params,
    )


def test_2_0_11_counts_the_whole_prompt_once() -> None:
    """Ten messages of 6 bytes: 2.0.11 gives int(60 / 4 + 0.5) = 15; rounding each (int(1.5 +
    0.5) = 2) gives 20, so the per-message count triggers earlier."""
    from ctxbench.strategies.agentscope import PerMessage, WholePrompt

    messages = [Message("user", "abcdef") for _ in range(10)]
    assert WholePrompt(()).tokens(messages) == 15
    assert PerMessage(AGENTSCOPE).tokens(messages) == 20


def test_2_0_11_dumps_tools_without_ascii_escapes() -> None:
    from ctxbench.strategies.agentscope import WholePrompt
    from ctxbench.trace import ToolSpec

    tool = ToolSpec("lookup", "查询数据库", {"type": "object", "properties": {}})
    assert WholePrompt((tool,)).tools_bytes < len(
        json.dumps(tool_schemas((tool,))).encode("utf-8")
    ), "ensure_ascii=False: 3 bytes per CJK character, not a 6-byte \\uXXXX escape"


def test_2_0_11_defaults() -> None:
    cfg = AgentScopeConfig()
    assert cfg.release == "2.0.11" and not cfg.offloads
    assert "The current time is 1970-01-01T00:00:00 (UTC)." in cfg.prompt
    assert cfg.state_template.startswith("<system-reminder>Treat the following as the ground truth")


def test_2_0_11_rejects_a_buffer_at_or_over_the_trigger_while_injecting() -> None:
    with pytest.raises(ConfigError, match="context_buffer_ratio"):
        build_strategy("agentscope", {"context_buffer_ratio": 0.8})
    build_strategy("agentscope", {"context_buffer_ratio": 0.8, "inject_runtime_state": False})
    build_strategy("agentscope", {"context_buffer_ratio": 0.8, "release": "design"})


def test_2_0_11_reinjects_the_time_after_every_compression() -> None:
    turns = [msg("system", 10, "s"), msg("user", 10, "u")]
    for i in range(12):
        turns += [msg("assistant", 10, chr(97 + i)), msg("user", 10, chr(65 + i))]
    turns.append(Message("assistant", "done"))
    out = run_2_0_11(Trace("t", tuple(turns)), 400)
    compressions = [e.call for e in layers(out, "compression")]
    timed = [e.call for e in layers(out, "runtime_state") if "current-time" in e["note"]]
    assert compressions and timed[0] == 0
    assert all(any(t >= c for t in timed) for c in compressions), "a time after each compression"
    hints = [m.content for m in out.final_view if m.meta.get("agentscope") == "runtime_state"]
    assert any(
        "<current-time>1970-01-01T00:00:00</current-time>\n<timezone>UTC</timezone>" in h
        for h in hints
    )
    assert not [f for f in out.files if "offload" in f], "no offloader by default"


def test_2_0_11_an_empty_context_over_the_threshold_ends_the_reply() -> None:
    """The system prompt alone is over the threshold: RuntimeError ends the reply, so its
    later calls fail too; the next user message starts a reply that runs again."""
    call = ToolCall("c1", "bash", "{}")
    trace = Trace(
        "t",
        (
            msg("system", 90, "s"),
            Message("assistant", "", tool_calls=(call,)),
            Message("tool", "ok", tool_call_id="c1"),
            Message("assistant", "b"),
            msg("user", 5, "v"),
            Message("assistant", "c"),
        ),
    )
    out = replay(
        trace,
        build_strategy("agentscope", {"context_size": 100}),
        SimulatedProvider(10_000),
        true_counter=AGENTSCOPE,
        estimator=AGENTSCOPE,
        summarizer=ExtractiveSummarizer(),
    )
    failed = [(e.call, e["kind"]) for e in out.events if e.type == ev.CALL_FAILED]
    assert failed == [(0, "aborted"), (1, "aborted")]
    first = next(e for e in out.events if e.type == ev.CALL_FAILED)
    assert first["error"].startswith("RuntimeError: The system prompt exceed(s) the compression")
    assert [e.call for e in out.events if e.type == ev.PROVIDER_CALL] == [2]


# -- 2.0.11's reply loop (the driver of the released Agent.reply() agrees: tests/parity) ---------


def test_a_boundary_tool_call_turn_is_cut_after_its_text_as_agentscope_blocks_are() -> None:
    call = ToolCall("c1", "bash", '{"cmd": "ls"}')
    turn = Message("assistant", "x" * 400, tool_calls=(call,))
    result = Message("tool", "y" * 40, tool_call_id="c1")
    compress, keep, _ = split_context([], [Message("user", "task"), turn, result], 20, AGENTSCOPE)
    assert [m.content for m in keep] == ["", "y" * 40]  # the call stays, its text goes
    assert keep[0].tool_calls == (call,) and compress[-1].tool_calls == ()
    assert compress[-1].content == "x" * 400


def test_a_turn_the_compression_cuts_keeps_its_trace_index_in_its_kept_calls() -> None:
    # the released driver's kept ToolCallBlock stays in the turn's Msg, so the shipped side
    # names the turn; the reproduction's calls-only part must name it too (astropy-12907, 16k)
    msgs = [Message("system", "You are a careful agent."), Message("user", "Fix the bug")]
    for i in range(12):
        msgs += tool_round(i, thought=f"thinking {i} " + "x" * 600, output="ok " * 20)
    trace = Trace("t", (*msgs, Message("assistant", "All done.")))
    observed = parity.Observed(build_strategy("agentscope", {"release": "2.0.11"}))
    out = replay(trace, observed, SimulatedProvider(1500, 0), true_counter=AGENTSCOPE,
                 estimator=AGENTSCOPE, summarizer=ExtractiveSummarizer())  # fmt: skip
    (compression,) = layers(out, "compression")
    cut = next(m for m in out.final_view if m.role == "assistant" and not m.content)
    turn = next(i for i, m in enumerate(trace.messages) if m.tool_calls == cut.tool_calls)
    assert observed.kept[compression.call][:3] == (0, turn, turn + 1)
    assert all(turn in kept for call, kept in observed.kept.items() if call >= compression.call)


def test_an_overflow_ends_the_reply_and_its_turns_never_reach_the_agent() -> None:
    trace = tool_trace(6, output="z" * 400)
    trace = dataclasses.replace(
        trace, messages=(*trace.messages, Message("user", "next"), Message("assistant", "ok"))
    )
    # a model whose context_size is far above the provider's window: no compression, an overflow
    out = run(trace, 400, release="2.0.11", context_size=100_000, inject_runtime_state=False)
    kinds = {e.call: e.data.get("kind") for e in out.events if e.type == ev.CALL_FAILED}
    first = min(kinds)
    assert 0 < first < 5 and kinds[first] == ev.OVERFLOW
    # the rest of that reply is not made; the new input is a new reply on the same context
    assert [kinds[c] for c in range(first + 1, 7)] == [ev.ABORTED] * (6 - first)
    assert kinds[7] == ev.OVERFLOW
    sent = {e.call: e["true_tokens"] for e in out.events if e.type == ev.PROVIDER_CALL}
    assert sent[7] < sent[first] + 20  # the ended reply's turns never reached the agent
    assert f"{'z' * 400} 5.0" not in [m.content for m in out.final_view]


def test_the_51st_call_of_a_reply_gets_the_max_iters_hint_and_ends_it() -> None:
    trace = tool_trace(5)
    out = run(trace, 100_000, release="2.0.11", max_iters=3)
    hints = [m for m in out.final_view if m.meta.get("agentscope") == "max_iters"]
    assert [h.content for h in hints] == [
        "<system-reminder>You have reached the maximum of 3 reasoning-acting iterations. "
        "Summarize the work and findings so far and return the final answer as text. Do not "
        "call any tools.</system-reminder>"
    ]


def test_user_input_after_tool_results_arrives_after_the_acting_replys_last_step() -> None:
    """2.0.11: the reply is still acting when recorded user input follows tool results, so
    one more reasoning step (compression included) runs on the context without that input;
    the input starts the next reply and is kept whole (without that step, the large first
    input message would be the split's boundary and be compressed)."""
    msgs = [Message("system", "You are careful."), Message("user", "Fix the bug")]
    for i in range(4):
        msgs += tool_round(i, output="o" * 1600)
    first = Message("user", "Also look at the docs " + "a" * 1000, meta={"source": "chat"})
    second = Message("user", "<reminder>2 steps left</reminder>")
    trace = Trace("t", (*msgs, first, second, Message("assistant", "done")))
    out = replaying.run(trace, "agentscope", 2000, estimator=AGENTSCOPE,
                        summarizer=ExtractiveSummarizer())  # fmt: skip
    (compression,) = replaying.compactions(out, "compression")
    assert compression["call"] == 4 and compression["note"].endswith("0 kept")
    assert out.final_view[-3:-1] == (first, second)  # then the runtime-state hint
    design = replaying.run(trace, "agentscope", 2000, estimator=AGENTSCOPE,
                           summarizer=ExtractiveSummarizer(), release="design")  # fmt: skip
    assert first not in design.final_view  # no reply loop: one step, the input in its split
