"""SWE-agent ``.traj`` files: ``{environment, trajectory, history, info}``.

``history`` is what the model was sent, message by message. Two variants exist:

- text actions (SWE-agent 0.x): the assistant's reply holds the thought and the command as
  text, and the observation comes back as a ``user`` message;
- function calling (SWE-agent 1.x): assistant messages carry OpenAI ``tool_calls`` and
  observations are ``tool`` messages answering ``tool_call_ids``.

``thought``, ``action``, ``agent``, ``message_type`` and ``is_demo`` stay in each message's
meta; ``trajectory``, ``info`` (aggregate ``model_stats``) and ``replay_config`` in the trace's.
SWE-agent records no per-call usage.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from ctxbench.formats import openai_chat
from ctxbench.formats.document import Document
from ctxbench.formats.importer import Importer, ImportOptions
from ctxbench.formats.location import At, rest
from ctxbench.trace import Message, Trace

NAME = "swe_agent"


def detect(doc: Document) -> bool:
    head = doc.head
    return (
        isinstance(head, dict)
        and isinstance(head.get("history"), list)
        and isinstance(head.get("trajectory"), list)
    )


def message(value: Any, at: At) -> Message:
    """A history message; ``tool_call_ids`` (a list, one id in practice) maps to ``tool_call_id``."""
    data = at.obj(value)
    if data.get("tool_call_ids") is None or "tool_call_id" in data:
        return openai_chat.message(data, at)
    ids = at.key("tool_call_ids").arr(data["tool_call_ids"])
    mapped = rest(data, ("tool_call_ids",))
    if ids:
        mapped["tool_call_id"] = at.key("tool_call_ids").index(0).ident(ids[0])
    msg = openai_chat.message(mapped, at)
    if len(ids) == 1:
        return msg
    return replace(msg, meta={**msg.meta, "tool_call_ids": ids})


def read(doc: Document, options: ImportOptions) -> Iterator[Trace]:
    at = At.start(doc.path, format=NAME)
    data = at.obj(doc.head)
    history_at = at.key("history")
    msgs = tuple(
        message(m, history_at.index(i))
        for i, m in enumerate(history_at.arr(at.need(data, "history")))
    )
    name = doc.path.name
    trace_id = name[: -len(".traj")] if name.endswith(".traj") else name.split(".")[0]
    yield Trace(trace_id, msgs, meta=rest(data, ("history",)))


IMPORTER = Importer(
    name=NAME,
    expects="a SWE-agent .traj object {environment, trajectory, history, info}",
    detect=detect,
    read=read,
)
