"""Rounds and tool pairing: the one segmentation of messages into rounds every strategy uses
(a tool call and its results are always in one round), and the pairing defects a provider
would reject in a prompt."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxbench.trace import Message, Trace


@dataclass(frozen=True)
class Round:
    """One round: an assistant message and the tool results answering its calls, plus the
    user messages leading up to it. ``indices`` are positions in the segmented sequence."""

    index: int
    indices: tuple[int, ...]
    complete: bool

    @property
    def first(self) -> int:
        return self.indices[0]

    @property
    def last(self) -> int:
        return self.indices[-1]


def _next_non_system(messages: Sequence[Message], i: int) -> Message | None:
    for m in messages[i + 1 :]:
        if m.role != "system":
            return m
    return None


def _closes_round(messages: Sequence[Message], i: int) -> bool:
    msg = messages[i]
    nxt = _next_non_system(messages, i)
    if msg.is_observation:
        return True
    if msg.role == "assistant":
        if msg.tool_calls:
            return nxt is None or nxt.role != "tool"
        return nxt is None or not nxt.is_observation
    if msg.role == "tool":
        return nxt is None or nxt.role != "tool"
    return False


def rounds(messages: Sequence[Message] | Trace) -> list[Round]:
    """Segment messages into rounds, the one segmentation every strategy uses.

    - Tool calling: a round closes after the tool results that follow an assistant message
      with calls (parallel calls included), or at an assistant message without calls.
    - Text ReAct (DB-GPT style): a user message starting with ``Observation:`` closes the
      round, so ``Thought/Action`` assistant text and its observation stay together.
    - System messages belong to no round. Trailing messages form an incomplete last round.
    """
    seq = messages.messages if isinstance(messages, Trace) else messages
    out: list[Round] = []
    current: list[int] = []
    for i, msg in enumerate(seq):
        if msg.role == "system":
            continue
        current.append(i)
        if _closes_round(seq, i):
            out.append(Round(len(out), tuple(current), True))
            current = []
    if current:
        out.append(Round(len(out), tuple(current), False))
    return out


def pairing_violations(messages: Sequence[Message]) -> int:
    """Tool-pairing defects a provider would reject in a prompt: results without their call,
    calls without their result, and results not directly after the assistant that made the call."""
    violations = 0
    owner_of: dict[str, int] = {}
    answered: set[str] = set()
    block_owner: int | None = None
    for i, msg in enumerate(messages):
        if msg.role == "assistant":
            block_owner = i if msg.tool_calls else None
            for call in msg.tool_calls:
                owner_of.setdefault(call.id, i)
        elif msg.role == "tool":
            cid = msg.tool_call_id
            if cid is None or cid not in owner_of or cid in answered:
                violations += 1
            else:
                answered.add(cid)
                if owner_of[cid] != block_owner:
                    violations += 1
        elif msg.role != "system":
            block_owner = None
    violations += sum(1 for cid in owner_of if cid not in answered)
    return violations
