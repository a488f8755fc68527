"""The cheap prune of every Hermes compaction (``_prune_old_tool_results``): deduplicated and
one-line tool outputs, shrunk tool-call arguments, removed screenshots."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ctxbench.counting.base import TokenCounter
from ctxbench.trace import Message, Part, ToolCall

MAX_TAIL_MESSAGE_FLOOR = 8


PRESSURE_KEEP_RECENT_MESSAGES = 3


PRUNED_TOOL_PLACEHOLDER = "[Old tool output cleared to save context space]"


DUPLICATE_TOOL_OUTPUT = "[Duplicate tool output — same content as a more recent call]"


SCREENSHOT_REMOVED = "[screenshot removed to save context]"


IMAGE_PART_TYPES = frozenset({"image_url", "input_image", "image"})


def _is_image(part: Part) -> bool:
    return part.type in IMAGE_PART_TYPES


def _replace_images(message: Message, placeholder: str) -> Message | None:
    """``message`` with each image part replaced by ``placeholder`` text (None: no images)."""
    if not message.parts or not any(_is_image(p) for p in message.parts):
        return None
    parts = tuple(Part("text", placeholder) if _is_image(p) else p for p in message.parts)
    return replace(message, parts=parts, content="\n".join(p.text for p in parts if p.is_text))


def _json_args(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments) if arguments else {}
    except (ValueError, TypeError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _text(args: dict[str, Any], key: str, default: str = "") -> str:
    value = args.get(key, default)
    return value if isinstance(value, str) else (str(value) if value is not None else default)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


EXIT_CODE_RE = re.compile(r'"exit_code"\s*:\s*(-?\d+)')


TOTAL_COUNT_RE = re.compile(r'"total_count"\s*:\s*(\d+)')


def _regex_group(pattern: re.Pattern[str], text: str, default: str = "?") -> str:
    found = pattern.search(text)
    return found.group(1) if found else default


def _browser(tool: str, args: dict[str, Any], content: str) -> str:
    url, ref = args.get("url", ""), args.get("ref", "")
    detail = f" {url}" if url else (f" ref={ref}" if ref else "")
    return f"[{tool}]{detail} ({len(content):,} chars)"


def _web_extract(tool: str, args: dict[str, Any], content: str) -> str:
    urls = args.get("urls", [])
    first: Any = urls[0] if isinstance(urls, list) and urls else "?"
    if isinstance(first, dict):
        first = first.get("url") or first.get("href") or "?"
    elif not isinstance(first, str):
        first = "?"
    if isinstance(urls, list) and len(urls) > 1:
        first += f" (+{len(urls) - 1} more)"
    return f"[web_extract] {first} ({len(content):,} chars)"


def _lines(content: str) -> int:
    return content.count("\n") + 1 if content.strip() else 0


#: ``_summarize_tool_result``: one-line descriptions of Hermes' own tools.
TOOL_SUMMARIES: dict[str, Callable[[str, dict[str, Any], str], str]] = {
    "terminal": lambda t, a, c: (
        f"[terminal] ran `{_clip(_text(a, 'command'), 80)}` -> exit "
        f"{_regex_group(EXIT_CODE_RE, c)}, {_lines(c)} lines output"
    ),
    "read_file": lambda t, a, c: (
        f"[read_file] read {a.get('path', '?')} from line {a.get('offset', 1)} ({len(c):,} chars)"
    ),
    "write_file": lambda t, a, c: (
        f"[write_file] wrote to {a.get('path', '?')} "
        f"({_text(a, 'content').count(chr(10)) + 1 if a.get('content') else '?'} lines)"
    ),
    "search_files": lambda t, a, c: (
        f"[search_files] {a.get('target', 'content')} search for '{a.get('pattern', '?')}' in "
        f"{a.get('path', '.')} -> {_regex_group(TOTAL_COUNT_RE, c)} matches"
    ),
    "patch": lambda t, a, c: (
        f"[patch] {a.get('mode', 'replace')} in {a.get('path', '?')} ({len(c):,} chars result)"
    ),
    "browser_navigate": _browser,
    "browser_click": _browser,
    "browser_snapshot": _browser,
    "browser_type": _browser,
    "browser_scroll": _browser,
    "browser_vision": _browser,
    "web_search": lambda t, a, c: (
        f"[web_search] query='{a.get('query', '?')}' ({len(c):,} chars result)"
    ),
    "web_extract": _web_extract,
    "delegate_task": lambda t, a, c: (
        f"[delegate_task] '{_clip(_text(a, 'goal'), 60)}' ({len(c):,} chars result)"
    ),
    "execute_code": lambda t, a, c: (
        f"[execute_code] `{_text(a, 'code')[:60].replace(chr(10), ' ')}"
        f"{'...' if len(_text(a, 'code')) > 60 else ''}` ({_lines(c)} lines output)"
    ),
    "skill_view": lambda t, a, c: f"[{t}] name={a.get('name', '?')} ({len(c):,} chars)",
    "skills_list": lambda t, a, c: f"[{t}] name={a.get('name', '?')} ({len(c):,} chars)",
    "skill_manage": lambda t, a, c: f"[{t}] name={a.get('name', '?')} ({len(c):,} chars)",
    "vision_analyze": lambda t, a, c: (
        f"[vision_analyze] '{_text(a, 'question')[:50]}' ({len(c):,} chars)"
    ),
    "memory": lambda t, a, c: f"[memory] {a.get('action', '?')} on {a.get('target', '?')}",
    "todo": lambda t, a, c: "[todo] updated task list",
    "clarify": lambda t, a, c: "[clarify] asked user a question",
    "text_to_speech": lambda t, a, c: f"[text_to_speech] generated audio ({len(c):,} chars)",
    "cronjob": lambda t, a, c: f"[cronjob] {a.get('action', '?')}",
    "process": lambda t, a, c: (
        f"[process] {a.get('action', '?')} session={a.get('session_id', '?')}"
    ),
}


def summarize_tool_result(tool: str, arguments: str, content: str) -> str:
    """An informative one-line description of a tool call and its result; never raises."""
    args = _json_args(arguments)
    try:
        describe = TOOL_SUMMARIES.get(tool)
        if describe is not None:
            return describe(tool, args, content)
        first = "".join(f" {k}={str(v)[:40]}" for k, v in list(args.items())[:2])
        return f"[{tool}]{first} ({len(content):,} chars result)"
    except Exception:  # a malformed historical call must not stop compaction
        return f"[{tool}] ({len(content):,} chars result)"


def shrink_json_arguments(arguments: str, head_chars: int = 200) -> str:
    """Cut long string leaves of a JSON arguments blob, keeping it valid JSON (#11762)."""

    def shrink(value: Any) -> Any:
        if isinstance(value, str):
            return value[:head_chars] + "...[truncated]" if len(value) > head_chars else value
        if isinstance(value, dict):
            return {k: shrink(v) for k, v in value.items()}
        if isinstance(value, list):
            return [shrink(v) for v in value]
        return value

    try:
        return json.dumps(shrink(json.loads(arguments)), ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):  # not JSON, or nested too deep to walk
        return arguments


def _protected_boundary(
    messages: Sequence[Message],
    count: int,
    tokens: int | None,
    counter: TokenCounter,
    floor_cap: int | None = MAX_TAIL_MESSAGE_FLOOR,
) -> int:
    """First index of the protected tail: a token budget with a message floor, capped at
    ``floor_cap`` messages (the later commit's 8; 0.19.0: ``min(protect_tail_count, n)``)."""
    if tokens is None or tokens <= 0:
        return len(messages) - count
    min_protect = min(count, len(messages))
    if floor_cap is not None:
        min_protect = min(min_protect, floor_cap)
    accumulated = 0
    boundary = len(messages)
    for i in range(len(messages) - 1, -1, -1):
        cost = counter.count_message(messages[i])
        if accumulated + cost > tokens and (len(messages) - i) >= min_protect:
            boundary = i
            break
        accumulated += cost
        boundary = i
    return len(messages) - max(len(messages) - boundary, min_protect)


def prune_old_tool_results(
    messages: Sequence[Message],
    counter: TokenCounter,
    *,
    protect_tail_count: int,
    protect_tail_tokens: int | None,
    min_prune_chars: int = 200,
    floor_cap: int | None = MAX_TAIL_MESSAGE_FLOOR,
    pressure_pass: bool = True,
) -> tuple[list[Message], int]:
    """``_prune_old_tool_results``: (messages, how many were changed). ``floor_cap`` and
    ``pressure_pass`` (#61932) are rules of the later commit; 0.19.0 has neither."""
    result = list(messages)
    if not result:
        return result, 0
    calls: dict[str, ToolCall] = {
        c.id: c for m in result if m.role == "assistant" for c in m.tool_calls
    }
    prune_boundary = _protected_boundary(
        result, protect_tail_count, protect_tail_tokens, counter, floor_cap
    )
    pruned = 0

    # pass 1: identical outputs anywhere, newest kept (lossless, so the tail is not exempt)
    seen: set[str] = set()
    for i in range(len(result) - 1, -1, -1):
        msg = result[i]
        if msg.role != "tool" or msg.parts is not None or len(msg.content) < 200:
            continue
        digest = hashlib.md5(msg.content.encode("utf-8", "replace")).hexdigest()[:12]
        if digest in seen:
            result[i] = msg.with_text(DUPLICATE_TOOL_OUTPUT)
            pruned += 1
        else:
            seen.add(digest)

    def demote(i: int) -> bool:
        nonlocal pruned
        msg = result[i]
        if msg.role != "tool":
            return False
        if msg.parts is not None:
            stripped = _replace_images(msg, SCREENSHOT_REMOVED)
            if stripped is None:
                return False
            result[i] = stripped
            pruned += 1
            return True
        content = msg.content
        if (
            not content
            or content == PRUNED_TOOL_PLACEHOLDER
            or content.startswith(("[Duplicate tool output", "[screenshot removed"))
            or (content.startswith("[") and " chars)" in content and len(content) < 400)
            or len(content) <= min_prune_chars
        ):
            return False
        call = calls.get(msg.tool_call_id or "")
        name, args = (call.name, call.arguments) if call else ("unknown", "")
        result[i] = msg.with_text(summarize_tool_result(name, args, content))
        pruned += 1
        return True

    def shrink_args(i: int) -> bool:
        nonlocal pruned
        msg = result[i]
        if msg.role != "assistant" or not msg.tool_calls:
            return False
        new_calls = tuple(
            replace(c, arguments=shrink_json_arguments(c.arguments))
            if len(c.arguments) > 500
            else c
            for c in msg.tool_calls
        )
        if new_calls == msg.tool_calls:
            return False
        result[i] = replace(msg, tool_calls=new_calls)
        return True

    for i in range(max(0, prune_boundary)):  # pass 2: one-line summaries
        demote(i)
    for i in range(max(0, prune_boundary)):  # pass 3: JSON-safe argument shrinking
        shrink_args(i)

    # pass 4: pressure inside the protected tail (#61932)
    if protect_tail_tokens and pressure_pass:
        soft_ceiling = int(protect_tail_tokens * 1.5)
        start = max(0, prune_boundary)
        demote_end = len(result) - min(PRESSURE_KEEP_RECENT_MESSAGES, len(result))

        def protected_tokens() -> int:
            return sum(counter.count_message(m) for m in result[start:])

        if demote_end > prune_boundary and protected_tokens() > soft_ceiling:
            for i in range(start, demote_end):
                demote(i)
                shrink_args(i)
                if protected_tokens() <= soft_ceiling:
                    break
            if protected_tokens() > soft_ceiling:
                last_tool = next(
                    (i for i in range(len(result) - 1, -1, -1) if result[i].role == "tool"), None
                )
                for i in range(start, len(result)):
                    if i != last_tool:
                        demote(i) if result[i].role == "tool" else shrink_args(i)
                if (
                    last_tool is not None
                    and last_tool >= prune_boundary
                    and protected_tokens() > soft_ceiling
                ):
                    demote(last_tool)
    return result, pruned
