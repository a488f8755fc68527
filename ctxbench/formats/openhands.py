"""OpenHands (software-agent-sdk) event streams, as evaluation outputs write them.

A record is ``{instance_id, instruction, history: [events], metadata, ...}`` (one per JSONL
line), or a bare JSON list of events. Events become chat messages the way the SDK turns them
into LLM messages:

- ``ActionEvent``: an assistant tool call; its ``thought`` is the assistant text. Parallel calls
  of one LLM response share ``llm_response_id`` and become ONE assistant message with several
  ``tool_calls`` (the observations follow it). ``reasoning_content`` / ``thinking_blocks`` are
  replay fields;
- ``ObservationEvent`` / ``AgentErrorEvent`` / ``UserRejectObservation``: the tool result;
- ``MessageEvent``: a user or assistant chat message (``llm_message``);
- ``SystemPromptEvent``: the system message.

Other events (condensation, state updates) do not reach the model as messages; they are kept
in the trace's ``meta.other_events`` with their position. A ``Condensation`` event that carries
its ``summary`` is also a :class:`~ctxbench.trace.RecordedCompaction` (before the next model
call; ``forgotten_event_ids`` and ``summary_offset`` in its meta): the trace keeps the whole
history, and ``--summarizer recorded`` / ``ctxbench summaries`` read the summary. When the stream does not start with
the user's task, the record's ``instruction`` becomes the first user message (marked in meta).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from ctxbench.formats import openai_chat
from ctxbench.formats.document import Document
from ctxbench.formats.importer import Importer, ImportOptions
from ctxbench.formats.location import At, rest
from ctxbench.trace import Message, Part, RecordedCompaction, Trace

NAME = "openhands"
LLM_EVENTS = (
    "ActionEvent",
    "ObservationEvent",
    "MessageEvent",
    "SystemPromptEvent",
    "AgentErrorEvent",
    "UserRejectObservation",
)
ACTION_MAPPED = (
    "kind",
    "thought",
    "reasoning_content",
    "thinking_blocks",
    "tool_call",
    "llm_response_id",
    "tool_name",
    "tool_call_id",
)
BASH_KINDS = ("ExecuteBashObservation", "TerminalObservation")
BASH_ERROR = "[There was an error during command execution.]"


def _is_event(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("kind"), str)
        and (value["kind"].endswith("Event") or value["kind"].endswith("Observation"))
    )


def _is_record(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("history"), list):
        return False
    history = value["history"]
    return not history or _is_event(history[0])


def detect(doc: Document) -> bool:
    head = doc.head
    if isinstance(head, list):
        return bool(head) and _is_event(head[0])
    return _is_record(head)


def observation_text(observation: dict[str, Any], at: At) -> str:
    """The text the SDK shows the model for an observation (terminal output with its
    working-directory and exit-code footer; otherwise its content, output or message)."""
    kind = observation.get("kind")
    content = observation.get("content")
    if isinstance(content, list):
        text, _ = openai_chat.content(content, at.key("content"))
        return text
    output = observation.get("output")
    if kind in BASH_KINDS and isinstance(output, str):
        meta = observation.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        text = f"{meta.get('prefix') or ''}{output}{meta.get('suffix') or ''}"
        if meta.get("working_dir"):
            text += f"\n[Current working directory: {meta['working_dir']}]"
        if meta.get("py_interpreter_path"):
            text += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
        if meta.get("exit_code", -1) != -1:
            text += f"\n[Command finished with exit code {meta['exit_code']}]"
        if observation.get("error") is True:
            text = f"{BASH_ERROR}\n{text}"
        return text
    for key in ("output", "content", "message", "error"):
        value = observation.get(key)
        if isinstance(value, str):
            return value
    return json.dumps(rest(observation, ("kind",)), ensure_ascii=False, sort_keys=True)


def _thought(value: Any, at: At) -> tuple[str, tuple[Part, ...] | None]:
    if value in (None, [], ""):
        return "", None
    return openai_chat.content(value, at)


class _Stream:
    """Messages built from events in order; parallel actions merge into one assistant message."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.response_at: dict[str, int] = {}
        self.other: list[dict[str, Any]] = []
        self.compactions: list[RecordedCompaction] = []

    def action(self, event: dict[str, Any], at: At) -> None:
        call = openai_chat.tool_call(at.need(event, "tool_call"), at.key("tool_call"))
        call = replace(call, meta={**call.meta, "event": rest(event, ACTION_MAPPED)})
        text, parts = _thought(event.get("thought"), at.key("thought"))
        replay = openai_chat.replay_fields(event)
        response_id = event.get("llm_response_id")
        key = at.key("llm_response_id").ident(response_id) if response_id is not None else None
        if key is not None and key in self.response_at:
            i = self.response_at[key]
            prev = self.messages[i]
            if parts:
                merged = (*(prev.parts or ()), *parts)
                prev = Message.from_parts(
                    "assistant",
                    merged,
                    tool_calls=prev.tool_calls,
                    replay=prev.replay,
                    meta=prev.meta,
                )
            self.messages[i] = replace(
                prev, tool_calls=(*prev.tool_calls, call), replay={**replay, **prev.replay}
            )
            return
        meta = {} if key is None else {"llm_response_id": key}
        self.messages.append(Message("assistant", text, parts, (call,), replay=replay, meta=meta))
        if key is not None:
            self.response_at[key] = len(self.messages) - 1

    def result(self, event: dict[str, Any], at: At) -> None:
        kind = event["kind"]
        call_id = at.key("tool_call_id").ident(at.need(event, "tool_call_id"))
        name = at.key("tool_name").opt_text(event.get("tool_name"))
        meta: dict[str, Any] = {"event": rest(event, ("observation", "tool_call_id", "tool_name"))}
        if kind == "ObservationEvent":
            observation = at.key("observation").obj(at.need(event, "observation"))
            text = observation_text(observation, at.key("observation"))
            meta["observation"] = observation
        elif kind == "AgentErrorEvent":
            text = at.key("error").text(at.need(event, "error"))
        else:
            text = "Action rejected: " + (
                at.key("rejection_reason").opt_text(event.get("rejection_reason")) or ""
            )
        self.messages.append(Message("tool", text, tool_call_id=call_id, name=name, meta=meta))

    def add(self, event: dict[str, Any], index: int, at: At) -> None:
        kind = at.key("kind").text(at.need(event, "kind"))
        if kind == "ActionEvent":
            self.action(event, at)
        elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            self.result(event, at)
        elif kind == "MessageEvent":
            msg = openai_chat.message(at.need(event, "llm_message"), at.key("llm_message"))
            self.messages.append(
                replace(msg, meta={**msg.meta, "event": rest(event, ("llm_message",))})
            )
        elif kind == "SystemPromptEvent":
            prompt = at.need(event, "system_prompt")
            text = (
                prompt
                if isinstance(prompt, str)
                else at.key("system_prompt").obj(prompt).get("text")
            )
            meta = {"event": rest(event, ("system_prompt",))}
            self.messages.append(
                Message("system", at.key("system_prompt.text").text(text), meta=meta)
            )
        else:
            self.other.append({"index": index, "event": event})
            summary = event.get("summary")
            if kind == "Condensation" and isinstance(summary, str) and summary:
                self.condensation(event, summary, index)

    def condensation(self, event: dict[str, Any], summary: str, index: int) -> None:
        """A condensation with its summary: a compaction before the next model call."""
        forgotten = event.get("forgotten_event_ids")
        self.compactions.append(
            RecordedCompaction(
                call=sum(1 for m in self.messages if m.role == "assistant"),
                message=len(self.messages),
                trigger="auto",
                summary=summary,
                source=f"history[{index}]",
                meta={
                    "forgotten_events": len(forgotten) if isinstance(forgotten, list) else None,
                    "summary_offset": event.get("summary_offset"),
                },
            )
        )


