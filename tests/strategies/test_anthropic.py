"""anthropic_clear_tool_uses: Anthropic's clear_tool_uses_20250919 context edit, one test per rule."""

from __future__ import annotations

import re

from ctxbench.counting import get_counter
from ctxbench.pairing import pairing_violations
from ctxbench.strategies.anthropic import ClearToolUsesConfig, clear_tool_uses, tool_uses
from ctxbench.trace import Message, ToolCall, Trace
from tests.factories import tool_trace
from tests.replaying import compactions, run

CHARS4 = get_counter("chars4")
BIG = "r" * 400


def named_trace(names: list[str]) -> Trace:
    msgs = [Message("system", "sys"), Message("user", "task")]
    for i, name in enumerate(names):
        msgs.append(Message("assistant", "", tool_calls=(ToolCall(f"c{i}", name, '{"q": 1}'),)))
        msgs.append(Message("tool", f"{name} output {i} " + BIG, tool_call_id=f"c{i}"))
    msgs.append(Message("assistant", "done"))
    return Trace("n", tuple(msgs))


def cleared(view: tuple[Message, ...]) -> list[str]:
    return [m.tool_call_id or "" for m in view if m.role == "tool" and m.content == "[cleared]"]


def test_defaults_are_the_documented_ones() -> None:
    cfg = ClearToolUsesConfig()
    assert (cfg.trigger, cfg.keep, cfg.clear_at_least) == (100_000, 3, None)
    assert (cfg.exclude_tools, cfg.clear_tool_inputs, cfg.placeholder) == ((), False, "[cleared]")


def test_nothing_is_cleared_at_or_below_the_trigger() -> None:
    out = run(tool_trace(10, output=BIG), "anthropic_clear_tool_uses", 1_000_000)
    assert compactions(out) == []


def test_oldest_results_are_cleared_except_the_last_keep_tool_uses() -> None:
    out = run(tool_trace(8, output=BIG), "anthropic_clear_tool_uses", 1_000_000, trigger=500)
    assert cleared(out.final_view) == [f"c{i}_0" for i in range(5)]


def test_parallel_calls_count_as_separate_tool_uses_and_stay_paired() -> None:
    out = run(tool_trace(4, output=BIG, calls=3), "anthropic_clear_tool_uses", 10**6, trigger=500)
    assert len(cleared(out.final_view)) == 12 - 3
    assert out.result.pairing_violations == 0
    assert pairing_violations(out.final_view) == 0


def test_excluded_tools_are_never_cleared() -> None:
    trace = named_trace(["bash", "memory", "bash", "memory", "bash", "bash", "bash", "bash"])
    out = run(trace, "anthropic_clear_tool_uses", 10**6, trigger=500, exclude_tools=["memory"])
    assert cleared(out.final_view) == ["c0", "c2", "c4"]


def test_clear_tool_inputs_also_clears_the_call_arguments() -> None:
    out = run(
        tool_trace(6, output=BIG),
        "anthropic_clear_tool_uses",
        10**6,
        trigger=500,
        clear_tool_inputs=True,
    )
    calls = [c for m in out.final_view for c in m.tool_calls]
    assert [c.arguments for c in calls[:3]] == ["{}"] * 3
    assert all(c.arguments != "{}" for c in calls[3:])


def test_clear_at_least_skips_an_edit_that_frees_too_little() -> None:
    out = run(
        tool_trace(5, output=BIG),
        "anthropic_clear_tool_uses",
        10**6,
        trigger=500,
        clear_at_least=10**5,
    )
    assert compactions(out) == []


def test_clear_at_least_in_stop_mode_stops_once_enough_is_freed() -> None:
    msgs = list(tool_trace(8, output=BIG).messages)
    cfg = ClearToolUsesConfig(trigger=0, clear_at_least=150, clear_at_least_mode="stop")
    out, n, freed = clear_tool_uses(msgs, cfg, CHARS4)
    assert n == 2 and freed >= 150
    one = CHARS4.count_message(msgs[3]) - CHARS4.count_message(out[3])
    assert one < 150


def test_the_note_reports_cleared_tool_uses_and_input_tokens() -> None:
    trace = tool_trace(8, output=BIG)
    out = run(trace, "anthropic_clear_tool_uses", 10**6, trigger=500)
    last = compactions(out)[-1]
    found = re.fullmatch(r"cleared_tool_uses=(\d+) cleared_input_tokens=(\d+)", last["note"])
    assert found and int(found.group(1)) == 5
    unedited = CHARS4.count_prompt(trace.messages[: trace.call_indices[last["call"]]])
    assert int(found.group(2)) == unedited - last["est_after"]


def test_the_edit_is_recomputed_from_the_full_history_every_request() -> None:
    out = run(tool_trace(10, output=BIG), "anthropic_clear_tool_uses", 10**6, trigger=800)
    edits = compactions(out)
    assert any(e["est_after"] <= 800 for e in edits)  # the edited prompt fell below the trigger,
    assert len(edits) >= 3  # but the full history stays above it: clearing continues


def test_tool_uses_name_text_react_actions() -> None:
    msgs = [
        Message("assistant", "Thought: t\nAction: sql_query\nAction Input: q"),
        Message("user", "Observation: rows"),
    ]
    assert [u.tool for u in tool_uses(msgs)] == ["sql_query"]
