"""The line-delimited JSON ctxbench and a driver speak over the driver's stdin and stdout.

One JSON object per line, each with an ``op``. ctxbench sends:

- ``start`` {trace_id, window, reserved, config, tools}: a new replay (the driver resets);
  the driver answers ``ready`` {framework, version, notes}.
- ``call`` {call, append, last_call}: the recorded messages appended since the previous
  call (each with its ``id``, its position in the replay's history, and its provider
  ``replay`` fields when it has any) and the provider's verdict
  on the previous call (``last_call``: ok, prompt_tokens, or null); the driver answers
  ``prompt``.
- ``overflow`` {error, attempt}: the provider rejected the prompt; the driver answers
  ``prompt`` with ``retry`` true when its framework would send again.

While it works on a ``call`` or an ``overflow`` the driver may send ``summarize`` {layer,
prompt, messages, max_tokens}, its messages history positions or prompt messages as below;
ctxbench answers ``summary`` {ok, text, error} (and, for a strategy that adds
them, more fields: AgentScope's ``fields``) from the run's summarizer, so a release and a reproduction see the same summaries.

A ``prompt`` answer holds ``base`` (the prompt the framework assembled before compacting,
optional), ``steps`` (one per compaction layer that ran: {layer, messages, note}), ``retry``,
``exception`` (a framework exception that failed this call) and ``info`` (the framework's own
counts). A prompt message is ``{"ref": id}`` (a history message as is), ``{"ref": id,
"content": text}`` (rewritten; a list of parts for a message whose history item carried its
``parts``: Hermes' prune puts a placeholder in an old screenshot's place; ``"arguments": [...]`` rewrites its tool calls' arguments, in
order, as Hermes' prune shrinks them; ``"tool_calls": [ids]`` keeps only those calls of the
turn; ``"replay": false`` sends it without its provider replay fields, as AgentScope's
compression keeps a turn's blocks after its ``ThinkingBlock``) or ``{"role", "content"}``
(new: a summary, a marker).
A ``summarize`` request's ``messages`` are such items too (or bare history positions), and its
optional ``key`` names the request as the reproduction's summary key does.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ctxbench.counting.base import replay_text
from ctxbench.strategies.dbgpt.memory import failed
from ctxbench.trace import Message, Part, ToolSpec

PROTOCOL_VERSION = "ctxbench.shipped/1"


def encode_message(message: Message, ident: int) -> dict[str, Any]:
    """A history message as the driver receives it."""
    out: dict[str, Any] = {"id": ident, "role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    if message.replay:  # provider replay fields as they travel back to the model
        out["replay"] = dict(message.replay)  # by field (Hermes stores them on the message)
        out["replay_text"] = replay_text(message)  # serialised (AgentScope's ThinkingBlock)
    if failed(message):  # the recorded tool call failed (a framework may treat it apart)
        out["failed"] = True
    images = [
        p for p in message.media_parts if p.type.startswith("image") or p.type == "input_image"
    ]
    if message.parts is not None:  # list content as the agent holds it (text and media)
        out["parts"] = [p.to_dict() for p in message.parts]
    if images:
        out["images"] = len(images)
        #: http(s) URLs as given; a data URL is ""
        out["image_urls"] = [
            p.url if p.url.startswith(("http://", "https://")) else "" for p in images
        ]
    return out


def encode_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
        for t in tools
    ]


class ProtocolError(ValueError):
    """A driver line that is not what the protocol allows (garbage, a wrong field)."""


def decode_line(line: str) -> dict[str, Any]:
    """One driver line as a dict with an ``op``; anything else is a ProtocolError."""
    try:
        data = json.loads(line)
    except ValueError:
        raise ProtocolError(f"the driver printed a line that is not JSON: {line[:200]!r}") from None
    if not isinstance(data, dict) or not isinstance(data.get("op"), str):
        raise ProtocolError(f"the driver printed JSON without an op: {line[:200]!r}")
    return data


def decode_prompt(items: Any, history: Sequence[Message]) -> list[Message]:
    """The messages of a ``prompt`` answer, history messages by reference."""
    if not isinstance(items, list):
        raise ProtocolError(f"prompt messages must be a list, not {type(items).__name__}")
    out: list[Message] = []
    for item in items:
        if not isinstance(item, Mapping):
            raise ProtocolError(f"a prompt message must be an object, not {item!r:.80}")
        if "ref" in item:
            ref = item["ref"]
            if not isinstance(ref, int) or not 0 <= ref < len(history):
                raise ProtocolError(f"prompt message ref {ref!r} is not a history position")
            original = history[ref]
            calls = item.get("tool_calls")
            if calls is not None:  # the calls kept (a framework cut the turn between its calls)
                if not isinstance(calls, list):
                    raise ProtocolError(f"tool_calls of ref {ref} must be a list of call ids")
                kept = tuple(c for c in original.tool_calls if c.id in set(map(str, calls)))
                if kept != original.tool_calls:
                    original = dataclasses.replace(original, tool_calls=kept)
            if item.get("replay") is False and original.replay:  # the turn without its reasoning
                original = dataclasses.replace(original, replay={})
            content = item.get("content")
            if content is None:
                message = original
            elif isinstance(content, str):
                message = original if content == original.content else original.with_text(content)
            elif isinstance(content, list) and all(isinstance(p, Mapping) for p in content):
                message = _with_parts(original, tuple(map(Part.from_dict, content)))
            else:
                raise ProtocolError(f"content of ref {ref} must be a string or a list of parts")
            out.append(_with_arguments(message, item.get("arguments"), ref))
            continue
        role, content = item.get("role"), item.get("content")
        if role not in ("system", "user", "assistant") or not isinstance(content, str):
            raise ProtocolError(f"a new prompt message needs a role and a content: {item!r:.120}")
        out.append(Message(role, content))
    return out


def _with_parts(message: Message, parts: tuple[Part, ...]) -> Message:
    """``message`` with list content ``parts`` (a framework's rewrite of a multimodal message:
    Hermes' prune puts a placeholder in an old screenshot's place); its text is the text
    parts', one per line, as the reproductions join them."""
    if parts == message.parts:
        return message
    return replace(message, parts=parts, content="\n".join(p.text for p in parts if p.is_text))


def _with_arguments(message: Message, arguments: Any, ref: int) -> Message:
    """``message`` with its tool calls' arguments rewritten (None: as they are)."""
    if arguments is None:
        return message
    calls = message.tool_calls
    if (
        not isinstance(arguments, list)
        or len(arguments) != len(calls)
        or not all(isinstance(a, str) for a in arguments)
    ):
        raise ProtocolError(f"arguments of ref {ref} must be one string per tool call")
    if all(a == c.arguments for a, c in zip(arguments, calls, strict=True)):
        return message
    new_calls = tuple(replace(c, arguments=a) for c, a in zip(calls, arguments, strict=True))
    return replace(message, tool_calls=new_calls)


def dumps(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n"
