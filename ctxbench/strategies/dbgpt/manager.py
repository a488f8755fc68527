"""``ContextManager``: DB-GPT's ``ContextManager`` on message lists (``manager.py``,
``compact.py``): the budget and its states, the manager's counts and rounds, and Layers 1-4 as
pure functions of a message list. :class:`~ctxbench.strategies.dbgpt.strategy.DbgptStrategy`
drives it as the agent loop does (see the package docstring)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from itertools import compress, count, repeat

from ctxbench.engine.context import ReplayContext
from ctxbench.memo import ObjectMemo, shared_memo
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.dbgpt.config import DEFAULT_MAX_CONTEXT_TOKENS, DbgptConfig, DbgptRelease
from ctxbench.strategies.dbgpt.ledger import ENDS_ROUND as _ENDS_ROUND
from ctxbench.strategies.dbgpt.ledger import OTHER as _OTHER
from ctxbench.strategies.dbgpt.ledger import SYSTEM as _SYSTEM
from ctxbench.strategies.dbgpt.memory import (
    PERSISTED_OUTPUT_TAG,
    from_stored,
    is_observation,
    manager_rounds,
    snapshot_path,
    stored,
    with_path,
)
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import Message

SUMMARY_PROMPT = """\
You are a context summarizer for a ReAct agent. Condense the conversation history \
into a structured summary. Be precise — preserve exact names, paths, values, and \
variable names.

## Conversation to summarize
{conversation_text}

