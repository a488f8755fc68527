"""codex: Codex CLI local auto-compaction (compact.rs), one test per rule."""

from __future__ import annotations

from ctxbench.pairing import pairing_violations
from ctxbench.strategies import build_strategy
from ctxbench.strategies.codex import (
    SUMMARIZATION_PROMPT,
    SUMMARY_PREFIX,
    WARNING,
    Codex,
    CodexConfig,
    approx_token_count,
    build_compacted_history,
    collect_user_messages,
    truncate_text,
)
from ctxbench.strategies.layers import transcript
from ctxbench.trace import Message, Trace
from tests.factories import tool_round, tool_trace
from tests.replaying import Failing, Recording, compactions, run

BIG = "o" * 800


def chat_trace(n: int, *, calls: int = 1) -> Trace:
    """User turns, each followed by a tool round, with large outputs."""
    msgs = [Message("system", "You are Codex.")]
    for i in range(n):
        msgs.append(Message("user", f"request {i}: fix module_{i}.py"))
        msgs += tool_round(i, calls=calls, output=BIG)
    msgs.append(Message("assistant", "done"))
    return Trace("c", tuple(msgs))


class Window:
    def __init__(self, window: int) -> None:
        self.window = window


def test_defaults() -> None:
    cfg = CodexConfig()
    assert cfg.auto_compact_token_limit is None
    assert cfg.user_message_max_tokens == 20_000
    assert cfg.configured_limit_mode == "min"


def test_limit_is_90_percent_of_the_window_and_a_configured_limit_can_only_lower_it() -> None:
    ctx = Window(200_000)
    assert Codex().limit(ctx) == 180_000  # type: ignore[arg-type]
    lower = build_strategy("codex", {"auto_compact_token_limit": 100_000})
    higher = build_strategy("codex", {"auto_compact_token_limit": 190_000})
    assert lower.limit(ctx) == 100_000  # type: ignore[attr-defined]
    assert higher.limit(ctx) == 180_000  # type: ignore[attr-defined]


def test_older_code_let_a_configured_limit_replace_the_default() -> None:
    params = {"auto_compact_token_limit": 190_000, "configured_limit_mode": "replace"}
    assert build_strategy("codex", params).limit(Window(200_000)) == 190_000  # type: ignore[attr-defined]


def test_compacts_when_the_estimate_reaches_the_limit() -> None:
    out = run(chat_trace(14), "codex", 2_000, summarizer=Recording())
    edits = compactions(out, "codex")
    assert edits and all(e["est_before"] >= 2_000 * 9 // 10 for e in edits)


def test_new_history_is_system_recent_user_messages_and_the_summary_all_as_user() -> None:
    trace = chat_trace(14)
    out = run(trace, "codex", 2_000, summarizer=Recording())
    edit = compactions(out, "codex")[0]
    before = trace.messages[: trace.call_indices[edit["call"]]]
    asked = [m.content for m in before if m.role == "user"]
    view = out.final_view
    assert view[0].role == "system"
    summary_at = next(i for i, m in enumerate(view) if m.content.startswith(SUMMARY_PREFIX + "\n"))
    assert [m.content for m in view[1:summary_at]] == asked  # all fit in 20,000 tokens
    assert all(m.role == "user" for m in view[1 : summary_at + 1])
    assert edit["messages_after"] == 1 + len(asked) + 1


def test_recent_user_messages_are_chosen_newest_first_within_the_budget_and_truncated() -> None:
    messages = ["a" * 400, "b" * 400, "c" * 400]  # 100 tokens each
    history = build_compacted_history([], messages, "S", 250)
    texts = [m.content for m in history]
    assert texts[1:] == ["b" * 400, "c" * 400, "S"]
    assert "tokens truncated" in texts[0] and texts[0].startswith("a")
    assert approx_token_count(texts[0]) <= 50


def test_earlier_summaries_and_observations_are_not_user_messages() -> None:
    msgs = [
        Message("user", "real request"),
        Message("user", f"{SUMMARY_PREFIX}\nold summary"),
        Message("user", "Observation: rows"),
        Message("tool", "out", tool_call_id="x"),
    ]
    assert collect_user_messages(msgs) == ["real request"]


def test_summary_request_carries_the_compaction_prompt_and_the_history() -> None:
    summarizer = Recording()
    run(chat_trace(14), "codex", 2_000, summarizer=summarizer)
    request = summarizer.requests[0]
    assert request.prompt.endswith(SUMMARIZATION_PROMPT)
    assert "CONTEXT CHECKPOINT COMPACTION" in request.prompt
    assert request.prompt.startswith(transcript(request.messages))
    assert len(request.sections) == 5


def test_an_oversized_compaction_request_drops_the_oldest_items_one_by_one() -> None:
    summarizer = Recording()
    out = run(chat_trace(14), "codex", 2_000, summarizer=summarizer)  # history + prompt > window
    notes = [e["note"] for e in compactions(out, "codex")]
    assert any(n.startswith("trimmed ") for n in notes)
    assert all(pairing_violations(r.messages) == 0 for r in summarizer.requests)


def test_every_compaction_carries_codex_warning() -> None:
    out = run(chat_trace(14), "codex", 2_000, summarizer=Recording())
    assert all(WARNING in e["note"] for e in compactions(out, "codex"))


def test_a_failing_summarizer_leaves_the_history_unchanged() -> None:
    out = run(chat_trace(14), "codex", 2_000, summarizer=Failing())
    assert compactions(out) == []


def test_parallel_calls_stay_paired() -> None:
    out = run(chat_trace(14, calls=3), "codex", 3_000, summarizer=Recording())
    assert compactions(out)
    assert out.result.pairing_violations == 0 and pairing_violations(out.final_view) == 0


def test_truncate_text_matches_codex_test_vectors() -> None:
    line = "very long execution error line that should trigger truncation\n"
    assert truncate_text(line * 120, 60) == f"{line}[…1829 tokens truncated…]\n{line}"
    assert truncate_text("abcdef", 0) == "[…2 tokens truncated…]"
    assert truncate_text("short output", 100) == "short output"
    lines = "".join(f"line-{i}-{'x' * 64}\n" for i in range(2000))
    assert truncate_text(lines, 80) == (
        f"line-0-{'x' * 64}\nline-1-{'x' * 64}\n[…37168 tokens truncated…]\nline-1999-{'x' * 64}\n"
    )


def test_approx_token_count_is_utf8_bytes_over_4_rounded_up() -> None:
    assert approx_token_count("abcde") == 2
    assert approx_token_count("é") == 1
    assert approx_token_count("") == 0


def test_tool_trace_without_user_turns_keeps_the_task() -> None:
    out = run(tool_trace(10, output=BIG), "codex", 2_000, summarizer=Recording())
    assert any(m.content == "Fix the bug in src/app.py" for m in out.final_view)
