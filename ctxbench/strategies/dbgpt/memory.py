"""Messages as DB-GPT's ReAct agent stores them: rounds, observations, snapshots, persisted
results and the task-progress block (docs/sources.md; line numbers of the 0.8.2 wheel)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ctxbench.pairing import rounds
from ctxbench.strategies.dbgpt.config import DbgptRelease
from ctxbench.trace import Message

PERSISTED_OUTPUT_TAG = "<persisted-output>"
OBSERVATION_PREFIX = "Observation: "
_POINTER_RE = re.compile(r"\[Full detail available at: ([^\]\n]+)\]")
_TRUNCATED_POINTER_RE = re.compile(r"\[truncated, full detail at: ([^\]\n]+)\]")
#: where a message keeps its snapshot path (DB-GPT's ``AgentMessage.context["snapshot_path"]``)
SNAPSHOT_PATH_KEY = "snapshot_path"
#: the first line of ``Role.task_progress_summary`` (role.py:212-240)
PROGRESS_HEADING = "## Task Progress (do NOT repeat completed steps)"
#: the lines ``_REACT_SYSTEM_TEMPLATE`` renders after ``{{ task_progress }}`` (react_agent.py:69-73)
PROGRESS_TAIL = (
    "You MUST NOT repeat any action already listed above as \u2705 completed.\n"
    "Pick the NEXT action that has NOT been done yet to make progress toward the final goal."
)


def stored(message: Message) -> Message:
    """A message as the ReAct agent keeps it in memory (``read_memories``,
    react_agent.py:274-365): an assistant turn with native tool calls as ``Thought:`` /
    ``Action:`` / ``Action Input:`` lines, a tool result as a human ``Observation:`` turn."""
    if message.role == "assistant" and message.tool_calls:
        lines = [f"Thought: {message.content}"] if message.content else []
        for call in message.tool_calls:
            lines += [f"Action: {call.name}", f"Action Input: {call.arguments}"]
        return Message("assistant", "\n".join(lines))
    if message.role == "tool":
        return Message("user", OBSERVATION_PREFIX + message.content)
    return message


def from_stored(original: Message, text: str) -> Message:
    """``original`` with the text a layer left in its stored form (the prefix a tool result
    gained in memory is not part of the tool message)."""
    if original.role == "tool" and text.startswith(OBSERVATION_PREFIX):
        text = text[len(OBSERVATION_PREFIX) :]
    return original if text == original.content else original.with_text(text)


def progress_line(step: int, action: str, snapshot: str) -> str:
    """One line of ``Role.task_progress_summary`` (role.py:212-240)."""
    line = f"\u2705 Step {step}: Action={action}"
    if snapshot:
        line += f" | ref: {os.path.basename(snapshot)}"
    return line


def task_progress(lines: Sequence[str]) -> str | None:
    """``Role.task_progress_summary`` (role.py:212-240) of its :func:`progress_line` lines."""
    if not lines:
        return None
    return "\n".join([PROGRESS_HEADING, *lines])


def with_progress(messages: Sequence[Message], progress: str | None) -> list[Message]:
    """The system prompt the ReAct template renders with ``task_progress``: the recorded
    system prompt stands in for the agent's own, the block appended to the first one (a new
    system message when the trace has none)."""
    out = list(messages)
    if not progress:
        return out
    for i, msg in enumerate(out):
        if msg.role == "system":
            out[i] = progress_head(msg, progress)
            return out
    return [progress_head(None, progress), *out]


def progress_head(system: Message | None, progress: str) -> Message:
    """The system prompt with the ``task_progress`` block: ``system`` (the first of the memory)
    with the block appended, or the block alone when there is none."""
    block = f"{progress}\n{PROGRESS_TAIL}"
    if system is None:
        return Message("system", block)
    return system.with_text(f"{system.content}\n{block}")


def is_observation(message: Message, rules: DbgptRelease) -> bool:
    """An observation Layer 1 may cut: ``Observation:`` user messages (compact.py:41-48), and
    native tool results (by the design; in 0.8.2 because the agent stores them as such)."""
    return message.is_observation or (
        (rules.tool_rounds or rules.react_memory) and message.role == "tool"
    )


def manager_rounds(messages: Sequence[Message], rules: DbgptRelease) -> list[tuple[int, ...]]:
    """The manager's rounds as index tuples, system messages excluded.

    0.8.2 (``_detect_round_boundaries``) ends a round only at an ``Observation:`` message, which
    a native tool result is once the ReAct agent stored it (each result its own round); the
    design ends rounds at tool results as :func:`ctxbench.pairing.rounds` segments them.
    """
    if rules.tool_rounds:
        return [r.indices for r in rounds(messages)]
    out: list[tuple[int, ...]] = []
    current: list[int] = []
    for i, msg in enumerate(messages):
        if msg.role == "system":
            continue
        current.append(i)
        if is_observation(msg, rules):
            out.append(tuple(current))
            current = []
    if current:
        out.append(tuple(current))
    return out


def generate_preview(content: str, max_chars: int) -> tuple[str, bool]:
    """Cut at the last newline within ``max_chars`` if it lies past half (storage.py)."""
    if len(content) <= max_chars:
        return content, False
    truncated = content[:max_chars]
    last_nl = truncated.rfind("\n")
    if last_nl > max_chars // 2:
        truncated = truncated[: last_nl + 1]
    return truncated, True


def persisted_block(preview: str, has_more: bool, original_size: int, file_path: str) -> str:
    """The ``<persisted-output>`` replacement text (storage.py ``_build_persisted_message``)."""
    size_kb = original_size / 1024
    size_str = f"{size_kb / 1024:.1f} MB" if size_kb >= 1024 else f"{size_kb:.1f} KB"
    text = f"{PERSISTED_OUTPUT_TAG}\n"
    text += f"This tool result was too large ({original_size:,} characters, {size_str}).\n"
    text += f"Full output saved to: {file_path}\n"
    text += "Use the read_file tool with this file path to access specific sections.\n\n"
    text += f"Preview (first {len(preview)} chars):\n{preview}"
    if has_more:
        text += "\n..."
    return text + "\n</persisted-output>"


def snapshot_path(message: Message) -> str | None:
    """The snapshot a (maybe already cut) observation points to."""
    path = message.meta.get(SNAPSHOT_PATH_KEY)
    if isinstance(path, str) and path:
        return path
    found = _POINTER_RE.search(message.content) or _TRUNCATED_POINTER_RE.search(message.content)
    return found.group(1) if found else None


def with_path(message: Message, path: str | None) -> dict[str, object]:
    meta = dict(message.meta)
    if path:
        meta[SNAPSHOT_PATH_KEY] = path
    return meta


def failed(message: Message) -> bool:
    return bool(message.meta.get("is_error")) or message.meta.get("success") is False