## Output format (use exactly these headings)
1. Original Task: <one-line description>
2. Completed Steps: <one line per step, action + key result>
3. Current State: <what the agent currently knows>
4. Key Data: <important values, paths, variable names — must be exact>
5. Errors Encountered: <failures and how they were resolved, or "None">
6. Next Steps: <remaining work, or "None" if task is complete>
"""

SUMMARY_SECTIONS = (
    "1. Original Task",
    "2. Completed Steps",
    "3. Current State",
    "4. Key Data",
    "5. Errors Encountered",
    "6. Next Steps",
)

#: Substrings of the lower-cased provider error that trigger Layer 4 (base_agent.py).
LAYER4_MARKERS = ("context_too_long", "context_length_exceeded", "maximum context length")
#: what 0.8.2 raises at manager.py:160 before any summary is asked for
MODEL_NAME_ERROR = "AttributeError: 'ContextManager' object has no attribute 'model_name'"


class ContextManager(Strategy[DbgptConfig]):
    """The manager's budget, counts, rounds and layers, with its breaker's state."""

    def __init__(self, config: DbgptConfig | None = None) -> None:
        super().__init__(config)
        self.cfg = self.config
        self.rules = self.cfg.rules
        self.compact_failures = 0
        #: the manager's count of a message (set at the first count, from the estimator)
        self._count: ObjectMemo[Message, int] | None = None
        #: Layer 1's cut of a message of an old round (0.8.2 cuts the same history at every
        #: call), and what a message is to the manager's rounds (system, a round's end, or
        #: neither): the process's, as a sweep's replays ask them of the same messages
        max_chars = self.cfg.observation_max_chars
        self._cuts: ObjectMemo[Message, Message] = shared_memo(
            ("dbgpt.cut", self.rules, max_chars),
            partial(_cut, rules=self.rules, max_chars=max_chars),
        )
        self._kinds: ObjectMemo[Message, int] = shared_memo(
            ("dbgpt.kind", self.rules), partial(_kind, rules=self.rules)
        )
        #: the last prompt the manager counted, and its count (asked again of the same prompt)
        self._last_count: tuple[Sequence[Message], int] = ((), 0)
        #: the states by threshold, from the highest (the config is frozen: made once, not
        #: at each of the three status events and the layers' checks of a call)
        self._thresholds: tuple[tuple[float, str], ...] = (
            (1.0, "overflow"),
            (self.cfg.critical_threshold, "critical"),
            (self.cfg.error_threshold, "error"),
            (self.cfg.warning_threshold, "warning"),
        )

    # -- budget -----------------------------------------------------------------------------------
    def max_context(self, ctx: ReplayContext) -> int:
        value = self.cfg.max_context_tokens
        if value is None:
            return ctx.window
        return value if value > 0 else DEFAULT_MAX_CONTEXT_TOKENS

    def budget(self, ctx: ReplayContext) -> int:
        reserved = ctx.reserved if self.cfg.reserved_tokens is None else self.cfg.reserved_tokens
        return self.max_context(ctx) - reserved

    def state_thresholds(self) -> tuple[tuple[float, str], ...]:
        return self._thresholds

    def state_of(self, ratio: float, budget: int) -> str:
        """:meth:`Strategy.state_of` with the thresholds made once."""
        if budget <= 0:
            return "overflow"
        for threshold, state in self._thresholds:
            if ratio >= threshold:
                return state
        return "normal"

    def _state(self, messages: Sequence[Message], ctx: ReplayContext) -> str:
        """The manager's state of the prompt ``messages``."""
        return self._state_at(self._used(messages, ctx), ctx)

    def _state_at(self, used: int, ctx: ReplayContext) -> str:
        budget = self.budget(ctx)
        ratio = used / budget if budget > 0 else float("inf")
        return self.state_of(ratio, budget)

    def _used(self, messages: Sequence[Message], ctx: ReplayContext) -> int:
        """The manager's count of the prompt ``messages``."""
        known, used = self._last_count
        if known is messages or (
            len(known) == len(messages) and all(map(operator.is_, known, messages))
        ):
            return used
        if self.rules.react_memory:
            used = sum(self._counts(self._managed(messages)[0], ctx))
        else:
            used = ctx.view.est_overhead + sum(self._counts(messages, ctx))
        self._last_count = (messages, used)
        return used

    def _counts(self, messages: Sequence[Message], ctx: ReplayContext) -> list[int]:
        """``count_messages([msg])`` of each message: 0.8.2 counts the stored form (the ReAct
        text)."""
        return self._count_memo(ctx).many(messages)

    def _count_memo(self, ctx: ReplayContext) -> ObjectMemo[Message, int]:
        """The memo of :meth:`_counts` (the process's, for this estimator and memory form)."""
        if self._count is None:
            estimator, react = ctx.estimator, self.rules.react_memory
            self._count = shared_memo(
                ("dbgpt.count", estimator, react),
                (lambda m: estimator.count_message(stored(m)))
                if react
                else estimator.count_message,
            )
        return self._count

    def _round_ends(self, messages: Sequence[Message], kinds: list[int] | None = None) -> list[int]:
        """The index of each of the manager's rounds' last message (an unfinished last round
        included), in order. Every round is a run of the messages, system ones aside, so
        this is all Layers 1 and 2 need of :func:`manager_rounds`. 0.8.2's rounds end at
        observations, found in C but for messages never seen before. ``kinds``: the
        messages' :meth:`_kind_of`, when known."""
        if self.rules.tool_rounds:
            return [r[-1] for r in manager_rounds(messages, self.rules)]
        if kinds is None:
            kinds = self._kinds.many(messages)
        ends = list(compress(count(), map(operator.eq, kinds, repeat(_ENDS_ROUND))))
        last = ends[-1] if ends else -1
        if _OTHER in kinds[last + 1 :]:
            ends.append(len(kinds) - 1 - kinds[::-1].index(_OTHER))
        return ends

    def _managed(self, messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
        """(what the manager sees, the current question). 0.8.2: ``_load_thinking_messages``
        appends the user prompt after ``manage_context`` (base_agent.py:1433-1451)."""
        out = list(messages)
        if (
            self.rules.react_memory
            and out
            and out[-1].role == "user"
            and not out[-1].is_observation
        ):
            return out[:-1], out[-1:]
        return out, []

    @property
    def breaker_tripped(self) -> bool:
        return self.compact_failures >= self.cfg.max_compact_failures

    # -- layers (pure functions of the message list) -------------------------------------------------
    def layer1(self, messages: tuple[Message, ...], current_round: int) -> list[Message]:
        """Truncate observations of rounds older than ``max_observation_age_rounds``.

        The snapshot path comes from the message's ``snapshot_path`` (DB-GPT's
        ``msg.context["snapshot_path"]``) or its ``[Full detail available at: ...]`` pointer,
        so cutting an already cut observation keeps it (both releases).
        """
        cutoff = current_round - self.cfg.max_observation_age_rounds
        if cutoff <= 0:
            return list(messages)
        # the old rounds are a prefix; a system message in it is no observation, so cutting
        # leaves it as it is
        ends = self._round_ends(messages)
        stop = ends[cutoff - 1] + 1 if cutoff <= len(ends) else len(messages)
        return [*self._cuts.many(messages[:stop]), *messages[stop:]]

    def layer2(self, messages: tuple[Message, ...], ctx: ReplayContext) -> list[Message]:
        """Drop whole old rounds; keep ``min_keep_recent_rounds`` and ``min_keep_tokens``.

        A round is a run of the conversation (system messages aside), so the rounds kept are
        its tail, found by walking back over the rounds' token sums."""
        kinds = self._kinds.many(messages)
        if _SYSTEM in kinds:
            system = list(compress(messages, map(operator.eq, kinds, repeat(_SYSTEM))))
            talk = list(map(operator.ne, kinds, repeat(_SYSTEM)))
            conv, kinds = list(compress(messages, talk)), list(compress(kinds, talk))
        else:
            system, conv = [], list(messages)
        ends = self._round_ends(conv, kinds)
        keep = self.cfg.min_keep_recent_rounds
        if not conv or len(ends) <= keep:
            return list(messages)
        starts = [0, *(end + 1 for end in ends)]  # and where a round after the last would
        keep_from = len(ends) - keep
        kept_tokens = 0
        for r in range(len(ends) - 1, -1, -1):  # only the rounds walked are counted
            kept_tokens += sum(self._counts(conv[starts[r] : ends[r] + 1], ctx))
            if r < keep_from and kept_tokens >= self.cfg.min_keep_tokens:
                break
            keep_from = min(keep_from, r)
        if keep_from <= 0:
            return list(messages)
        return system + conv[starts[keep_from] :]

    def layer3(self, messages: tuple[Message, ...], ctx: ReplayContext) -> list[Message]:
        """Summarise old rounds into one user message; raises SummarizerError on failure."""
        system = [m for m in messages if m.role == "system"]
        conv = [m for m in messages if m.role != "system"]
        segs = manager_rounds(conv, self.rules)
        keep_rounds = min(self.cfg.min_keep_recent_rounds, len(segs))
        if not conv or keep_rounds >= len(segs):
            return list(messages)
        old_idx = sorted(i for seg in segs[: len(segs) - keep_rounds] for i in seg)
        old_set = set(old_idx)
        old = [conv[i] for i in old_idx]
        recent = [m for i, m in enumerate(conv) if i not in old_set]
        shown = [stored(m) if self.rules.react_memory else m for m in old]
        lines = [f"[{_dbgpt_role(m.role)}]: {m.content[:3000]}" for m in shown]
        request = SummaryRequest(
            strategy=self.name,
            layer="layer3",
            prompt=SUMMARY_PROMPT.format(conversation_text="\n".join(lines)),
            messages=tuple(old),
            sections=SUMMARY_SECTIONS,
            max_tokens=2000,
            key=ctx.request_key("layer3"),
        )
        summary = ctx.summarize(request)
        note = Message("user", f"[Context Summary of {len(old)} earlier messages]\n\n{summary}")
        return [*system, note, *recent]

    def layer4(self, messages: tuple[Message, ...]) -> list[Message]:
        """Keep system messages and the last 2 rounds."""
        system = [m for m in messages if m.role == "system"]
        conv = [m for m in messages if m.role != "system"]
        segs = manager_rounds(conv, self.rules)
        keep_rounds = min(2, len(segs))
        if not conv or keep_rounds >= len(segs):
            return list(messages)
        keep = {i for seg in segs[len(segs) - keep_rounds :] for i in seg}
        return system + [m for i, m in enumerate(conv) if i in keep]


def _cut(msg: Message, *, rules: DbgptRelease, max_chars: int) -> Message:
    """Layer 1 on one message of an old round: the message itself when it is no observation,
    already persisted, or short enough."""
    content = stored(msg).content if rules.react_memory else msg.content
    if (
        not is_observation(msg, rules)
        or PERSISTED_OUTPUT_TAG in content
        or len(content) <= max_chars + 30
    ):
        return msg
    path = snapshot_path(msg)
    suffix = f"... [truncated, full detail at: {path}]" if path else "... [truncated]"
    return replace(from_stored(msg, content[:max_chars] + suffix), meta=with_path(msg, path))


def _kind(message: Message, *, rules: DbgptRelease) -> int:
    """What ``message`` is to the manager's rounds: system, a round's end, or neither."""
    if message.role == "system":
        return _SYSTEM
    return _ENDS_ROUND if is_observation(message, rules) else _OTHER


_ORDER = ("normal", "warning", "error", "critical", "overflow")


def at_least(state: str, floor: str) -> bool:
    return _ORDER.index(state) >= _ORDER.index(floor)


def _dbgpt_role(role: str) -> str:
    return {"user": "human", "assistant": "ai"}.get(role, role)


__all__ = [
    "LAYER4_MARKERS",
    "MODEL_NAME_ERROR",
    "SUMMARY_PROMPT",
    "SUMMARY_SECTIONS",
    "ContextManager",
    "at_least",
]
