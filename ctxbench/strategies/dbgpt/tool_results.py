"""``ToolResults``: what DB-GPT's agent does to a tool result before it joins the memory:
persistence of large results (``storage.py``, ported from hermes), the step's snapshot file
(``Role._write_op_snapshot``, role.py:408-470) and the pointer to it (react_agent.py:335-350),
each successful step a line of the task progress."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import NamedTuple

from ctxbench.engine.caches import current
from ctxbench.engine.context import ReplayContext, json_file, safe_component
from ctxbench.memo import ContentMemo, shared_memo
from ctxbench.strategies.dbgpt.config import DbgptConfig
from ctxbench.strategies.dbgpt.memory import (
    OBSERVATION_PREFIX,
    PERSISTED_OUTPUT_TAG,
    failed,
    generate_preview,
    persisted_block,
    progress_line,
    with_path,
)
from ctxbench.strategies.dbgpt.progress import TaskProgress
from ctxbench.trace import Message

#: Tools never persisted (read_file=inf prevents persist -> read -> persist loops).
PINNED_TOOLS = ("read_file",)
# Line starts match [ \t]*, not \s*: \s* would rescan every following blank line (quadratic).
_ACTION_RE = re.compile(r"^[ \t]*Action:\s*(.+)$", re.M)
_ACTION_INPUT_RE = re.compile(r"^[ \t]*Action Input:\s*(.*)\Z", re.M | re.S)
_THOUGHT_RE = re.compile(r"^[ \t]*Thought:\s*(.*?)(?=^[ \t]*Action:|\Z)", re.M | re.S)


class ToolResults:
    """Persistence and snapshots of a run's tool results, by the run's knobs; each snapshot
    adds its step to ``progress``."""

    def __init__(self, cfg: DbgptConfig, progress: TaskProgress) -> None:
        self.cfg = cfg
        self.rules = cfg.rules
        self.progress = progress

    def handle(
        self, messages: list[Message], ctx: ReplayContext, window: int, reply_start: int
    ) -> list[Message]:
        """The batch of results answering one assistant turn, persisted and snapshotted
        (``window``: the manager's ``max_context``; ``reply_start``: the call that started the
        current reply)."""
        out = [self._persist(m, ctx, window, None) for m in messages]
        per_turn = self._limits(window)[1]
        if (
            self.cfg.persist_tool_results
            and self.rules.persistence_budgets
            and sum(len(m.content) for m in out) > per_turn
        ):
            total = sum(len(m.content) for m in out)
            order = sorted(
                (i for i, m in enumerate(out) if PERSISTED_OUTPUT_TAG not in m.content),
                key=lambda i: (-len(out[i].content), i),
            )
            for i in order:
                if total <= per_turn:
                    break
                before = len(out[i].content)
                out[i] = self._persist(out[i], ctx, window, 0)
                total += len(out[i].content) - before
        result = []
        for original, kept in zip(messages, out):
            # ``_persist`` returns the message itself or its persisted block (which the
            # snapshot's pointer keeps): only a result it replaced was persisted here
            persisted = kept is not original
            kept = self._snapshot(kept, ctx, reply_start)
            if persisted:
                ctx.tool_result_changed("persist", original, kept, note="tool result persisted")
            result.append(kept)
        return result

    def _limits(self, window: int) -> tuple[float, float]:
        per_result, per_turn = (
            float(self.cfg.tool_result_threshold),
            float(self.cfg.turn_result_budget),
        )
        if self.cfg.scales_to_window:
            window_chars = window * 4
            per_result = max(8_000, min(int(window_chars * 0.15), per_result))
            per_turn = max(16_000, min(int(window_chars * 0.30), per_turn))
        return per_result, per_turn

    def _persist(
        self, message: Message, ctx: ReplayContext, window: int, threshold: float | None
    ) -> Message:
        if not self.cfg.persist_tool_results or failed(message):
            return message
        limit = self._limits(window)[0] if threshold is None else threshold
        content = message.content
        if len(content) <= limit or PERSISTED_OUTPUT_TAG in content:
            return message
        action, _, _ = _tool_name(message, _last_assistant(ctx))
        if action in PINNED_TOOLS:
            return message
        stem = safe_component(message.tool_call_id or f"{action}_{len(self.progress) + 1:03d}")
        path = ctx.write_file(
            f"persisted_results/{safe_component(ctx.trace_id)}/{stem}.txt",
            content.encode("utf-8", "surrogatepass"),
        )
        preview, has_more = generate_preview(content, self.cfg.preview_size)
        block = persisted_block(preview, has_more, len(content), path)
        if message.is_observation:
            block = OBSERVATION_PREFIX + block
        return message.with_text(block)

    def _snapshot(self, message: Message, ctx: ReplayContext, reply_start: int) -> Message:
        """``Role._write_op_snapshot`` (role.py:408-470) and the pointer of react_agent.py:335-350."""
        if not self.cfg.snapshots or failed(message):
            return message
        design = self.rules.design_snapshots
        step = len(self.progress) + 1 if design else ctx.call - reply_start
        assistant = _last_assistant(ctx)
        # what the step's file holds depends on these alone: worked out once in the process
        key = (id(message), id(assistant), step, ctx.trace_id, design)
        files = _snapshot_files()
        found = files.peek(key)
        keeps = ctx.keeps_contents  # else the file is recorded by its size and hash
        if (
            found is None
            or found.message is not message
            or found.assistant is not assistant
            or (keeps and found.content is None)
        ):
            action, relative, made, sha256 = _snapshot_file(
                message, assistant, step, ctx.trace_id, design, memo=keeps
            )
            kept = made if keeps else None
            found = _SnapshotFile(message, assistant, action, relative, kept, sha256, len(made))
            files.put(key, found, len(kept or b""))
        if found.content is None:
            path = ctx.name_file(found.relative, found.size, found.sha256)
        else:
            path = ctx.write_file(found.relative, found.content, sha256=found.sha256)
        if not self.rules.design_snapshots:
            # 0.8.2 overwrites a step file a later reply names again; the prompt cites that
            # name (ctxbench keeps the later content under ``~2``: a written file stays)
            path = found.relative
        line = progress_line(step, found.action, path)
        self.progress.add(line)
        return _citing(message, path, design=self.rules.design_snapshots)


def _last_assistant(ctx: ReplayContext) -> Message | None:
    """The view's last assistant message (the call the results being added answer)."""
    view = ctx.view
    for i in range(len(view) - 1, -1, -1):  # read from the end, without copying the view
        if view[i].role == "assistant":
            return view[i]
    return None


