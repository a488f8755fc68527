"""Rounds and tool pairing: the one segmentation of messages into rounds every strategy uses
(a tool call and its results are always in one round), and the pairing defects a provider
would reject in a prompt."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, count
from typing import Any

from ctxbench.memo import ObjectMemo, shared_memo
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


#: What pairing reads of a message: its role, the ids of its tool calls, the call it answers.
Signature = tuple[str, tuple[str, ...], str | None]


def signature(message: Message) -> Signature:
    return (message.role, tuple(c.id for c in message.tool_calls), message.tool_call_id)


class _Scan:
    """The pairing check's state after reading the signatures ``seen``."""

    __slots__ = ("answered", "block_owner", "owner_of", "seen", "violations")

    def __init__(self) -> None:
        self.seen: list[Signature] = []
        self.owner_of: dict[str, int] = {}
        self.answered: set[str] = set()
        self.block_owner: int | None = None
        self.violations = 0

    def resumed(self) -> _Scan:
        out = _Scan()
        out.seen = list(self.seen)
        out.owner_of = dict(self.owner_of)
        out.answered = set(self.answered)
        out.block_owner, out.violations = self.block_owner, self.violations
        return out

    def read(self, signatures: Sequence[Signature]) -> None:
        owner_of, answered = self.owner_of, self.answered
        for i, (role, calls, cid) in enumerate(signatures, start=len(self.seen)):
            if role == "assistant":
                self.block_owner = i if calls else None
                for call in calls:
                    owner_of.setdefault(call, i)
            elif role == "tool":
                if cid is None or cid not in owner_of or cid in answered:
                    self.violations += 1
                else:
                    answered.add(cid)
                    if owner_of[cid] != self.block_owner:
                        self.violations += 1
            elif role != "system":
                self.block_owner = None
        self.seen += signatures

    @property
    def total(self) -> int:
        """The violations so far, with every call still unanswered (``answered`` only holds
        calls that ``owner_of`` has), except the calls of a last assistant message: a run that
        ended with a call (mini-swe-agent's and SWE-agent's final ``submit``) is answered by
        nothing, and :func:`ctxbench.validation.validate` accepts it the same way."""
        unanswered = len(self.owner_of) - len(self.answered)
        if unanswered and self.seen:
            last = len(self.seen) - 1
            role, calls, _ = self.seen[last]
            if role == "assistant":
                owner_of, answered = self.owner_of, self.answered
                unanswered -= sum(
                    1 for c in set(calls) if owner_of[c] == last and c not in answered
                )
        return self.violations + unanswered


def pairing_violations(messages: Sequence[Message]) -> int:
    """Tool-pairing defects a provider would reject in a prompt: results without their call,
    calls without their result, and results not directly after the assistant that made the call.

    The calls of the last message, when it is an assistant's, are not missing results: a run
    that ends with a call (a ``submit`` or ``finish`` action) is answered by nothing, and the
    prompt a strategy compacts after the last recorded call ends with it."""
    scan = _Scan()
    scan.read([signature(m) for m in messages])
    return scan.total


#: how many items :func:`changed_places` (and :func:`ctxbench.engine.align.equal_head`)
#: compare at once: a slice compared in C, where the same objects compare without a call
CHUNK = 256


def changed_places(x: Sequence[Any], y: Sequence[Any], most: int) -> list[int] | None:
    """The places of ``x`` and ``y``'s common length where their items may differ, in order:
    every place where they differ (``!=``), and only places where they are not the same
    object; None when those would be more than ``most``. A chunk at a time in C: a chunk of
    the same objects costs a slice compared, so two lists that differ at a few places are
    read at a few nanoseconds an item (lists of one type: a list and a tuple never compare
    equal, so they are read item by item, with the same answer)."""
    n = min(len(x), len(y))
    out: list[int] = []
    i = 0
    while i < n:
        stop = min(i + CHUNK, n)
        xs, ys = x[i:stop], y[i:stop]
        if xs != ys:
            out += compress(count(i), map(operator.is_not, xs, ys))
            if len(out) > most:
                return None
        i = stop
    return out


class PairingMemo:
    """:func:`pairing_violations` for the prompts of one replay: a prompt that extends one of
    the last few checked (a strategy rebuilding a growing history at every call) is read from
    where that one ended, and a message's signature is taken once. A prompt extends an earlier
    one when it holds, place by place, the same messages or messages of the same signature
    (DB-GPT 0.8.2's new system prompt, an observation cut): found in C where the objects are
    the same, so only the places that differ are compared."""

    SLOTS = 4

    def __init__(self) -> None:
        self._signatures: ObjectMemo[Message, Signature] = shared_memo(
            ("pairing.signature",), signature
        )
        self._recent: list[tuple[list[Message], _Scan]] = []  # a prompt checked and its scan

    def violations(self, messages: Sequence[Message]) -> int:
        prompt = list(messages)
        best: _Scan | None = None
        unlike: list[tuple[list[Message], _Scan]] = []  # held prompts that differ everywhere
        for held, scan in self._recent:
            n = len(held)
            if n > len(prompt) or (best is not None and n <= len(best.seen)):
                continue
            # the places that may differ, found a chunk at a time in C (the same objects
            # compare without a call); hardly the same list: compared signature by signature
            # below, only when no held prompt is nearly this one
            differ = changed_places(prompt, held, 8 + n // 8)
            if differ is None:
                unlike.append((held, scan))
            elif self._signatures.many(list(map(prompt.__getitem__, differ))) == list(
                map(scan.seen.__getitem__, differ)
            ):
                best = scan
        if best is None and unlike:
            signatures = self._signatures.many(prompt)
            for held, scan in sorted(unlike, key=lambda pair: -len(pair[0])):
                if signatures[: len(held)] == scan.seen:
                    best = scan
                    break
        scan = best.resumed() if best is not None else _Scan()
        scan.read(self._signatures.many(prompt[len(scan.seen) :]))
        self._recent = [(prompt, scan), *self._recent][: self.SLOTS]
        return scan.total
