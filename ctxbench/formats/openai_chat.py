"""OpenAI chat messages: a JSON list of messages, ``{"messages": [...]}``, or JSON Lines of either.

A JSON Lines file whose lines are messages is one conversation; a file whose lines are
conversations (``{"messages": [...]}`` or lists) holds one trace per line. Tool calls may be
OpenAI's nested ``{id, type, function: {name, arguments}}`` or flat ``{id, name, arguments}``;
list content keeps its parts. The readers of messages, calls, usage and tool schemas here are
shared by the importers whose files embed OpenAI-style messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ctxbench.formats.document import Document
from ctxbench.formats.importer import Importer, ImportOptions
from ctxbench.formats.location import At, kind_of, rest
from ctxbench.trace import REPLAY_KEYS, Message, Part, ToolCall, ToolSpec, Trace, Usage

NAME = "openai_chat"
MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name", "usage", *REPLAY_KEYS)
CONVERSATION_KEYS = ("id", "messages", "tools")


def content(value: Any, at: At) -> tuple[str, tuple[Part, ...] | None]:
    """Message content as text, plus its parts when it was a list (``None`` for a string)."""
    if value is None:
        return "", None
    if isinstance(value, str):
        return value, None
    if not isinstance(value, list):
        raise at.error(f"expected a string, a list of parts or null, got {kind_of(value)}")
    parts = tuple(part(p, at.index(i)) for i, p in enumerate(value))
    return "\n".join(p.text for p in parts if p.is_text), parts


def part(value: Any, at: At) -> Part:
    """One content part; a bare string is a text part, unknown part keys stay in ``data``."""
    if isinstance(value, str):
        return Part("text", value)
    data = at.obj(value)
    kind = at.key("type").text(data.get("type", "text"))
    if kind == "text":
        text = at.key("text").opt_text(data.get("text")) or ""
        return Part(kind, text, rest(data, ("type", "text")))
    return Part(kind, "", rest(data, ("type",)))


def tool_call(value: Any, at: At) -> ToolCall:
    """A call in OpenAI's nested shape or the flat ``{id, name, arguments}`` shape."""
    data = at.obj(value)
    call_id = at.key("id").ident(at.need(data, "id"))
    if "function" in data:
        fn_at = at.key("function")
        fn = fn_at.obj(data["function"])
        name = fn_at.key("name").text(fn_at.need(fn, "name"))
        arguments = fn_at.key("arguments").arguments(fn.get("arguments"))
        meta = rest(data, ("id", "function"))
        fn_rest = rest(fn, ("name", "arguments"))
        if fn_rest:
            meta["function"] = fn_rest
    else:
        name = at.key("name").text(at.need(data, "name"))
        arguments = at.key("arguments").arguments(data.get("arguments"))
        meta = rest(data, ("id", "name", "arguments"))
    if meta.get("type") == "function":  # implied by the canonical format
        del meta["type"]
    return ToolCall(call_id, name, arguments, meta)


def usage(value: Any, at: At) -> Usage | None:
    """Provider usage: OpenAI chat (``prompt_tokens``; cached from ``prompt_tokens_details`` or
    DeepSeek's ``prompt_cache_hit_tokens``), Responses (``input_tokens`` with details) or
    Anthropic (``input_tokens`` + cache reads and writes). Every other key goes to ``meta``."""
    if value is None:
        return None
    data = at.obj(value)
    if "prompt_tokens" in data or "completion_tokens" in data:
        cached = None
        details = data.get("prompt_tokens_details")
        if isinstance(details, dict):
            cached = at.key("prompt_tokens_details.cached_tokens").opt_int(
                details.get("cached_tokens")
            )
        if cached is None:
            cached = at.key("prompt_cache_hit_tokens").opt_int(data.get("prompt_cache_hit_tokens"))
        return Usage(
            prompt_tokens=at.key("prompt_tokens").opt_int(data.get("prompt_tokens")),
            completion_tokens=at.key("completion_tokens").opt_int(data.get("completion_tokens")),
            cached_tokens=cached,
            meta=rest(data, ("prompt_tokens", "completion_tokens")),
        )
    if "input_tokens" in data:
        prompt = at.key("input_tokens").opt_int(data.get("input_tokens"))
        output = at.key("output_tokens").opt_int(data.get("output_tokens"))
        details = data.get("input_tokens_details")
        if isinstance(details, dict):  # Responses API: input_tokens already includes cached ones
            cached = at.key("input_tokens_details.cached_tokens").opt_int(
                details.get("cached_tokens")
            )
        else:  # Anthropic: input_tokens excludes cache reads and writes
            cached = at.key("cache_read_input_tokens").opt_int(data.get("cache_read_input_tokens"))
            written = at.key("cache_creation_input_tokens").opt_int(
                data.get("cache_creation_input_tokens")
            )
            if prompt is not None:
                prompt += (cached or 0) + (written or 0)
        return Usage(prompt, output, cached, rest(data, ("input_tokens", "output_tokens")))
    return Usage(meta=dict(data))