def _tool_name(message: Message, assistant: Message | None) -> tuple[str, str, str]:
    """(action, action_input, thought) of the call of ``assistant`` the result answers."""
    if assistant is None:
        return message.name or "tool", "", ""
    if message.role == "tool":
        call = next((c for c in assistant.tool_calls if c.id == message.tool_call_id), None)
        action = call.name if call else (message.name or "tool")
        return action, call.arguments if call else "", assistant.content
    action_m = _ACTION_RE.search(assistant.content)
    input_m = _ACTION_INPUT_RE.search(assistant.content)
    thought_m = _THOUGHT_RE.search(assistant.content)
    return (
        action_m.group(1).strip() if action_m else "action",
        input_m.group(1).strip() if input_m else "",
        thought_m.group(1).strip() if thought_m else assistant.content,
    )


def _snapshot_file(
    message: Message,
    assistant: Message | None,
    step: int,
    trace_id: str,
    design: bool,
    *,
    memo: bool = True,
) -> tuple[str, str, bytes, str]:
    """(action, relative path, content, sha256) of the snapshot of result ``message`` at
    ``step`` (``Role._write_op_snapshot``, role.py:408-470)."""
    action, action_input, thought = _tool_name(message, assistant)
    conv_id = safe_component(trace_id)
    observation = message.content
    if message.is_observation:
        observation = observation.lstrip()[len("Observation:") :].lstrip()
    if design:
        missing = None
        relative = f"op_snapshots/{conv_id}/step_{step:03d}_{safe_component(action)}.json"
    else:
        # the ReAct retry counter + 1; failed steps write nothing, so numbers skip
        missing = ""
        safe_action = "".join(c if c.isalnum() or c in "-_" else "_" for c in action)
        relative = f"{conv_id}/step_{step:03d}_{safe_action}.json"
    payload = {
        "step": step,
        "action": action,
        "phase": missing,
        "action_intention": missing,
        "action_reason": missing,
        "thought": thought,
        "action_input": action_input,
        "observation": observation,
        "timestamp": None,
        "conv_id": trace_id,
    }
    return (action, relative, *json_file(payload, memo=memo))


class _SnapshotFile(NamedTuple):
    """A step's snapshot file as the memo holds it."""

    message: Message  # the result and its call, held so their ids stay their own
    assistant: Message | None
    action: str
    relative: str
    content: bytes | None  # None: a caller keeping no file's contents (size and hash only)
    sha256: str
    size: int


#: the snapshot files of a sweep's caches: (ids of the result and of its call, step, trace,
#: design) -> :class:`_SnapshotFile`, bounded by the files' bytes
_SNAPSHOTS = "dbgpt.snapshots"
_SNAPSHOTS_LIMIT = 64 * 2**20


def _snapshot_files() -> ContentMemo[tuple[int, int, int, str, bool], _SnapshotFile]:
    """The snapshot files of the current caches (a sweep's trace's, else the process's)."""
    return current().content(_SNAPSHOTS, _SNAPSHOTS_LIMIT)


def _citing(message: Message, path: str, *, design: bool) -> Message:
    """``message`` citing its snapshot ``path`` (the pointer of react_agent.py:335-350; 0.8.2
    adds none to a persisted result), the same object for the same message and path in the
    whole process: what the shared memos know of it serves every replay of a sweep."""
    made: dict[tuple[str, bool], Message] = shared_memo(("dbgpt.citing",), _nothing_made)(message)
    found = made.get((path, design))
    if found is None:
        meta = with_path(message, path)
        if not design and PERSISTED_OUTPUT_TAG in message.content:
            found = replace(message, meta=meta)
        else:
            text = f"{message.content}\n[Full detail available at: {path}]"
            found = replace(message.with_text(text), meta=meta)
        made[(path, design)] = found
    return found


def _nothing_made(_: Message) -> dict[tuple[str, bool], Message]:
    return {}


__all__ = ["PINNED_TOOLS", "ToolResults"]
