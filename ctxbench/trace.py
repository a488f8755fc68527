"""The canonical trace model: immutable messages, tool calls, usage and recorded compactions.

Every importer, generator and strategy speaks this model. Messages follow OpenAI chat
conventions (system, user, assistant with ``tool_calls``, tool with ``tool_call_id``).
Unknown keys of a recorded trace are kept under ``meta`` so a round trip loses nothing.
:mod:`ctxbench.pairing` segments messages into rounds; :mod:`ctxbench.validation` checks them.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from ctxbench.jsontext import require_object, with_meta
from ctxbench.memo import ContentMemo
from ctxbench.probes.model import Probe

SCHEMA = "ctxbench.trace/1"
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")

#: Provider replay fields: sent back to the model on later calls, so counters count them.
REPLAY_KEYS: tuple[str, ...] = (
    "reasoning_content",
    "reasoning",
    "reasoning_details",
    "thinking_blocks",
    "codex_reasoning_items",
    "codex_message_items",
)

_MESSAGE_KEYS = (
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "usage",
    "meta",
    *REPLAY_KEYS,
)
_CALL_KEYS = ("id", "name", "arguments", "meta")
_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "cached_tokens", "model", "meta")
_TOOL_KEYS = ("name", "description", "parameters", "meta")
_TRACE_KEYS = ("schema", "id", "meta", "tools", "messages", "probes", "recorded_compactions")
_COMPACTION_KEYS = ("call", "message", "trigger", "pre_tokens", "summary", "source", "meta")

OBSERVATION_PREFIX = "Observation:"


#: fingerprints of text-only messages by (role, text, tool call id, name), for the process
_TEXT_FINGERPRINTS: ContentMemo[tuple[str, str, str | None, str | None], str] = ContentMemo(
    limit=16 * 2**20
)


def _split_known(data: Mapping[str, Any], known: Sequence[str]) -> dict[str, Any]:
    """Unknown keys of ``data`` merged into its ``meta`` (explicit meta keys win)."""
    extra = {k: v for k, v in data.items() if k not in known}
    meta = dict(data.get("meta") or {})
    for key, value in extra.items():
        meta.setdefault(key, value)
    return meta


@dataclass(frozen=True)
class Part:
    """One content part of a list-content message (``text``, ``image_url``, ``input_audio``...)."""

    type: str
    text: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_text(self) -> bool:
        return self.type == "text"

    @property
    def url(self) -> str:
        """The part's URL (``image_url.url`` or ``url``), or "" when it has none."""
        value = self.data.get("image_url", self.data.get("url", ""))
        if isinstance(value, Mapping):
            value = value.get("url", "")
        return value if isinstance(value, str) else ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.is_text:
            out["text"] = self.text
        out.update(self.data)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Part:
        kind = str(data.get("type", "text"))
        rest = {k: v for k, v in data.items() if k not in ("type", "text")}
        if kind == "text":
            return cls(kind, str(data.get("text") or ""), rest)
        if "text" in data:
            rest["text"] = data["text"]
        return cls(kind, "", rest)


@dataclass(frozen=True)
class ToolCall:
    """A function call made by an assistant message. ``arguments`` is the JSON text as sent."""

    id: str
    name: str
    arguments: str = "{}"
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return with_meta({"id": self.id, "name": self.name, "arguments": self.arguments}, self.meta)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        data = require_object(data, "a tool call")
        args = data.get("arguments", "{}")
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        return cls(
            id=str(data["id"]),
            name=str(data["name"]),
            arguments=args,
            meta=_split_known(data, _CALL_KEYS),
        )


