"""ACME's context compaction: keep the system prompt, the task and the most recent messages.

Written against OpenAI chat messages, as the agent sends them; ctxbench runs it as a strategy
with ``--strategy acme_agent.compaction:compact`` (or ``name = "acme_agent.compaction:compact"``
in a sweep file) and its keyword parameters become knobs (``--set keep_last=12``).
"""

from __future__ import annotations


def size(messages: list[dict]) -> int:
    """Rough tokens: 4 characters each (what the agent budgets with)."""
    chars = 0
    for m in messages:
        chars += len(m.get("content") or "") if isinstance(m.get("content"), str) else 0
        for call in m.get("tool_calls") or []:
            chars += len(call["function"]["arguments"])
    return chars // 4


def compact(
    messages: list[dict], budget: int, *, keep_last: int = 12, trigger: float = 0.6
) -> list[dict]:
    """System + first user message + the last ``keep_last`` messages, past ``trigger``."""
    if size(messages) < trigger * budget:
        return messages
    head = [m for m in messages if m["role"] == "system"]
    first_user = next((m for m in messages if m["role"] == "user"), None)
    if first_user is not None:
        head.append(first_user)
    tail = [m for m in messages[-keep_last:] if all(m is not h for h in head)]
    while tail and tail[0]["role"] == "tool":  # never start with a result whose call is gone
        tail = tail[1:]
    return head + tail
