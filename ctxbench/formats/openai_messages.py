"""ctxbench messages as OpenAI-style chat dicts and back: the one documented conversion.

A compactor written against OpenAI chat messages (``{"role", "content", "tool_calls": [{"id",
"type": "function", "function": {"name", "arguments"}}], "tool_call_id"}``) reads
:func:`to_openai` of the prompt and hands back dicts that :func:`from_openai` turns into
messages again. ctxbench's own messages keep a tool call flat (``ToolCall(id, name,
arguments)``); OpenAI nests it under ``function``. Both shapes are read back.

What a dict holds: ``role``; ``content`` (the text, or the list of parts when the recorded
content was a list); ``tool_calls`` (nested, only when there are calls); ``tool_call_id`` and
``name`` when set; the provider replay fields (``reasoning_content``, ...) when the message
carries them. Usage and importer metadata are ctxbench's bookkeeping, not part of the prompt,
and are left out. A plug-in function's strategy (:mod:`ctxbench.strategies.function`) maps a
dict equal to the one it handed out back to that very message, so an unchanged message keeps
its counts and its place in the trace.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ctxbench.formats.location import At
from ctxbench.formats.openai_chat import message as _message
from ctxbench.trace import REPLAY_KEYS, Message


def message_to_openai(message: Message) -> dict[str, Any]:
    """One message as an OpenAI chat dict (see the module docstring for its keys)."""
    out: dict[str, Any] = {"role": message.role}
    out["content"] = (
        [p.to_dict() for p in message.parts] if message.parts is not None else message.content
    )
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    for key in REPLAY_KEYS:
        if key in message.replay:
            out[key] = message.replay[key]
    return out


def to_openai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Messages as OpenAI chat dicts (new dicts: the caller may change them)."""
    return [message_to_openai(m) for m in messages]


def from_openai(dicts: Sequence[Any], *, source: str = "messages") -> list[Message]:
    """OpenAI chat dicts (nested or flat tool calls) as messages. A dict that is not a
    message is a :class:`~ctxbench.errors.TraceFormatError` naming ``source`` and its JSON
    path (``$[3].tool_calls[0].function``)."""
    at = At(source)
    if not isinstance(dicts, (list, tuple)):
        raise at.error(
            f"expected a list of message dicts, got {type(dicts).__name__}",
            hint="return a list of OpenAI-style chat messages",
        )
    return [_message(d, at.index(i)) for i, d in enumerate(dicts)]


__all__ = ["from_openai", "message_to_openai", "to_openai"]
