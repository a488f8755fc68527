"""``ContextCompressor.compress()`` (agent/context_compressor.py) and the state it keeps between
compactions: the compaction count, the previous summary, the anti-thrash counters. Prune old
tool output, protect the head and a token-budgeted tail, summarise the middle;
:class:`~ctxbench.strategies.hermes.strategy.HermesStrategy` decides when it runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ctxbench.counting.base import TokenCounter
from ctxbench.engine.context import ReplayContext
from ctxbench.errors import SummarizerError
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.hermes.fallback import fallback_summary, is_terminal_failure
from ctxbench.strategies.hermes.limits import HermesConfig, Limits, compute_limits
from ctxbench.strategies.hermes.measure import BudgetCounter, rough_messages_tokens
from ctxbench.strategies.hermes.prune import prune_old_tool_results
from ctxbench.strategies.hermes.summary import (
    COMPRESSION_NOTE,
    MERGED_PRIOR_CONTEXT_HEADER,
    MERGED_SUMMARY_DELIMITER,
    SUMMARY_END_MARKER,
    SUMMARY_HAS_USER_MARK,
    SUMMARY_MARK,
    SUMMARY_SECTIONS,
    THINK_BLOCK_RE,
    _add_text,
    _is_actionable_user,
    auto_focus_topic,
    ground_task_snapshot,
    is_summary_message,
    strip_handoff,
    summary_body,
    summary_prompt,
    with_summary_prefix,
)
from ctxbench.strategies.hermes.tail import (
    _last_user_index,
    align_backward,
    find_tail_cut,
    sanitize_tool_pairs,
    strip_historical_media,
)
from ctxbench.strategies.layers import safe_start_forward
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import Message

MIN_SUMMARY_TOKENS = 2000
SUMMARY_RATIO = 0.20


class ContextCompressor(Strategy[HermesConfig]):
    """``compress()`` with its state, the part of the strategy that is the compressor."""

    def __init__(self, config: HermesConfig | None = None) -> None:
        super().__init__(config)
        self.cfg = self.config
        self.limits: Limits | None = None
        self.compression_count = 0
        self.previous_summary: str | None = None
        self.summary_has_user_turn: bool | None = None
        self.ineffective_count = 0
        self.fallback_streak = 0
        self.verify_pending = False
        self.rules = self.cfg.rules
        self._budget_counter = BudgetCounter()

    def _limits(self, ctx: ReplayContext) -> Limits:
        if self.limits is None:
            self.limits = compute_limits(self.cfg, ctx.window, ctx.reserved)
        return self.limits

    @property
    def blocked(self) -> bool:
        """Anti-thrashing: automatic compaction is off after two ineffective or fallback passes."""
        return self.ineffective_count >= 2 or self.fallback_streak >= 2

    def walk_counter(self, ctx: ReplayContext) -> TokenCounter:
        """The count of the compressor's walks: 0.19.0's floor-rounded budget estimate with the
        stored tool-call shape when deciding with Hermes' own estimate, else the estimator."""
        if self.rules.ceil_rounding or ctx.estimator.name != "hermes":
            return ctx.estimator
        return self._budget_counter

    def _head_size(self, messages: Sequence[Message]) -> int:
        head = 1 if messages and messages[0].role == "system" else 0
        if self.rules.agent_loop:  # 0.19.0: every system message is the prompt outside the list
            head = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
        protect = self.cfg.protect_first_n
        decayed = self.compression_count >= 1 or bool(self.previous_summary)
        resumed = any(is_summary_message(m) for m in messages[head : head + protect + 4])
        return head + (0 if decayed or resumed else protect)

    def compress(
        self, messages: Sequence[Message], ctx: ReplayContext
    ) -> tuple[list[Message], str]:
        """``compress()``: (the new messages, the compaction layer that produced them)."""
        limits = self._limits(ctx)
        if len(messages) <= self._head_size(messages) + 3 + 1:
            self.ineffective_count += 1
            return list(messages), "compress_noop"
        msgs, pruned = prune_old_tool_results(
            messages,
            self.walk_counter(ctx),
            protect_tail_count=self.cfg.protect_last_n,
            protect_tail_tokens=limits.tail_token_budget,
            floor_cap=self.rules.prune_floor_cap,
            pressure_pass=self.rules.pressure_pass,
        )
        layer = "prune" if pruned else "compress_noop"
        start, end = self._middle(msgs, limits, ctx)
        turns = self._middle_turns(msgs, start, end)
        if turns is None:
            self.ineffective_count += 1
            return msgs, layer
        real_user = any(_is_actionable_user(m) for m in msgs)
        if self.summary_has_user_turn is None or real_user:
            self.summary_has_user_turn = real_user
        summary, used_fallback = self._summary_or_fallback(turns, msgs, limits, ctx)
        if summary is None:  # _last_compress_aborted: compress_context keeps what it was given
            return list(messages), "compress_noop"
        kept_system = [m for m in msgs[start:end] if m.role == "system"]
        assembled = self._assemble(
            self._head(msgs[:start]), kept_system, summary, self._tail(msgs[end:]), start
        )
        self.compression_count += 1
        assembled = strip_historical_media(sanitize_tool_pairs(assembled))
        outcome = "fallback_summary" if used_fallback else "compaction"
        if not self.rules.agent_loop:
            self._record_boundary(outcome)
        return assembled, outcome

    def _middle(
        self, msgs: Sequence[Message], limits: Limits, ctx: ReplayContext
    ) -> tuple[int, int]:
        """(start, end) of the middle to summarise: after the protected head, before the
        token-budgeted tail (0.19.0 bridges a tail that would start at the latest user turn
        back to the assistant turn before it)."""
        start = safe_start_forward(msgs, self._head_size(msgs))
        end = find_tail_cut(
            msgs,
            start,
            limits.tail_token_budget,
            self.walk_counter(ctx),
            protect_last_n=self.cfg.protect_last_n,
            min_tail_user_messages=self.cfg.min_tail_user_messages,
            anchor_skips_summary=self.rules.anchor_skips_summary,
        )
        latest_user = _last_user_index(msgs, 0)
        if not self.rules.user_turn_bridge or end != latest_user:
            return start, end
        bridge = latest_user - 1
        if bridge >= 0 and msgs[bridge].role == "tool":
            bridge = align_backward(msgs, latest_user)
        elif bridge < 0 or msgs[bridge].role != "assistant":
            bridge = -1
        return start, bridge if bridge > start else end

    def _middle_turns(self, msgs: Sequence[Message], start: int, end: int) -> list[Message] | None:
        """The turns the summary is made of; None when there is nothing to summarise (an
        empty middle, or at the later commit a middle of handoffs only)."""
        if start >= end:
            return None
        if not self.rules.strip_handoffs:  # 0.19.0 summarises an empty window too
            return self._turns_after_handoff(msgs, start, end)
        turns = [
            t for m in msgs[start:end] if m.role != "system" and (t := strip_handoff(m)) is not None
        ]
        return turns or None

    def _summary_or_fallback(
        self, turns: list[Message], msgs: Sequence[Message], limits: Limits, ctx: ReplayContext
    ) -> tuple[str | None, bool]:
        """(the summary, whether it is the fallback text); (None, False) when the compression
        aborts (``abort_on_summary_failure``, or a terminal failure)."""
        summary, error = self._generate_summary(turns, auto_focus_topic(msgs), limits, ctx)
        if summary is not None:
            return summary, False
        if self.cfg.abort_on_summary_failure or (error is not None and is_terminal_failure(error)):
            return None, False
        reason = f"{error.kind}: {error.message}" if error is not None else None
        return fallback_summary(turns, self.previous_summary, reason), True

    def _head(self, protected: Sequence[Message]) -> list[Message]:
        """The protected head, with the compression note on the system prompt (later commit)
        and handoffs stripped where the rules say."""
        rules = self.rules
        head: list[Message] = []
        for i, msg in enumerate(protected):
            if (
                rules.system_note
                and i == 0
                and msg.role == "system"
                and COMPRESSION_NOTE not in msg.content
            ):
                msg = _add_text(msg, "\n\n" + COMPRESSION_NOTE if msg.content else COMPRESSION_NOTE)
            stripped = strip_handoff(msg) if rules.strip_handoffs else msg
            if stripped is not None:
                head.append(stripped)
        return head

    def _tail(self, tail: Sequence[Message]) -> list[Message]:
        if not self.rules.strip_handoffs:
            return list(tail)
        return [t for m in tail if (t := strip_handoff(m)) is not None]

    def _record_boundary(self, outcome: str) -> None:
        """``record_completed_compaction``: arm the anti-thrash verdict, track the fallback
        streak. 0.19.0 calls it only after ``compress_context`` saw the list change."""
        self.verify_pending = True
        self.fallback_streak = self.fallback_streak + 1 if outcome == "fallback_summary" else 0

    def _turns_after_handoff(self, msgs: Sequence[Message], start: int, end: int) -> list[Message]:
        """0.19.0 re-compaction (context_compressor.py:3418-3449): only turns after the latest
        handoff before ``end`` are summarised (its body seeds the iterative update); without
        one, a previous summary is discarded."""
        search = 1 if msgs and msgs[0].role == "system" else 0
        latest = next(
            (i for i in range(end - 1, search - 1, -1) if is_summary_message(msgs[i])), None
        )
        if latest is None:
            self.previous_summary = None
            return [m for m in msgs[start:end] if m.role != "system"]
        if not self.previous_summary:
            self.previous_summary = summary_body(msgs[latest].content) or None
        return [m for m in msgs[max(start, latest + 1) : end] if m.role != "system"]

    def _assemble(
        self,
        head: list[Message],
        kept_system: list[Message],
        summary: str,
        tail: list[Message],
        start: int,
    ) -> list[Message]:
        """Place the summary with a role that avoids consecutive same roles, or merge it."""
        role, merge, force_user = self._summary_role(head, tail, start)
        marks = {SUMMARY_MARK: True, SUMMARY_HAS_USER_MARK: bool(self.summary_has_user_turn)}
        if not merge:
            note = Message(role, f"{summary}\n\n{SUMMARY_END_MARKER}", meta=marks)
            return [*head, *kept_system, note, *tail]
        if not tail:  # 0.19.0 merges into a tail message that is not there: the summary is lost
            return [*head, *kept_system]  # (context_compressor.py:3630-3672)
        first = tail[0]
        if force_user and role == "user":
            merged = _add_text(first, f"{summary}\n\n{SUMMARY_END_MARKER}\n\n", prepend=True)
        else:
            suffix = f"\n\n{MERGED_SUMMARY_DELIMITER}\n\n{summary}\n\n{SUMMARY_END_MARKER}"
            merged = _add_text(
                _add_text(first, suffix), MERGED_PRIOR_CONTEXT_HEADER + "\n", prepend=True
            )
        merged = replace(merged, meta={**merged.meta, **marks})
        return [*head, *kept_system, merged, *tail[1:]]

    def _summary_role(
        self, head: list[Message], tail: list[Message], start: int
    ) -> tuple[str, bool, bool]:
        """(the summary's role, whether it merges into the first tail message, whether the
        role was forced to user)."""
        last_head_role, force_user = self._after_head(head, start)
        first_tail_role = tail[0].role if tail else None
        if not tail and not self.rules.user_summary_at_start:
            # 0.19.0: an empty tail counts as a user turn (context_compressor.py:3570)
            first_tail_role = "user"
        if not force_user and not any(m.role == "user" for m in head + tail):
            force_user = True
        role = "user" if last_head_role in ("assistant", "tool") or force_user else "assistant"
        if first_tail_role is None or role != first_tail_role:
            return role, False, force_user
        flipped = "assistant" if role == "user" else "user"
        if flipped != last_head_role and not force_user:
            return flipped, False, force_user
        return role, bool(tail) or not self.rules.user_summary_at_start, force_user

    def _after_head(self, head: list[Message], start: int) -> tuple[str, bool]:
        """(the role the summary follows, whether it must be a user turn)."""
        if self.rules.user_summary_at_start:
            last_head_role = head[-1].role if head else "user"
            return last_head_role, start == 0 or last_head_role == "system"
        # 0.19.0: the system prompt is not in the list compress() sees
        conversation_head = [m for m in head if m.role != "system"]
        return (conversation_head[-1].role if conversation_head else "user"), False

    def _generate_summary(
        self,
        turns: list[Message],
        focus_topic: str | None,
        limits: Limits,
        ctx: ReplayContext,
    ) -> tuple[str | None, SummarizerError | None]:
        """``_generate_summary``: (the prefixed summary, or None and the error)."""
        if self.rules.walk_summary_budget:
            content_tokens = sum(self.walk_counter(ctx).count_message(m) for m in turns)
        else:  # _compute_summary_budget (context_compressor.py:1815)
            content_tokens = rough_messages_tokens(turns)
        budget = max(
            MIN_SUMMARY_TOKENS, min(int(content_tokens * SUMMARY_RATIO), limits.max_summary_tokens)
        )
        has_user = bool(self.summary_has_user_turn)
        request = SummaryRequest(
            strategy=self.name,
            layer="compaction",
            prompt=summary_prompt(
                turns,
                previous_summary=self.previous_summary,
                has_user_turn=has_user,
                budget=budget,
                focus_topic=focus_topic,
                input_cap=self.rules.summary_input_cap,
                no_user_prompt=self.rules.no_user_prompt,
            ),
            messages=tuple(turns),
            sections=SUMMARY_SECTIONS,
            max_tokens=budget,
            previous_summary=self.previous_summary,
            key=ctx.request_key(f"compaction{self.compression_count}"),
            send_max_tokens=False,
        )
        try:
            text = ctx.summarize(request)
        except SummarizerError as exc:
            return None, exc
        text = THINK_BLOCK_RE.sub("", text).strip() or text.strip()
        body = ground_task_snapshot(summary_body(text), turns)
        self.previous_summary = body
        return with_summary_prefix(body), None
