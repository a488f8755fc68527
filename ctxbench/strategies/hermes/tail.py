"""Where Hermes cuts: the token-budgeted protected tail (``_find_tail_cut_by_tokens``) and the
pair and media clean-up after assembly (``_sanitize_tool_pairs``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ctxbench.counting.base import TokenCounter
from ctxbench.strategies.hermes.prune import MAX_TAIL_MESSAGE_FLOOR, _is_image, _replace_images
from ctxbench.strategies.hermes.summary import _is_actionable_user, is_summary_message
from ctxbench.strategies.layers import safe_start_forward
from ctxbench.trace import Message

IMAGE_STRIPPED = "[Attached image — stripped after compression]"


TOOL_CALL_REMOVED = "(tool call removed)"


def align_backward(messages: Sequence[Message], idx: int) -> int:
    """``_align_boundary_backward``: a cut right after a tool group moves before its assistant."""
    if idx <= 0 or idx >= len(messages):
        return idx
    check = idx - 1
    while check >= 0 and messages[check].role == "tool":
        check -= 1
    if check >= 0 and messages[check].role == "assistant" and messages[check].tool_calls:
        return check
    return idx


def _last_user_index(messages: Sequence[Message], head_end: int) -> int:
    for i in range(len(messages) - 1, head_end - 1, -1):
        if _is_actionable_user(messages[i]):
            return i
    return -1


def _last_assistant_index(
    messages: Sequence[Message], head_end: int, *, skip_summaries: bool = True
) -> int:
    last_any = -1
    for i in range(len(messages) - 1, head_end - 1, -1):
        msg = messages[i]
        if msg.role != "assistant" or (skip_summaries and is_summary_message(msg)):
            continue
        if last_any < 0:
            last_any = i
        if msg.content.strip():
            return i
    return last_any


def _turn_pair_end(messages: Sequence[Message], user_idx: int) -> int:
    idx = user_idx + 1
    if idx >= len(messages) or messages[idx].role != "assistant":
        return idx
    idx += 1
    while idx < len(messages) and messages[idx].role == "tool":
        idx += 1
    return idx


def find_tail_cut(
    messages: Sequence[Message],
    head_end: int,
    budget: int,
    counter: TokenCounter,
    *,
    protect_last_n: int,
    min_tail_user_messages: int = 1,
    anchor_skips_summary: bool = True,
) -> int:
    """``_find_tail_cut_by_tokens``: the index where the protected tail starts."""
    n = len(messages)
    available = max(0, n - head_end - 1)
    floor = max(3, min(protect_last_n, MAX_TAIL_MESSAGE_FLOOR))
    min_tail = min(floor, max(3, available - 2), available) if available > 1 else 0
    soft_ceiling = int(budget * 1.5)
    accumulated = 0
    cut = n
    for i in range(n - 1, head_end - 1, -1):
        cost = counter.count_message(messages[i])
        if accumulated + cost > soft_ceiling and (n - i) >= min_tail:
            break
        accumulated += cost
        cut = i
    if cut <= head_end and 0 < accumulated <= soft_ceiling:
        raw = 0
        for j in range(n - 1, head_end - 1, -1):
            cost = counter.count_message(messages[j])
            if raw + cost > budget and (n - j) >= min_tail:
                cut = j
                break
            raw += cost
            cut = j
    fallback = n - min_tail
    cut = min(cut, fallback)
    if cut <= head_end:
        cut = max(fallback, head_end + 1)
    cut = align_backward(messages, cut)

    # the last user message stays in the tail (#10896), with the causal-coupling push (#22523)
    last_user = _last_user_index(messages, head_end)
    if 0 <= last_user < cut:
        adjusted = max(last_user, head_end + 1)
        cut = (
            max(_turn_pair_end(messages, last_user), head_end + 1)
            if adjusted > last_user
            else adjusted
        )
    # the last assistant reply stays in the tail (#29824)
    last_assistant = _last_assistant_index(messages, head_end, skip_summaries=anchor_skips_summary)
    if 0 <= last_assistant < cut:
        cut = max(align_backward(messages, last_assistant), head_end + 1)
    if min_tail_user_messages > 1:
        users = [i for i in range(n - 1, head_end - 1, -1) if _is_actionable_user(messages[i])]
        if users:
            target = users[min(min_tail_user_messages, len(users)) - 1]
            if target < cut:
                cut = max(target, head_end + 1)
    return safe_start_forward(messages, max(cut, head_end + 1))


def sanitize_tool_pairs(messages: Sequence[Message]) -> list[Message]:
    """``_sanitize_tool_pairs``: drop results whose call is gone; strip calls whose result is
    gone (an emptied assistant message says ``(tool call removed)``). No stub results."""
    calls = {c.id for m in messages if m.role == "assistant" for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if m.role == "tool" and m.tool_call_id}
    out: list[Message] = []
    for msg in messages:
        if msg.role == "tool" and msg.tool_call_id not in calls:
            continue
        if msg.role == "assistant" and any(c.id not in results for c in msg.tool_calls):
            kept = tuple(c for c in msg.tool_calls if c.id in results)
            msg = replace(msg, tool_calls=kept)
            if not kept and not msg.content.strip():
                msg = msg.with_text(TOOL_CALL_REMOVED)
        out.append(msg)
    return out


def strip_historical_media(messages: Sequence[Message]) -> list[Message]:
    """Images before the newest image-bearing user message become a placeholder (kilocode#9434)."""
    anchor = next(
        (
            i
            for i in range(len(messages) - 1, -1, -1)
            if messages[i].role == "user" and any(_is_image(p) for p in messages[i].parts or ())
        ),
        -1,
    )
    if anchor <= 0:
        return list(messages)
    out = list(messages)
    for i in range(anchor):
        stripped = _replace_images(out[i], IMAGE_STRIPPED)
        if stripped is not None:
            out[i] = stripped
    return out
