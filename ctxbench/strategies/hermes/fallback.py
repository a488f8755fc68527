"""Hermes without a summary: the deterministic fallback summary and the error classification
that decides whether to fall back, give up or compress again."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ctxbench.errors import SummarizerError
from ctxbench.strategies.hermes.prune import summarize_tool_result
from ctxbench.strategies.hermes.summary import (
    HISTORICAL_IN_PROGRESS_HEADING,
    HISTORICAL_PENDING_ASKS_HEADING,
    HISTORICAL_REMAINING_WORK_HEADING,
    HISTORICAL_TASK_HEADING,
    NO_USER_TASK_SENTINEL,
    _message_text,
    is_summary_message,
    with_summary_prefix,
)
from ctxbench.trace import Message, ToolCall

FALLBACK_SUMMARY_MAX_CHARS = 8_000


FALLBACK_PREVIOUS_SUMMARY_MAX_CHARS = 3_000


FALLBACK_TURN_MAX_CHARS = 700


PATH_MENTION_RE = re.compile(r"(?:/|~/?|[A-Za-z]:\\)[^\s`'\")\]}<>]+")


ERROR_LINE_RE = re.compile(r"\b(error|failed|exception|traceback|timeout|timed out|fatal)\b", re.I)


#: Lower-cased substrings of a provider error that Hermes treats as a context overflow.
CONTEXT_ERROR_PHRASES = (
    "context length",
    "context size",
    "maximum context",
    "token limit",
    "too many tokens",
    "reduce the length",
    "exceeds the limit",
    "context window",
    "request entity too large",
    "payload too large",
    "prompt is too long",
    "prompt exceeds max length",
)


#: Summarizer failures after which Hermes aborts instead of inserting a fallback summary.
TERMINAL_FAILURE_KINDS = ("auth", "quota", "connection", "network")


_ACCESS_FAILURE_RE = re.compile(r"\b(401|402|403)\b|insufficient_quota|quota exceeded|no api key")


def _bullets(items: Sequence[str], limit: int = 8) -> str:
    unique: list[str] = []
    for item in items:
        item = item.strip()
        if item and item not in unique:
            unique.append(item)
        if len(unique) >= limit:
            break
    return "\n".join(f"- {item}" for item in unique) if unique else "None."


def _append_unique(items: list[str], value: str, limit: int) -> None:
    value = value.strip()
    if value and value not in items and len(items) < limit:
        items.append(value)


def _collect_paths(value: Any, found: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("path", "workdir", "file_path", "output_path") and isinstance(item, str):
                _append_unique(found, item, 12)
            _collect_paths(item, found)
    elif isinstance(value, list):
        for item in value:
            _collect_paths(item, found)
    elif isinstance(value, str):
        for match in PATH_MENTION_RE.findall(value):
            _append_unique(found, match.rstrip(".,:;"), 12)


def fallback_summary(
    turns: Sequence[Message], previous_summary: str | None, reason: str | None
) -> str:
    """``_build_static_fallback_summary``: continuity anchors recovered without an LLM."""
    user_asks: list[str] = []
    assistant_actions: list[str] = []
    tool_actions: list[str] = []
    files: list[str] = []
    blockers: list[str] = []
    dropped: list[str] = []
    calls: dict[str, ToolCall] = {}
    for msg in turns:
        for call in msg.tool_calls if msg.role == "assistant" else ():
            calls[call.id] = call
            if call.arguments:
                try:
                    _collect_paths(json.loads(call.arguments), files)
                except (ValueError, RecursionError):  # not JSON, or nested too deep to walk
                    _collect_paths(call.arguments, files)
    for msg in turns:
        text = re.sub(r"\s+", " ", _message_text(msg)).strip()
        if len(text) > FALLBACK_TURN_MAX_CHARS:
            text = text[: FALLBACK_TURN_MAX_CHARS - 15].rstrip() + " ...[truncated]"
        _collect_paths(text, files)
        names = [c.name for c in msg.tool_calls] if msg.role == "assistant" else []
        turn = text
        if names:
            prefix = "tool calls: " + ", ".join(names[:6])
            turn = f"{prefix}; {text}" if text else prefix
        if turn:
            dropped.append(f"{msg.role.upper()}: {turn}")
            del dropped[:-8]
        if len(text) > 600:
            text = text[:420].rstrip() + " ... " + text[-160:].lstrip()
        if msg.role == "user" and text and not is_summary_message(msg):
            user_asks.append(text)
        elif msg.role == "assistant":
            if names:
                assistant_actions.append("Called tool(s): " + ", ".join(names[:6]))
            elif text:
                assistant_actions.append(text)
        elif msg.role == "tool":
            made = calls.get(msg.tool_call_id or "")
            name, args = (made.name, made.arguments) if made else ("unknown", "")
            tool_actions.append(summarize_tool_result(name, args, text))
            if ERROR_LINE_RE.search(text):
                blockers.append(text[:500])
    completed = [
        f"{i}. {item}" for i, item in enumerate((assistant_actions + tool_actions)[:12], start=1)
    ]
    task = f"User asked: {user_asks[-1]!r}" if user_asks else NO_USER_TASK_SENTINEL
    previous = ""
    if previous_summary:
        snapshot = previous_summary.strip()
        if len(snapshot) > FALLBACK_PREVIOUS_SUMMARY_MAX_CHARS:
            snapshot = (
                snapshot[: FALLBACK_PREVIOUS_SUMMARY_MAX_CHARS - 45].rstrip()
                + "\n...[previous summary snapshot truncated]"
            )
        previous = (
            f"\n\n## Previous Summary Snapshot\n{snapshot}\n\nThe previous compaction summary "
            "above remains background continuity context because the latest LLM summary "
            "update failed."
        )
    reason_text = f" Summary failure reason: {reason}." if reason else ""
    body = f"""{HISTORICAL_TASK_HEADING}
{task}

