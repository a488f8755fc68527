"""``extractive`` across successive Claude Code compactions: carried items keep one list
marker (no ``- - - -`` nesting), and a numbered file listing's line numbers are not facts."""

from __future__ import annotations

from ctxbench.counting import get_counter
from ctxbench.strategies.claude_code import CONTINUATION, SUMMARY_SECTIONS
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.trace import Message


def summarize(messages: tuple[Message, ...]) -> str:
    request = SummaryRequest("claude_code", "autocompact", "", messages, SUMMARY_SECTIONS, 2_000)
    return ExtractiveSummarizer().summarize(request, get_counter("tiktoken:o200k_base"))


def test_eleven_compactions_carry_items_with_one_marker() -> None:
    first = summarize(
        (Message("user", "Fix django.db.utils.OperationalError. Never drop the table."),)
    )
    summary = first
    for n in range(11):
        summary = summarize(
            (Message("user", CONTINUATION + summary), Message("user", f"round {n} must pass"))
        )
    assert "- - " not in summary
    assert "- Never drop the table." in summary
    assert summary.count("Never drop the table.") == first.count("Never drop the table.")


def test_line_numbers_of_a_read_are_not_kept() -> None:
    listing = "\n".join(f"   {n}→    value = compute({n % 7})" for n in range(100, 413))
    summary = summarize(
        (Message("user", "read models.py"), Message("tool", listing, tool_call_id="r"))
    )
    assert "- 100\n" not in summary and "- 412\n" not in summary
    assert "- 101" not in summary
