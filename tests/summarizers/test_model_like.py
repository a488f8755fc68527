"""``model_like``: a summary written like the recorded ones: their length (a cap is not a
target), the kinds of things they keep, no nested carried bullets; measured against the
recorded Claude Code summaries with leave-one-out."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxbench.counting import get_counter
from ctxbench.errors import ConfigError
from ctxbench.formats.importing import import_file
from ctxbench.summarizers import build_summarizer
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.summarizers.comparison import Compared, compare
from ctxbench.summarizers.model_like import (
    CLAUDE_CODE_LENGTH,
    LengthModel,
    ModelLikeSummarizer,
    fit_length,
    relative,
    repo_root,
)
from ctxbench.trace import Message, ToolCall, Trace

TRANSCRIPTS = "marot+spotter/test/fixtures/transcripts"
COUNTER = "tiktoken:o200k_base"
SECTIONS = ("1. Primary Request and Intent", "3. Files and Code Sections", "6. All user messages")


def edit(path: str, n: int) -> Message:
    args = f'{{"file_path":"{path}","old_string":"a","new_string":"def f_{n}():\\n    pass"}}'
    return Message("assistant", "", tool_calls=(ToolCall(f"c{n}", "Edit", args),))


def request(messages: tuple[Message, ...], max_tokens: int | None = 20_000) -> SummaryRequest:
    return SummaryRequest("claude_code", "autocompact", "x " * 2000, messages, SECTIONS, max_tokens)


def history() -> tuple[Message, ...]:
    root = "/home/u/proj"
    return (
        Message("user", "Fix the parser in spotter-a0y.1. Never touch the lexer."),
        Message("tool", f"{root}/mix.exs\n{root}/lib/parser.ex", tool_call_id="g"),
        edit(f"{root}/lib/parser.ex", 1),
        Message("tool", "ok", tool_call_id="c1"),
        edit(f"{root}/test/parser_test.exs", 2),
        Message("tool", "ok", tool_call_id="c2"),
        Message("assistant", "The parser now handles empty input. Next I will run the tests."),
        Message("user", "also update the changelog"),
    )


def test_it_keeps_user_messages_task_ids_and_edited_files_as_the_agent_refers_to_them() -> None:
    summarizer = ModelLikeSummarizer(max_share=1.0)
    text = summarizer.summarize(request(history()), get_counter(COUNTER))
    assert '"Fix the parser in spotter-a0y.1. Never touch the lexer."' in text
    assert '"also update the changelog"' in text
    assert "spotter-a0y.1" in text
    assert "`lib/parser.ex`: edited once" in text and "/home/u/proj" not in text
    assert "Constraint from the user: Never touch the lexer." in text


def test_the_budget_is_a_cap_not_a_target() -> None:
    counter = get_counter(COUNTER)
    summarizer = ModelLikeSummarizer(length_tokens=120, max_share=1.0)
    roomy = summarizer.summarize(request(history(), max_tokens=20_000), counter)
    tight = summarizer.summarize(request(history(), max_tokens=60), counter)
    assert counter.count(roomy) <= 120  # the length model, far under the 20,000 cap
    assert counter.count(tight) <= 60 < counter.count(roomy)


def test_a_summary_is_at_most_a_quarter_of_a_small_history() -> None:
    model = LengthModel(4_000, "t")
    assert model.target(200_000) == 4_000 and model.target(8_000) == 2_000


def test_the_length_fit_is_the_median_summary() -> None:
    assert fit_length([(5, 30), (9, 10), (7, 20)], "t") == LengthModel(20, "t")
    assert fit_length([(5, 10), (9, 20)], "t").tokens == 15


def test_a_previous_summary_is_carried_once_without_nested_bullets() -> None:
    previous = "1. Primary Request and Intent:\n- - - - fix the parser\n   - - keep tests green"
    messages = (Message("user", "This session is being continued ...\n" + previous),)
    text = ModelLikeSummarizer(max_share=1.0).summarize(request(messages), get_counter(COUNTER))
    assert "\n- fix the parser" in text and "- - " not in text


def test_line_number_gutters_are_not_sentences() -> None:
    read = "\n".join(f"   {n}→x = {n}" for n in range(100, 130))
    messages = (Message("user", "read it"), Message("assistant", read))
    text = ModelLikeSummarizer(max_share=1.0).summarize(request(messages), get_counter(COUNTER))
    assert "100" not in text


def test_repo_root_prefers_the_folder_of_a_project_marker() -> None:
    paths = ["/h/p/lib/a.ex", "/h/p/lib/b/c.ex"]
    assert repo_root(paths, ["ls /h/p/mix.exs"]) == "/h/p"
    assert repo_root(paths, []) == "/h/p/lib"  # the common folder, without a marker
    assert relative("/h/p/lib/a.ex", "/h/p") == "lib/a.ex"
    assert relative("/elsewhere/a.ex", "/h/p") == "/elsewhere/a.ex"


def test_bad_parameters_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="length_scale"):
        ModelLikeSummarizer(length_scale=0)
    with pytest.raises(ConfigError, match="length_tokens"):
        ModelLikeSummarizer(length_tokens=-1)


def shared_sessions(root: Path) -> list[Trace]:
    return [import_file(p)[0][0] for p in sorted((root / TRANSCRIPTS).glob("*.jsonl"))]


def test_the_length_model_is_the_fit_of_the_recorded_summaries(shared_traces: Path) -> None:
    counter = get_counter(COUNTER)
    rows = compare(shared_sessions(shared_traces), build_summarizer("extractive"), counter)
    samples = [(r.history_tokens, r.recorded.tokens) for r in rows]
    fitted = fit_length(samples, CLAUDE_CODE_LENGTH.source)
    assert fitted == CLAUDE_CODE_LENGTH


def leave_one_out(traces: list[Trace]) -> list[Compared]:
    """Each recorded compaction summarised with the length model fitted on the others."""
    counter = get_counter(COUNTER)
    probe = compare(traces, build_summarizer("extractive"), counter)
    out = []
    for held in probe:
        others = [(r.history_tokens, r.recorded.tokens) for r in probe if r is not held]
        model = fit_length(others, "fold")
        summarizer = ModelLikeSummarizer(length_tokens=model.tokens)
        trace = next(t for t in traces if t.id == held.trace_id)
        (row,) = compare([trace], summarizer, counter)
        out.append(row)
    return out


def test_leave_one_out_it_writes_and_keeps_like_the_recorded_summaries(
    shared_traces: Path,
) -> None:
    """On compactions the fit never saw: length within 1.5x of the recorded summary's, and
    the facts the agent used after the compaction kept within 15 points."""
    rows = leave_one_out(shared_sessions(shared_traces))
    assert len(rows) == 3
    for row in rows:
        assert 1 / 1.5 <= row.ours.tokens / row.recorded.tokens <= 1.5, row.trace_id
    kept = sum(r.ours.used_after[0] for r in rows), sum(r.recorded.used_after[0] for r in rows)
    facts = sum(r.recorded.used_after[1] for r in rows)
    assert facts > 30
    assert abs(kept[0] - kept[1]) / facts <= 0.15
    # and of the mined probes (the files the agent needed) it keeps about what the real
    # summaries kept (92% and 94% when measured)
    mined = sum(r.ours.probes_kept[0] for r in rows), sum(r.recorded.probes_kept[0] for r in rows)
    asked = sum(r.recorded.probes_kept[1] for r in rows)
    assert abs(mined[0] - mined[1]) / asked <= 0.15
