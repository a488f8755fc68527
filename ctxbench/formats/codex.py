"""OpenAI Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{timestamp, type, payload}``. Codex sends the model its ``base_instructions``
and the list of ``response_item`` payloads, so those are the trace (codex-rs
``protocol/src/models.rs`` ``ResponseItem``; shapes of codex-tui 0.125.0 files):

- ``session_meta``: the trace's meta; ``base_instructions.text`` becomes the first system
  message (the request's ``instructions``);
- ``message``: ``developer`` -> system, ``user`` -> user, ``assistant`` -> assistant text;
- the output items of one model response (``reasoning``, assistant ``message``,
  ``function_call``, ``custom_tool_call``, ``local_shell_call``, ``web_search_call``) become
  **one** assistant message, closed by the ``event_msg`` / ``token_count`` that follows the
  response; its ``last_token_usage`` is the call's usage (``input_tokens`` includes the cached
  ones) and ``model_context_window`` goes to the trace's meta;
- ``reasoning`` items are kept whole (``encrypted_content`` is opaque) as the
  ``codex_reasoning_items`` replay field; ``web_search_call`` items (run by the server, no
  output item) are kept in the message's ``meta.web_search_calls``;
- ``function_call_output`` / ``custom_tool_call_output`` are the tool results; a
  ``custom_tool_call``'s ``input`` (apply_patch text) is kept as its arguments, as sent;
- ``compacted`` (``{message, replacement_history}``) is a **recorded compaction**: its
  ``pre_tokens`` is the ``total_tokens`` of the last response before it, the number Codex
  compares with ``auto_compact_token_limit``;
- ``turn_context`` records go to ``meta.turn_contexts``; other ``event_msg`` payloads (UI events:
  ``exec_command_end``, ``agent_message``, ...) are counted in ``meta.unmapped_entries``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ctxbench.formats.document import Document
from ctxbench.formats.importer import Importer, ImportOptions
from ctxbench.formats.importing import SessionLog
from ctxbench.formats.location import At, rest
from ctxbench.trace import Message, Part, RecordedCompaction, ToolCall, Trace, Usage

NAME = "codex"
LINE_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
TEXT_PARTS = ("input_text", "output_text", "text")
CALL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
ROLES = {"developer": "system", "system": "system", "user": "user", "assistant": "assistant"}


def detect(doc: Document) -> bool:
    head = doc.head
    return (
        doc.layout == "jsonl"
        and isinstance(head, dict)
        and head.get("type") in LINE_TYPES
        and isinstance(head.get("payload"), dict)
    )


def _parts(value: Any, at: At) -> tuple[str, tuple[Part, ...] | None]:
    if isinstance(value, str):
        return value, None
    parts = []
    for i, item in enumerate(at.arr(value)):
        p_at = at.index(i)
        data = p_at.obj(item)
        kind = p_at.key("type").text(p_at.need(data, "type"))
        if kind in TEXT_PARTS:
            parts.append(Part("text", p_at.key("text").text(p_at.need(data, "text"))))
        else:
            parts.append(Part(kind, "", rest(data, ("type",))))
    text = "\n".join(p.text for p in parts if p.is_text)
    return text, (tuple(parts) if len(parts) != 1 or not parts[0].is_text else None)


def _output_text(value: Any, at: At) -> str:
    """A tool output: a string, ``{output, metadata}`` or a list of content items."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("output"), str):
        return str(value["output"])
    text, _ = _parts(value, at)
    return text


