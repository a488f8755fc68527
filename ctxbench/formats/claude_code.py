"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``), and their
subagent files (``<session>/subagents/agent-<id>.jsonl``).

Claude Code 2.x writes one JSON entry per line. What becomes what:

- ``assistant`` entries: one entry per content block, so the entries of one API call share
  ``message.id`` (and ``requestId``) and repeat its usage. They become **one** assistant
  message per ``message.id``: text blocks are the content, ``tool_use`` blocks the tool calls
  (arguments as ``JSON.stringify`` writes them), ``thinking`` / ``redacted_thinking`` blocks the
  ``thinking_blocks`` replay field (sent back to the model, so counted). Usage comes from the
  call's last entry (streaming writes the final ``output_tokens`` last); the prompt is
  ``input + cache read + cache creation`` tokens, with the cache split kept.
- ``user`` entries: ``tool_result`` blocks become tool messages (results that arrive while the
  call's later blocks are still being written are placed after the whole call, as the next
  request sends them); other content is a user message.
- ``system`` / ``compact_boundary`` with ``compactMetadata {trigger, preTokens}`` and the
  ``isCompactSummary`` user entry after it become a :class:`~ctxbench.trace.RecordedCompaction`.
  The summary is not a message: the trace keeps the uncompacted history, so a replay decides
  for itself where to compact and can be checked against the record.
- ``progress``, ``file-history-snapshot``, ``queue-operation``, other ``system`` subtypes and
  entry types this importer does not know are not model input; they are counted by type in the
  trace's ``meta.unmapped_entries`` (and in the import report).