## Goal
Recovered from a deterministic fallback because the LLM context summarizer was unavailable. Continue from the protected recent messages after this summary and use current file/system state for exact details.{previous}

## Constraints & Preferences
- This fallback was generated locally without an LLM summary call.
- Secrets and credentials were redacted before preservation.
- The summary may be incomplete; prefer verifying current files, git state, processes, and test results instead of assuming omitted details.

## Completed Actions
{chr(10).join(completed) if completed else "None recoverable from compacted turns."}

## Active State
Unknown from deterministic fallback. Inspect current repository/session state if needed.

{HISTORICAL_IN_PROGRESS_HEADING}
Unknown from deterministic fallback — the latest user ask is recorded once under
"{HISTORICAL_TASK_HEADING}" above as historical context only. Do NOT treat it as an
unfulfilled instruction to re-answer; verify current state and continue from the
protected recent messages after this summary.

## Blocked
{_bullets(blockers, limit=5)}

## Key Decisions
None recoverable from deterministic fallback.

## Resolved Questions
None recoverable from deterministic fallback.

{HISTORICAL_PENDING_ASKS_HEADING}
None recoverable from deterministic fallback. (The latest user ask is preserved once
under "{HISTORICAL_TASK_HEADING}" as historical context — it is NOT necessarily
outstanding.)

## Relevant Files
{_bullets(files, limit=12)}

{HISTORICAL_REMAINING_WORK_HEADING}
Continue from the most recent unfulfilled user ask and protected tail messages. Verify state with tools before making claims.

## Last Dropped Turns
{_bullets(dropped, limit=8)}

## Critical Context
Summary generation was unavailable, so this is a best-effort deterministic fallback for {len(turns)} compacted message(s).{reason_text}"""
    summary = with_summary_prefix(body.strip())
    if len(summary) > FALLBACK_SUMMARY_MAX_CHARS:
        summary = (
            summary[: FALLBACK_SUMMARY_MAX_CHARS - 42].rstrip()
            + "\n...[fallback summary truncated]"
        )
    return summary


def is_context_error(text: str) -> bool:
    """Hermes' context-length / payload-too-large detection on a provider error."""
    lowered = text.lower()
    return "413" in lowered or any(p in lowered for p in CONTEXT_ERROR_PHRASES)


def is_terminal_failure(error: SummarizerError) -> bool:
    """Access, quota and network failures abort instead of falling back (#29559)."""
    return error.kind in TERMINAL_FAILURE_KINDS or bool(
        _ACCESS_FAILURE_RE.search(error.message.lower())
    )
