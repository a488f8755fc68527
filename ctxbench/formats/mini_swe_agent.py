"""mini-swe-agent trajectories: ``{info, messages, trajectory_format, instance_id}``.

``messages`` is the model's chat history. Each assistant message carries the raw provider
response in ``extra.response``; its ``usage`` becomes the message's usage (prompt, completion,
and cached tokens from ``prompt_tokens_details`` or DeepSeek's ``prompt_cache_hit_tokens``;
the hit/miss split stays in ``usage.meta``). The rest of ``extra`` goes to the message's meta.
The final ``exit`` message is not sent to the model; it is kept as the trace's ``exit_message``.
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

NAME = "mini_swe_agent"
EXIT_ROLE = "exit"


def detect(doc: Document) -> bool:
    head = doc.head
    if not isinstance(head, dict) or not isinstance(head.get("messages"), list):
        return False
    info = head.get("info")
    return str(head.get("trajectory_format", "")).startswith("mini-swe-agent") or (
        isinstance(info, dict) and "mini_version" in info
    )


def message(value: Any, at: At) -> Message:
    data = at.obj(value)
    msg = openai_chat.message(rest(data, ("extra",)), at)
    if data.get("extra") is None:
        return msg
    extra_at = at.key("extra")
    extra = extra_at.obj(data["extra"])
    meta = dict(msg.meta)
    extra_rest = rest(extra, ("response",))
    if extra_rest:
        meta["extra"] = extra_rest
    usage = msg.usage
    if extra.get("response") is not None:
        response_at = extra_at.key("response")
        response = response_at.obj(extra["response"])
        if usage is None:
            usage = openai_chat.usage(response.get("usage"), response_at.key("usage"))
        meta["response"] = rest(response, ("usage",))
    return replace(msg, usage=usage, meta=meta)


def _model(raw_messages: list[Any]) -> str | None:
    """The model the provider says answered (first response), not the configured alias."""
    for raw in raw_messages:
        extra = raw.get("extra") if isinstance(raw, dict) else None
        response = extra.get("response") if isinstance(extra, dict) else None
        if isinstance(response, dict) and isinstance(response.get("model"), str):
            return str(response["model"])
    return None


def read(doc: Document, options: ImportOptions) -> Iterator[Trace]:
    at = At.start(doc.path, format=NAME)
    data = at.obj(doc.head)
    msgs_at = at.key("messages")
    raw_messages = msgs_at.arr(at.need(data, "messages"))
    out: list[Message] = []
    meta: dict[str, Any] = {}
    for i, raw in enumerate(raw_messages):
        if isinstance(raw, dict) and raw.get("role") == EXIT_ROLE:
            meta.setdefault("exit_message", []).append(raw)
            continue
        out.append(message(raw, msgs_at.index(i)))
    model = _model(raw_messages)
    if model is not None:
        meta["model"] = model
    meta.update(rest(data, ("messages", "instance_id")))
    instance = data.get("instance_id")
    trace_id = (
        at.key("instance_id").ident(instance)
        if instance is not None
        else doc.path.name.split(".")[0]
    )
    yield Trace(trace_id, tuple(out), meta=meta)


IMPORTER = Importer(
    name=NAME,
    expects="a mini-swe-agent trajectory {info, messages, trajectory_format}",
    detect=detect,
    read=read,
)
