"""Seconds between a trace's model calls, from the timestamps it recorded (Claude Code sessions
keep ``meta.timestamp`` on every assistant message); what decides whether a cache expired."""

from __future__ import annotations

from datetime import datetime

from ctxbench.trace import Trace


def _seconds(text: object) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def call_gaps(trace: Trace) -> dict[int, float]:
    """Call index -> seconds since the previous call, for calls where both have a timestamp."""
    out: dict[int, float] = {}
    previous: float | None = None
    for k, index in enumerate(trace.call_indices):
        at = _seconds(trace.messages[index].meta.get("timestamp"))
        if at is not None and previous is not None:
            out[k] = max(at - previous, 0.0)
        previous = at
    return out