def replay_fields(data: dict[str, Any]) -> dict[str, Any]:
    """Provider replay fields that carry something (empty reasoning is not sent back)."""
    return {k: data[k] for k in REPLAY_KEYS if data.get(k) not in (None, "", [], {})}


def message(value: Any, at: At) -> Message:
    """One OpenAI-style chat message; unmapped keys go to ``meta``."""
    data = at.obj(value)
    role = at.key("role").text(at.need(data, "role"))
    text, parts = content(data.get("content"), at.key("content"))
    calls_at = at.key("tool_calls")
    calls = tuple(
        tool_call(c, calls_at.index(i))
        for i, c in enumerate(calls_at.opt_arr(data.get("tool_calls")))
    )
    call_id = data.get("tool_call_id")
    return Message(
        role=role,
        content=text,
        parts=parts,
        tool_calls=calls,
        tool_call_id=None if call_id is None else at.key("tool_call_id").ident(call_id),
        name=at.key("name").opt_text(data.get("name")),
        usage=usage(data.get("usage"), at.key("usage")),
        replay=replay_fields(data),
        meta=rest(data, MESSAGE_KEYS),
    )


def tool_spec(value: Any, at: At) -> ToolSpec:
    """A tool schema: OpenAI ``{type: function, function: {...}}``, flat, or Anthropic's ``input_schema``."""
    data = at.obj(value)
    meta: dict[str, Any] = {}
    if "function" in data:
        meta = rest(data, ("function", "type"))
        if data.get("type", "function") != "function":
            meta["type"] = data["type"]
        at = at.key("function")
        data = at.obj(data["function"])
    params_key = (
        "input_schema" if "input_schema" in data and "parameters" not in data else "parameters"
    )
    params = data.get(params_key)
    return ToolSpec(
        name=at.key("name").text(at.need(data, "name")),
        description=at.key("description").opt_text(data.get("description")) or "",
        parameters=at.key(params_key).obj(params) if params is not None else {},
        meta={**meta, **rest(data, ("name", "description", params_key))},
    )


def messages(value: Any, at: At) -> tuple[Message, ...]:
    return tuple(message(m, at.index(i)) for i, m in enumerate(at.arr(value)))


def _is_message(value: Any) -> bool:
    return (
        isinstance(value, dict) and isinstance(value.get("role"), str) and "messages" not in value
    )


def _is_conversation(value: Any) -> bool:
    if isinstance(value, dict):
        msgs = value.get("messages")
        return isinstance(msgs, list) and (not msgs or _is_message(msgs[0]))
    return isinstance(value, list) and bool(value) and _is_message(value[0])


def detect(doc: Document) -> bool:
    head = doc.head
    if doc.layout == "jsonl":
        return _is_message(head) or _is_conversation(head)
    if isinstance(head, list) and head and _is_conversation(head[0]):
        return True
    return _is_conversation(head)


def conversation(value: Any, at: At, default_id: str) -> Trace:
    """One trace from a list of messages or a ``{"messages": [...], "tools": [...]}`` object."""
    if isinstance(value, list):
        return Trace(default_id, messages(value, at))
    data = at.obj(value)
    tools_at = at.key("tools")
    tools = tuple(
        tool_spec(t, tools_at.index(i)) for i, t in enumerate(tools_at.opt_arr(data.get("tools")))
    )
    trace_id = at.key("id").ident(data["id"]) if data.get("id") is not None else default_id
    return Trace(
        id=trace_id,
        messages=messages(at.need(data, "messages"), at.key("messages")),
        tools=tools,
        meta=rest(data, CONVERSATION_KEYS),
    )


def read(doc: Document, options: ImportOptions) -> Iterator[Trace]:
    stem = doc.path.name.split(".")[0]
    if doc.layout == "jsonl" and _is_message(doc.head):
        msgs = [
            message(value, At.start(doc.path, line=line, format=NAME))
            for line, value in doc.records()
        ]
        yield Trace(stem, tuple(msgs))
        return
    if doc.layout == "jsonl":
        for n, (line, value) in enumerate(doc.records(), start=1):
            yield conversation(value, At.start(doc.path, line=line, format=NAME), f"{stem}-{n}")
        return
    at = At.start(doc.path, format=NAME)
    head = doc.head
    if isinstance(head, list) and head and not _is_message(head[0]):
        for i, value in enumerate(head):
            yield conversation(value, at.index(i), f"{stem}-{i + 1}")
        return
    yield conversation(head, at, stem)


IMPORTER = Importer(
    name=NAME,
    expects='a JSON list of chat messages, {"messages": [...]}, or JSON Lines of messages or conversations',
    detect=detect,
    read=read,
)