@dataclass(frozen=True)
class Usage:
    """Provider-reported token usage of one model call (kept from recorded traces).

    ``model`` is the model that served this call, where a session mixes models (Claude Code
    sends some calls to Haiku inside an Opus session): optional, written only when known, so
    traces without it read and hash as before; ``meta.model`` of the trace is the session's."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
        }
        if self.model is not None:
            out["model"] = self.model
        return with_meta(out, self.meta)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        def _int(key: str) -> int | None:
            value = data.get(key)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"usage.{key} must be an integer or null, not {value!r}")
            return value

        model = data.get("model")
        if model is not None and not isinstance(model, str):
            raise ValueError(f"usage.model must be text or null, not {model!r}")
        return cls(
            prompt_tokens=_int("prompt_tokens"),
            completion_tokens=_int("completion_tokens"),
            cached_tokens=_int("cached_tokens"),
            meta=_split_known(data, _USAGE_KEYS),
            model=model,
        )


@dataclass(frozen=True)
class Message:
    """One chat message. Immutable: strategies build new messages, never edit old ones.

    ``content`` is always the message text. ``parts`` is ``None`` when the recorded content was
    a plain string, else the full ordered list of parts (text parts included; ``content`` is
    then their text joined by newlines). ``replay`` holds provider replay fields such as
    ``reasoning_content``, which are sent back to the model and therefore counted.
    """

    role: str
    content: str = ""
    parts: tuple[Part, ...] | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    usage: Usage | None = None
    replay: Mapping[str, Any] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_parts(cls, role: str, parts: Iterable[Part], **kwargs: Any) -> Message:
        parts = tuple(parts)
        text = "\n".join(p.text for p in parts if p.is_text)
        return cls(role=role, content=text, parts=parts, **kwargs)

    @property
    def media_parts(self) -> tuple[Part, ...]:
        """Non-text parts (images, audio, files)."""
        return tuple(p for p in self.parts or () if not p.is_text)

    @property
    def is_observation(self) -> bool:
        """A DB-GPT text-ReAct observation: a user message starting with ``Observation:``."""
        return self.role == "user" and self.content.lstrip().startswith(OBSERVATION_PREFIX)

    def with_text(self, text: str) -> Message:
        """A copy with new text; media parts are kept after the text."""
        if self.parts is None:
            return replace(self, content=text)
        media = self.media_parts
        if not media:
            return replace(self, content=text, parts=None)
        return replace(self, content=text, parts=(Part("text", text), *media))

    @cached_property
    def fingerprint(self) -> str:
        """A content hash of everything a token counter sees; the key of count caches.

        A message of text alone (no parts, tool calls or replay fields) takes it from the
        process's :data:`_TEXT_FINGERPRINTS` when a message with the same text had it: a
        sweep's replays build the same messages again (DB-GPT 0.8.2's system prompt with its
        task progress, a cut observation), and hashing their text is a quarter of a replay."""
        if self.parts is not None or self.tool_calls or self.replay:
            return self._digest()
        key = (self.role, self.content, self.tool_call_id, self.name)
        return _TEXT_FINGERPRINTS.get(key, self._digest, sys.getsizeof(self.content))

    def _digest(self) -> str:
        payload = json.dumps(
            [
                self.role,
                self.content,
                [p.to_dict() for p in self.parts] if self.parts is not None else None,
                [[c.id, c.name, c.arguments] for c in self.tool_calls],
                self.tool_call_id,
                self.name,
                dict(self.replay),
            ],
            ensure_ascii=False,
            sort_keys=True,
            default=str,
        )
        return hashlib.blake2b(payload.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role}
        out["content"] = (
            [p.to_dict() for p in self.parts] if self.parts is not None else self.content
        )
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        if self.usage is not None:
            out["usage"] = self.usage.to_dict()
        for key in REPLAY_KEYS:
            if key in self.replay:
                out[key] = self.replay[key]
        return with_meta(out, self.meta)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """Build from a canonical dict. Raises KeyError/TypeError/ValueError on bad shapes."""
        data = require_object(data, "a message")
        role = data["role"]
        if not isinstance(role, str):
            raise TypeError(f"message 'role' must be a string, not {role!r}")
        raw = data.get("content")
        parts: tuple[Part, ...] | None = None
        if raw is None:
            content = ""
        elif isinstance(raw, str):
            content = raw
        elif isinstance(raw, list):
            parts = tuple(
                Part.from_dict(p if isinstance(p, Mapping) else {"type": "text", "text": str(p)})
                for p in raw
            )
            content = "\n".join(p.text for p in parts if p.is_text)
        else:
            raise TypeError(
                f"message 'content' must be a string, a list of parts or null, not {type(raw).__name__}"
            )
        calls_raw = data.get("tool_calls") or []
        if not isinstance(calls_raw, list):
            raise TypeError("message 'tool_calls' must be a list")
        usage_raw = data.get("usage")
        if usage_raw is not None and not isinstance(usage_raw, Mapping):
            raise TypeError("message 'usage' must be an object or null")
        tool_call_id = data.get("tool_call_id")
        name = data.get("name")
        return cls(
            role=role,
            content=content,
            parts=parts,
            tool_calls=tuple(ToolCall.from_dict(c) for c in calls_raw),
            tool_call_id=str(tool_call_id) if tool_call_id is not None else None,
            name=str(name) if name is not None else None,
            usage=Usage.from_dict(usage_raw) if usage_raw is not None else None,
            replay={k: data[k] for k in REPLAY_KEYS if data.get(k) is not None},
            meta=_split_known(data, _MESSAGE_KEYS),
        )


class GrowingFingerprints:
    """Fingerprints of text-only messages like ``like`` (its role, tool call id and name) whose
    texts are a beginning that only grows and then an ending (DB-GPT 0.8.2's system prompt: its
    task progress gains a line at every step, its closing lines stay): the beginning is hashed
    as it grows, so a message's :attr:`Message.fingerprint` (the same value) costs its ending,
    not its whole text again."""

    def __init__(self, like: Message) -> None:
        self._like = (like.role, like.tool_call_id, like.name)
        #: the digest's payload (:meth:`Message._digest`) around the text, JSON-escaped
        rest = json.dumps([None, [], like.tool_call_id, like.name, {}], ensure_ascii=False)
        before = "[" + json.dumps(like.role, ensure_ascii=False) + ', "'
        self._hash = hashlib.blake2b(_utf8(before), digest_size=16)
        self._after = _utf8('", ' + rest[1:])
        #: the characters of the beginning hashed so far
        self.length = 0

    def grow(self, more: str) -> None:
        """The beginning gains ``more``."""
        self._hash.update(_utf8(json.dumps(more, ensure_ascii=False)[1:-1]))
        self.length += len(more)

    def give(self, message: Message, ending: str) -> Message:
        """``message``, whose text is the beginning and then ``ending``, with its fingerprint
        worked out from the beginning's hash (a message unlike ``like`` or of another length
        is left to work out its own)."""
        if (
            message.parts is not None
            or message.tool_calls
            or message.replay
            or (message.role, message.tool_call_id, message.name) != self._like
            or len(message.content) != self.length + len(ending)
            or not message.content.endswith(ending)
        ):
            return message
        digest = self._hash.copy()
        digest.update(_utf8(json.dumps(ending, ensure_ascii=False)[1:-1]) + self._after)
        message.__dict__["fingerprint"] = digest.hexdigest()  # the cached property's value
        return message


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class ToolSpec:
    """A tool the agent was given (name, description, JSON-Schema parameters)."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return with_meta(
            {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
            self.meta,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolSpec:
        data = require_object(data, "a tool")
        params = data.get("parameters") or {}
        if not isinstance(params, Mapping):
            raise TypeError("tool 'parameters' must be an object")
        return cls(
            name=str(data["name"]),
            description=str(data.get("description") or ""),
            parameters=dict(params),
            meta=_split_known(data, _TOOL_KEYS),
        )


@dataclass(frozen=True)
class RecordedCompaction:
    """A compaction the recorded agent made itself: ground truth for a reproduction.

    ``call`` is the model call it happened before (the number of recorded calls before it);
    ``message`` is the trace index of the first message after it (the messages before it are
    the uncompacted history, which the trace keeps, so a replay sees what the agent compacted).
    ``pre_tokens`` is the count the agent recorded as triggering it; ``summary`` the text that
    replaced the history; ``source`` where in the recorded file it was found.
    """

    call: int
    message: int
    trigger: str = "auto"
    pre_tokens: int | None = None
    summary: str = ""
    source: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return with_meta(
            {
                "call": self.call,
                "message": self.message,
                "trigger": self.trigger,
                "pre_tokens": self.pre_tokens,
                "summary": self.summary,
                "source": self.source,
            },
            self.meta,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordedCompaction:
        data = require_object(data, "a recorded compaction")
        for key in ("call", "message"):
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"recorded compaction {key!r} must be an integer >= 0, not {value!r}"
                )
        pre = data.get("pre_tokens")
        if pre is not None and (isinstance(pre, bool) or not isinstance(pre, int)):
            raise ValueError(
                f"recorded compaction 'pre_tokens' must be an integer or null, not {pre!r}"
            )
        return cls(
            call=data["call"],
            message=data["message"],
            trigger=str(data.get("trigger") or "auto"),
            pre_tokens=pre,
            summary=str(data.get("summary") or ""),
            source=str(data.get("source") or ""),
            meta=_split_known(data, _COMPACTION_KEYS),
        )


@dataclass(frozen=True)
class Trace:
    """A recorded or synthetic agent run: messages, the tools offered, probes and metadata."""

    id: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    probes: tuple[Probe, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    #: compactions the recorded agent made (optional; absent from traces that hold none)
    recorded_compactions: tuple[RecordedCompaction, ...] = ()

    @cached_property
    def call_indices(self) -> tuple[int, ...]:
        """Message indices of the model calls (every assistant message, in order): worked out
        once (a replay reads it at every call)."""
        return tuple(i for i, m in enumerate(self.messages) if m.role == "assistant")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": SCHEMA,
            "id": self.id,
            "meta": dict(self.meta),
            "tools": [t.to_dict() for t in self.tools],
            "messages": [m.to_dict() for m in self.messages],
            "probes": [p.to_dict() for p in self.probes],
        }
        if self.recorded_compactions:  # written only when present: older traces hash as before
            out["recorded_compactions"] = [c.to_dict() for c in self.recorded_compactions]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trace:
        """Build from a canonical dict. Raises KeyError/TypeError/ValueError on bad shapes;
        :mod:`ctxbench.formats.canonical` turns those into errors naming file, line and path."""
        if not isinstance(data, Mapping):
            raise TypeError(f"a trace must be a JSON object, not {type(data).__name__}")
        messages = data["messages"]
        if not isinstance(messages, list):
            raise TypeError("trace 'messages' must be a list")
        tools = data.get("tools") or []
        probes = data.get("probes") or []
        compactions = data.get("recorded_compactions") or []
        if not isinstance(tools, list) or not isinstance(probes, list):
            raise TypeError("trace 'tools' and 'probes' must be lists")
        if not isinstance(compactions, list):
            raise TypeError("trace 'recorded_compactions' must be a list")
        return cls(
            id=str(data["id"]),
            messages=tuple(Message.from_dict(m) for m in messages),
            tools=tuple(ToolSpec.from_dict(t) for t in tools),
            probes=tuple(Probe.from_dict(p) for p in probes),
            meta=_split_known(data, _TRACE_KEYS),
            recorded_compactions=tuple(RecordedCompaction.from_dict(c) for c in compactions),
        )

    @property
    def continues_after_failure(self) -> bool:
        """Whether the recorded agent went on with a new user task after a failed call
        (``meta.continues_after_failure``, set by importers of interactive sessions: Claude
        Code, Codex). Otherwise a failed call ends the trace's one task."""
        return self.meta.get("continues_after_failure") is True

    @cached_property
    def content_hash(self) -> str:
        """sha256 of the canonical JSON: the trace's identity in run ids."""
        text = json.dumps(
            self.to_dict(), ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str
        )
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def message_search_text(message: Message) -> str:
    """All text a reader of the message sees: content, tool-call names and arguments."""
    pieces = [message.content]
    for call in message.tool_calls:
        pieces.append(call.name)
        pieces.append(call.arguments)
    return "\n".join(pieces)


def recorded_prompt(trace: Trace, index: int) -> tuple[Message, ...]:
    """The history the recorded agent sent with the call at message ``index``: after its last
    recorded compaction before it, the summary (as the user message that replaced the history)
    and the messages since; without one, every message before ``index``. Counting this, not the
    uncompacted history a replay keeps, is what the call's recorded usage measured."""
    last = None
    for compaction in trace.recorded_compactions:
        if compaction.message <= index:
            last = compaction
    if last is None:
        return trace.messages[:index]
    system = tuple(m for m in trace.messages[: last.message] if m.role == "system")
    summary = (Message("user", last.summary),) if last.summary else ()
    return (*system, *summary, *trace.messages[last.message : index])