class _Rollout(SessionLog):
    def __init__(self, file: str) -> None:
        super().__init__(file)
        self.pending: list[tuple[dict[str, Any], At]] = []
        self.last_total: int | None = None
        self.meta: dict[str, Any] = {}
        self.turns: list[dict[str, Any]] = []

    def close(self, usage: Usage | None = None) -> None:
        """The pending output items as one assistant message (one model response)."""
        if not self.pending:
            return
        texts: list[str] = []
        calls: list[ToolCall] = []
        reasoning: list[dict[str, Any]] = []
        searches: list[dict[str, Any]] = []
        for item, at in self.pending:
            kind = item["type"]
            if kind == "reasoning":
                reasoning.append(item)
            elif kind == "message":
                texts.append(_parts(at.need(item, "content"), at.key("content"))[0])
            elif kind == "web_search_call":
                searches.append(item)
            else:
                calls.append(self.call(item, at))
        meta: dict[str, Any] = {"web_search_calls": searches} if searches else {}
        replay = {"codex_reasoning_items": reasoning} if reasoning else {}
        self.messages.append(
            Message(
                "assistant",
                "\n".join(t for t in texts if t),
                tool_calls=tuple(calls),
                usage=usage,
                replay=replay,
                meta=meta,
            )
        )
        self.calls += 1
        self.pending = []

    @staticmethod
    def call(item: dict[str, Any], at: At) -> ToolCall:
        kind = item["type"]
        call_id = at.key("call_id").ident(at.need(item, "call_id"))
        if kind == "custom_tool_call":
            name = at.key("name").text(at.need(item, "name"))
            arguments = at.key("input").text(at.need(item, "input"))
            meta = {"kind": kind, **rest(item, ("type", "call_id", "name", "input"))}
        elif kind == "local_shell_call":
            name, arguments = "local_shell", at.arguments(item.get("action"))
            meta = {"kind": kind, **rest(item, ("type", "call_id", "action"))}
        else:
            name = at.key("name").text(at.need(item, "name"))
            arguments = at.key("arguments").arguments(item.get("arguments"))
            meta = rest(item, ("type", "call_id", "name", "arguments"))
        return ToolCall(call_id, name, arguments, meta)

    def item(self, item: dict[str, Any], at: At) -> None:
        kind = at.key("type").text(at.need(item, "type"))
        role = item.get("role")
        if kind in ("reasoning", "web_search_call", *CALL_ITEMS) or (
            kind == "message" and role == "assistant"
        ):
            self.pending.append((item, at))
            return
        self.close()
        if kind == "message":
            role = at.key("role").text(at.need(item, "role"))
            if role not in ROLES:
                raise at.key("role").error(
                    f"unknown message role {role!r}",
                    hint="Codex messages are developer, user or assistant",
                )
            text, parts = _parts(at.need(item, "content"), at.key("content"))
            meta = rest(item, ("type", "role", "content"))
            if role == "developer":
                meta["role"] = role
            self.messages.append(Message(ROLES[role], text, parts, meta=meta))
        elif kind in OUTPUT_ITEMS:
            call_id = at.key("call_id").ident(at.need(item, "call_id"))
            text = _output_text(at.need(item, "output"), at.key("output"))
            meta = rest(item, ("type", "call_id", "output"))
            if not isinstance(item["output"], str):
                meta["output"] = item["output"]
            self.messages.append(Message("tool", text, tool_call_id=call_id, meta=meta))
        else:
            self.unmapped[f"response_item.{kind}"] += 1

    def token_count(self, payload: dict[str, Any], at: At) -> None:
        info = payload.get("info")
        if info is None:
            self.unmapped["event_msg.token_count"] += 1
            return
        i_at = at.key("info")
        info = i_at.obj(info)
        window = i_at.key("model_context_window").opt_int(info.get("model_context_window"))
        if window is not None:
            self.meta.setdefault("model_context_window", window)
        last = info.get("last_token_usage")
        if last is None or not self.pending:
            self.unmapped["event_msg.token_count"] += 1
            return
        u_at = i_at.key("last_token_usage")
        data = u_at.obj(last)
        usage = Usage(
            prompt_tokens=u_at.key("input_tokens").opt_int(data.get("input_tokens")),
            completion_tokens=u_at.key("output_tokens").opt_int(data.get("output_tokens")),
            cached_tokens=u_at.key("cached_input_tokens").opt_int(data.get("cached_input_tokens")),
            meta=rest(data, ("input_tokens", "output_tokens", "cached_input_tokens")),
        )
        self.last_total = u_at.key("total_tokens").opt_int(data.get("total_tokens"))
        self.close(usage)

    def compacted(self, payload: dict[str, Any], line: int | None, at: At) -> None:
        self.close()
        summary = at.key("message").opt_text(payload.get("message")) or ""
        self.compactions.append(
            RecordedCompaction(
                call=self.calls,
                message=len(self.messages),
                trigger="auto",
                pre_tokens=self.last_total,
                summary=summary,
                source=f"{self.file}:{line}" if line is not None else self.file,
                meta=rest(payload, ("message",)),
            )
        )

    def add(self, record: dict[str, Any], line: int | None, at: At) -> None:
        kind = at.key("type").text(at.need(record, "type"))
        p_at = at.key("payload")
        payload = p_at.obj(at.need(record, "payload"))
        if kind == "response_item":
            self.item(payload, p_at)
        elif kind == "event_msg":
            event = p_at.key("type").text(p_at.need(payload, "type"))
            if event == "token_count":
                self.token_count(payload, p_at)
            else:
                self.unmapped[f"event_msg.{event}"] += 1
        elif kind == "session_meta":
            instructions = payload.get("base_instructions")
            text = instructions.get("text") if isinstance(instructions, dict) else instructions
            if isinstance(text, str) and text:
                self.messages.append(Message("system", text, meta={"from": "base_instructions"}))
            self.meta.update(rest(payload, ("base_instructions",)))
        elif kind == "turn_context":
            self.turns.append(payload)
        elif kind == "compacted":
            self.compacted(payload, line, p_at)
        else:
            self.unmapped[kind] += 1


def read(doc: Document, options: ImportOptions) -> Iterator[Trace]:
    rollout = _Rollout(doc.path.name)
    rollout.read(doc, NAME)
    meta = dict(rollout.meta)
    models = [t["model"] for t in rollout.turns if isinstance(t.get("model"), str)]
    if models:
        meta["model"] = models[0]
    if rollout.turns:
        meta["turn_contexts"] = rollout.turns
    meta["continues_after_failure"] = True  # an interactive session: the user types again
    trace_id = meta.get("id")
    yield rollout.trace(
        str(trace_id) if isinstance(trace_id, str) and trace_id else doc.path.name.split(".")[0],
        meta,
    )


IMPORTER = Importer(
    name=NAME,
    expects="Codex CLI rollout JSON Lines ({timestamp, type: session_meta|response_item|event_msg, payload})",
    detect=detect,
    read=read,
)