The file holds neither the system prompt nor the tool schemas (about 26k tokens for Claude
Code 2.1; the first call's usage reveals them). Subagent files are imported as their own traces
(``meta.parent_session``); a session lists its subagent files in ``meta.subagents``, each with
the Task tool call that started it (from ``agent_progress`` entries) or, for the
``agent-acompact-*`` files, the recorded compaction whose summary it wrote. Claude
Code's format is undocumented; the shapes above are those of Claude Code 2.1.39 files.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ctxbench.formats import openai_chat
from ctxbench.formats.document import Document
from ctxbench.formats.importer import Importer, ImportOptions
from ctxbench.formats.importing import SessionLog
from ctxbench.formats.location import At, rest
from ctxbench.trace import Message, Part, RecordedCompaction, ToolCall, Trace, Usage

NAME = "claude_code"
MESSAGE_TYPES = ("user", "assistant")
#: Entry types Claude Code 2.x writes that are not model input.
OTHER_TYPES = ("progress", "file-history-snapshot", "queue-operation", "summary", "system")
#: Keys that are constant over a session; kept once in the trace's meta.
SESSION_KEYS = ("sessionId", "version", "cwd", "gitBranch", "userType", "slug", "isSidechain")
ENTRY_MAPPED = ("type", "message", "requestId", *SESSION_KEYS)
THINKING_TYPES = ("thinking", "redacted_thinking")


def _is_entry(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return False
    kind = value["type"]
    if kind == "file-history-snapshot":
        return "snapshot" in value
    if kind == "summary":
        return "leafUuid" in value
    return kind in (*MESSAGE_TYPES, *OTHER_TYPES) and isinstance(value.get("sessionId"), str)


def detect(doc: Document) -> bool:
    return doc.layout == "jsonl" and _is_entry(doc.head)


def stringify(value: Any) -> str:
    """``JSON.stringify`` of a tool input: compact separators, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _text(value: Any, at: At) -> tuple[str, tuple[Part, ...] | None]:
    """Text of string or block-list content; non-text blocks are kept as parts."""
    if isinstance(value, str):
        return value, None
    parts: list[Part] = []
    for i, block in enumerate(at.arr(value)):
        b_at = at.index(i)
        data = b_at.obj(block)
        kind = b_at.key("type").text(b_at.need(data, "type"))
        if kind == "text":
            parts.append(Part("text", b_at.key("text").text(b_at.need(data, "text"))))
        else:
            parts.append(Part(kind, "", rest(data, ("type",))))
    return "\n".join(p.text for p in parts if p.is_text), tuple(parts)


def _message(role: str, value: Any, at: At, **kwargs: Any) -> Message:
    text, parts = _text(value, at)
    if parts is not None and all(p.is_text for p in parts) and len(parts) <= 1:
        parts = None
    return Message(role, text, parts, **kwargs)


@dataclass
class _Call:
    """The entries of one API call, while they are being read."""

    id: str
    line: int | None
    model: str | None
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    thinking: list[dict[str, Any]] = field(default_factory=list)
    usage: Any = None
    usage_at: At | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    #: user entries that arrived while the call was being written (sent after it)
    deferred: list[Message] = field(default_factory=list)

    def add(self, message: dict[str, Any], at: At) -> None:
        content = message.get("content")
        blocks = at.key("content").arr(content) if not isinstance(content, str) else [content]
        for i, block in enumerate(blocks):
            b_at = at.key("content").index(i)
            if isinstance(block, str):
                self.texts.append(block)
                continue
            data = b_at.obj(block)
            kind = b_at.key("type").text(b_at.need(data, "type"))
            if kind == "text":
                self.texts.append(b_at.key("text").text(b_at.need(data, "text")))
            elif kind in THINKING_TYPES:
                self.thinking.append(data)
            elif kind in ("tool_use", "server_tool_use"):
                self.calls.append(
                    ToolCall(
                        id=b_at.key("id").ident(b_at.need(data, "id")),
                        name=b_at.key("name").text(b_at.need(data, "name")),
                        arguments=stringify(data.get("input", {})),
                        meta=rest(data, ("type", "id", "name", "input")),
                    )
                )
            else:
                self.texts.append("")
                self.meta.setdefault("other_blocks", []).append(data)
        if message.get("usage") is not None:
            self.usage, self.usage_at = message["usage"], at.key("usage")
        if message.get("stop_reason") is not None:
            self.meta["stop_reason"] = message["stop_reason"]

    def message(self) -> Message:
        usage: Usage | None = None
        if self.usage is not None and self.usage_at is not None:
            usage = openai_chat.usage(self.usage, self.usage_at)
            if usage is not None and self.model is not None:  # sessions mix Opus and Haiku
                usage = replace(usage, model=self.model)
        texts = [t for t in self.texts if t]
        if len(texts) > 1:
            msg = Message.from_parts("assistant", (Part("text", t) for t in texts))
        else:
            msg = Message("assistant", texts[0] if texts else "")
        meta = {"message_id": self.id, "line": self.line, **self.meta}
        if self.model is not None:
            meta["model"] = self.model
        replay = {"thinking_blocks": self.thinking} if self.thinking else {}
        return Message(
            "assistant",
            msg.content,
            msg.parts,
            tuple(self.calls),
            usage=usage,
            replay=replay,
            meta=meta,
        )


class _Session(SessionLog):
    """Messages built from the entries of one file, in order."""

    def __init__(self, file: str) -> None:
        super().__init__(file)
        self.open: _Call | None = None
        self.closed: dict[str, int | None] = {}  # message id -> its first line
        self.awaiting_summary = False
        self.session: dict[str, Any] = {}
        #: subagent id -> the Task tool call that started it (from agent_progress entries)
        self.agents: dict[str, str] = {}

    def close(self) -> None:
        if self.open is None:
            return
        call, self.open = self.open, None
        self.closed[call.id] = call.line
        self.messages.append(call.message())
        self.calls += 1
        results = [m for m in call.deferred if m.role == "tool"]
        self.messages += results + [m for m in call.deferred if m.role != "tool"]

    def entry_meta(self, entry: dict[str, Any], line: int | None) -> dict[str, Any]:
        meta = rest(entry, ENTRY_MAPPED)
        for key in SESSION_KEYS:
            if key in entry:
                value = self.session.setdefault(key, entry[key])
                if value != entry[key]:
                    meta[key] = entry[key]
        meta["line"] = line
        return meta

    def add(self, entry: dict[str, Any], line: int | None, at: At) -> None:
        kind = at.key("type").text(at.need(entry, "type"))
        if kind == "assistant":
            self.assistant(entry, line, at)
        elif kind == "user":
            self.user(entry, line, at)
        elif kind == "system" and entry.get("subtype") == "compact_boundary":
            self.boundary(entry, line, at)
        else:
            subtype = entry.get("subtype")
            self.unmapped[f"{kind}.{subtype}" if isinstance(subtype, str) else kind] += 1
            data = entry.get("data")
            if (
                kind == "progress"
                and isinstance(data, dict)
                and data.get("type") == "agent_progress"
            ):
                agent, call = data.get("agentId"), entry.get("parentToolUseID")
                if isinstance(agent, str) and isinstance(call, str):
                    self.agents.setdefault(agent, call)

    def assistant(self, entry: dict[str, Any], line: int | None, at: At) -> None:
        m_at = at.key("message")
        message = m_at.obj(at.need(entry, "message"))
        message_id = m_at.key("id").ident(m_at.need(message, "id"))
        if self.open is None or self.open.id != message_id:
            if message_id in self.closed:
                first = self.closed[message_id]
                raise m_at.key("id").error(
                    f"message id {message_id!r} (first written on line {first}) appears again"
                    " after another call",
                    hint="Claude Code writes the entries of one API call together;"
                    " was this file spliced from two sessions?",
                )
            self.close()
            model = m_at.key("model").opt_text(message.get("model"))
            self.open = _Call(message_id, line, model)
            request = entry.get("requestId")
            if request is not None:
                self.open.meta["request_id"] = at.key("requestId").ident(request)
            self.open.meta.update(self.entry_meta(entry, line))
            del self.open.meta["line"]
        self.open.add(message, m_at)

    def user(self, entry: dict[str, Any], line: int | None, at: At) -> None:
        m_at = at.key("message")
        message = m_at.obj(at.need(entry, "message"))
        content = m_at.need(message, "content")
        meta = self.entry_meta(entry, line)
        if entry.get("isCompactSummary") is True:
            self.summary(content, meta, m_at.key("content"))
            return
        out: list[Message] = []
        others: list[Any] = []
        c_at = m_at.key("content")
        blocks = content if isinstance(content, list) else [content]
        for i, block in enumerate(blocks):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                b_at = c_at.index(i)
                text, parts = _text(block.get("content") or "", b_at.key("content"))
                if parts is not None and all(p.is_text for p in parts):
                    parts = None
                call_id = b_at.key("tool_use_id").ident(b_at.need(block, "tool_use_id"))
                out.append(
                    Message(
                        "tool",
                        text,
                        parts,
                        tool_call_id=call_id,
                        meta=rest(block, ("type", "tool_use_id", "content")),
                    )
                )
            else:
                others.append(block)
        if others:
            value = others[0] if isinstance(content, str) else others
            out.append(_message("user", value, c_at))
        if out:
            out[0] = replace(out[0], meta={**meta, **out[0].meta})
        if self.open is not None and any(m.role == "tool" for m in out):
            self.open.deferred += out
            return
        self.close()
        self.messages += out

    def boundary(self, entry: dict[str, Any], line: int | None, at: At) -> None:
        self.close()
        data = entry.get("compactMetadata")
        meta_at = at.key("compactMetadata")
        data = meta_at.obj(data) if data is not None else {}
        trigger = meta_at.key("trigger").opt_text(data.get("trigger")) or "auto"
        pre = meta_at.key("preTokens").opt_int(data.get("preTokens"))
        meta = rest(entry, ("type", "subtype", "compactMetadata", *SESSION_KEYS))
        meta.update(rest(data, ("trigger", "preTokens")))
        self.compactions.append(
            RecordedCompaction(
                call=self.calls,
                message=len(self.messages),
                trigger=trigger,
                pre_tokens=pre,
                source=f"{self.file}:{line}" if line is not None else self.file,
                meta=meta,
            )
        )
        self.awaiting_summary = True

    def summary(self, content: Any, meta: dict[str, Any], at: At) -> None:
        text, _ = _text(content, at)
        if not self.compactions or not self.awaiting_summary:
            raise at.error(
                "a compact summary (isCompactSummary) without a compact_boundary entry before it",
                hint="Claude Code writes the boundary, then the summary; is the file truncated"
                " at its start?",
            )
        self.close()
        last = self.compactions[-1]
        self.compactions[-1] = RecordedCompaction(
            last.call,
            last.message,
            last.trigger,
            last.pre_tokens,
            text,
            last.source,
            {**last.meta, "summary_entry": meta},
        )
        self.awaiting_summary = False


COMPACTION_AGENT = "agent-acompact-"


def subagent_files(path: Path) -> list[Path]:
    """The subagent files Claude Code wrote beside a session file."""
    folder = path.parent / path.name.split(".")[0] / "subagents"
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def _first_timestamp(path: Path) -> str:
    try:
        with path.open(encoding="utf-8") as fh:
            first = json.loads(fh.readline() or "{}")
    except (OSError, ValueError, RecursionError):
        return ""
    return str(first.get("timestamp", "")) if isinstance(first, dict) else ""


def link_subagents(
    path: Path, session: _Session
) -> tuple[list[dict[str, Any]], list[RecordedCompaction]]:
    """The session's subagent files, each with the Task call that started it (task agents) or
    the recorded compaction it summarised (``agent-acompact-*``, in time order)."""
    files = subagent_files(path)
    summaries = sorted(
        (f for f in files if f.name.startswith(COMPACTION_AGENT)), key=_first_timestamp
    )
    compactions = list(session.compactions)
    out: list[dict[str, Any]] = []
    for file in files:
        relative = f"{path.name.split('.')[0]}/subagents/{file.name}"
        agent = file.stem.removeprefix("agent-")
        if file in summaries:
            entry: dict[str, Any] = {"file": relative, "agent_id": agent, "kind": "compaction"}
            n = summaries.index(file)
            if n < len(compactions):
                entry["compaction"] = n
                compactions[n] = replace(
                    compactions[n], meta={**compactions[n].meta, "summary_call": relative}
                )
        else:
            entry = {"file": relative, "agent_id": agent, "kind": "task"}
            entry["tool_call_id"] = session.agents.get(agent)
        out.append(entry)
    return out, compactions


def read(doc: Document, options: ImportOptions) -> Iterator[Trace]:
    session = _Session(doc.path.name)
    session.read(doc, NAME)
    meta: dict[str, Any] = dict(session.session)
    agent = None
    first = next((m for m in session.messages if "agentId" in m.meta), None)
    if first is not None:
        agent = str(first.meta["agentId"])
        meta["parent_session"] = meta.get("sessionId")
        meta["agent_id"] = agent
    else:
        subagents, session.compactions = link_subagents(doc.path, session)
        if subagents:
            meta["subagents"] = subagents
            meta["subagents_note"] = "subagent files are imported as their own traces"
    models = Counter(str(m.meta["model"]) for m in session.messages if "model" in m.meta)
    if models:
        meta["model"] = models.most_common(1)[0][0]
        if len(models) > 1:
            meta["models"] = dict(models)
    meta["hidden_prefix"] = (
        "the file holds no system prompt and no tool schemas; the first call's usage counts them"
    )
    if agent is None:  # an interactive session: after a failed call the user types again
        meta["continues_after_failure"] = True
    stem = doc.path.name.split(".")[0]
    session_id = meta.get("sessionId")
    trace_id = str(session_id) if isinstance(session_id, str) and session_id else stem
    if agent is not None:
        trace_id = f"{trace_id}/{agent}"
    yield session.trace(trace_id, meta)


IMPORTER = Importer(
    name=NAME,
    expects="Claude Code session JSON Lines (entries {type: user|assistant|progress|system, sessionId, message, ...})",
    detect=detect,
    read=read,
)