def record(value: Any, at: At, default_id: str) -> Trace:
    data: dict[str, Any] = {"history": value} if isinstance(value, list) else at.obj(value)
    history_at = at.key("history") if not isinstance(value, list) else at
    stream = _Stream()
    for i, event in enumerate(history_at.arr(at.need(data, "history"))):
        stream.add(history_at.index(i).obj(event), i, history_at.index(i))
    msgs = stream.messages
    inserted: int | None = None  # where the record's instruction went in, if it did
    meta = rest(data, ("history", "instance_id"))
    instruction = data.get("instruction")
    first = next((m for m in msgs if m.role != "system"), None)
    if isinstance(instruction, str) and (first is None or first.role != "user"):
        at_index = 1 if msgs and msgs[0].role == "system" else 0
        msgs.insert(at_index, Message("user", instruction, meta={"from_record": "instruction"}))
        inserted = at_index
    llm = data.get("metadata", {}).get("llm") if isinstance(data.get("metadata"), dict) else None
    if isinstance(llm, dict) and isinstance(llm.get("model"), str):
        meta["model"] = llm["model"]
    if stream.other:
        meta["other_events"] = stream.other
    instance = data.get("instance_id")
    trace_id = at.key("instance_id").ident(instance) if instance is not None else default_id
    compactions = tuple(
        replace(c, message=c.message + 1) if inserted is not None and c.message >= inserted else c
        for c in stream.compactions
    )
    return Trace(trace_id, tuple(msgs), meta=meta, recorded_compactions=compactions)


def read(doc: Document, options: ImportOptions) -> Iterator[Trace]:
    stem = doc.path.name.split(".")[0]
    if doc.layout == "jsonl":
        for n, (line, value) in enumerate(doc.records(), start=1):
            yield record(value, At.start(doc.path, line=line, format=NAME), f"{stem}-{n}")
        return
    yield record(doc.head, At.start(doc.path, format=NAME), stem)


IMPORTER = Importer(
    name=NAME,
    expects="OpenHands output records {instance_id, history: [ActionEvent, ObservationEvent, ...]} or a list of events",
    detect=detect,
    read=read,
)
