"""``HermesStrategy``: the compressor's ``compress()`` driven by the agent loop's rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext
from ctxbench.errors import ProviderOverflowError, SummarizerError
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.hermes.fallback import (
    fallback_summary,
    is_context_error,
    is_terminal_failure,
)
from ctxbench.strategies.hermes.limits import HermesConfig, Limits, compute_limits
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


#: a retry after an overflow needs the estimate below this share of the original (PR #50726)
PROGRESS_TOKEN_RATIO = 0.95


class HermesStrategy(Strategy):
    name = "hermes"
    summary = "Hermes ContextCompressor: prune old tool output, protect head and token-budgeted tail, summarise the middle."
    source = "NousResearch/hermes-agent agent/context_compressor.py"
    Config = HermesConfig
    default_estimator = "hermes"

    def __init__(self, config: HermesConfig | None = None) -> None:
        super().__init__(config)
        self.cfg: HermesConfig = self.config
        self.limits: Limits | None = None
        self.compression_count = 0
        self.previous_summary: str | None = None
        self.summary_has_user_turn: bool | None = None
        self.ineffective_count = 0
        self.fallback_streak = 0
        self.verify_pending = False
        self.attempts = 0
        self._seen_step = -1

    # -- budget -----------------------------------------------------------------------------------
    def on_start(self, ctx: ReplayContext) -> None:
        self.limits = compute_limits(self.cfg, ctx.window, ctx.reserved)

    def _limits(self, ctx: ReplayContext) -> Limits:
        if self.limits is None:
            self.limits = compute_limits(self.cfg, ctx.window, ctx.reserved)
        return self.limits

    def budget(self, ctx: ReplayContext) -> int:
        limits = self._limits(ctx)
        effective = limits.context_length - limits.max_tokens
        return effective if effective > 0 else limits.context_length

    @property
    def blocked(self) -> bool:
        """Anti-thrashing: automatic compaction is off after two ineffective or fallback passes."""
        return self.ineffective_count >= 2 or self.fallback_streak >= 2

    # -- hooks ------------------------------------------------------------------------------------
    def before_call(self, ctx: ReplayContext) -> None:
        limits = self._limits(ctx)
        self.attempts = 0
        self._read_usage(ctx, limits)
        self._proactive_prune(ctx)
        if ctx.view.estimated_tokens < limits.threshold_tokens:
            return
        if self.blocked:
            ctx.emit(
                "strategy.skipped",
                strategy=self.name,
                reason="ineffective",
                ineffective=self.ineffective_count,
                fallback_streak=self.fallback_streak,
            )
            return
        for _ in range(self.cfg.max_compression_attempts):
            if ctx.view.estimated_tokens < limits.threshold_tokens:
                break
            if not self._compress_and_apply(ctx):
                break

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        if not is_context_error(str(error)):
            return False
        self.attempts += 1
        if self.attempts > self.cfg.max_compression_attempts:
            return False
        return self._compress_and_apply(ctx)

    def _compress_and_apply(self, ctx: ReplayContext) -> bool:
        """One compression; True when it made progress (fewer messages or < 95% tokens)."""
        before_len, before_tokens = len(ctx.view), ctx.view.estimated_tokens
        messages, outcome = self.compress(ctx.view.messages, ctx)
        ctx.apply(outcome, messages, note=f"compression #{self.compression_count}")
        return (
            len(ctx.view) < before_len
            or ctx.view.estimated_tokens < before_tokens * PROGRESS_TOKEN_RATIO
        )

    def _read_usage(self, ctx: ReplayContext, limits: Limits) -> None:
        """``update_from_response``: the anti-thrashing verdict on the provider's prompt count."""
        for event in reversed(ctx.events):
            if event.type != ev.PROVIDER_CALL:
                continue
            if event.step <= self._seen_step or not event["ok"]:
                return
            self._seen_step = event.step
            if event["true_tokens"] < limits.threshold_tokens:
                self.ineffective_count = 0
            elif self.verify_pending:
                self.ineffective_count += 1
            self.verify_pending = False
            return

    def _proactive_prune(self, ctx: ReplayContext) -> None:
        """``prune_tool_results_only``: the deterministic prune alone, from its own trigger."""
        cfg = self.cfg
        messages = ctx.view.messages
        if (
            cfg.proactive_prune_tokens <= 0
            or ctx.view.estimated_tokens < cfg.proactive_prune_tokens
        ):
            return
        if len(messages) <= cfg.protect_last_n + self._head_size(messages) + 1:
            return
        pruned, count = prune_old_tool_results(
            messages,
            ctx.estimator,
            protect_tail_count=cfg.protect_last_n,
            protect_tail_tokens=None,
            min_prune_chars=max(200, cfg.proactive_prune_min_result_chars or 8000),
        )
        if not count:
            return
        reclaimed = ctx.estimator.count_prompt(messages) - ctx.estimator.count_prompt(pruned)
        if reclaimed < cfg.proactive_prune_min_reclaim_tokens:
            return
        ctx.apply("proactive_prune", pruned, note=f"{count} tool result(s) pruned")

    # -- compress() --------------------------------------------------------------------------------
    def _head_size(self, messages: Sequence[Message]) -> int:
        head = 1 if messages and messages[0].role == "system" else 0
        protect = self.cfg.protect_first_n
        decayed = self.compression_count >= 1 or bool(self.previous_summary)
        resumed = any(is_summary_message(m) for m in messages[head : head + protect + 4])
        return head + (0 if decayed or resumed else protect)

    def compress(
        self, messages: Sequence[Message], ctx: ReplayContext
    ) -> tuple[list[Message], str]:
        """``compress()``: (the new messages, the compaction layer that produced them)."""
        limits = self._limits(ctx)
        counter = ctx.estimator
        if len(messages) <= self._head_size(messages) + 3 + 1:
            self.ineffective_count += 1
            return list(messages), "compress_noop"
        msgs, pruned = prune_old_tool_results(
            messages,
            counter,
            protect_tail_count=self.cfg.protect_last_n,
            protect_tail_tokens=limits.tail_token_budget,
        )
        layer = "prune" if pruned else "compress_noop"
        latest_user = _last_user_index(msgs, 0)
        start = safe_start_forward(msgs, self._head_size(msgs))
        end = find_tail_cut(
            msgs,
            start,
            limits.tail_token_budget,
            counter,
            protect_last_n=self.cfg.protect_last_n,
            min_tail_user_messages=self.cfg.min_tail_user_messages,
        )
        if end == latest_user:
            bridge = latest_user - 1
            if bridge >= 0 and msgs[bridge].role == "tool":
                bridge = align_backward(msgs, latest_user)
            elif bridge < 0 or msgs[bridge].role != "assistant":
                bridge = -1
            if bridge > start:
                end = bridge
        if start >= end:
            self.ineffective_count += 1
            return msgs, layer
        window = msgs[start:end]
        kept_system = [m for m in window if m.role == "system"]
        turns = [t for m in window if m.role != "system" and (t := strip_handoff(m)) is not None]
        if not turns:
            self.ineffective_count += 1
            return msgs, layer
        real_user = any(_is_actionable_user(m) for m in msgs)
        if self.summary_has_user_turn is None or real_user:
            self.summary_has_user_turn = real_user

        summary, error = self._generate_summary(turns, auto_focus_topic(msgs), limits, ctx)
        if summary is None and (
            self.cfg.abort_on_summary_failure or (error is not None and is_terminal_failure(error))
        ):
            return msgs, layer
        used_fallback = summary is None
        if summary is None:
            reason = f"{error.kind}: {error.message}" if error is not None else None
            summary = fallback_summary(turns, self.previous_summary, reason)

        head: list[Message] = []
        for i, msg in enumerate(msgs[:start]):
            if i == 0 and msg.role == "system" and COMPRESSION_NOTE not in msg.content:
                msg = _add_text(msg, "\n\n" + COMPRESSION_NOTE if msg.content else COMPRESSION_NOTE)
            stripped = strip_handoff(msg)
            if stripped is not None:
                head.append(stripped)
        tail = [t for m in msgs[end:] if (t := strip_handoff(m)) is not None]
        assembled = self._assemble(head, kept_system, summary, tail, start)
        self.compression_count += 1
        assembled = strip_historical_media(sanitize_tool_pairs(assembled))
        self.verify_pending = True
        self.fallback_streak = self.fallback_streak + 1 if used_fallback else 0
        return assembled, "fallback_summary" if used_fallback else "compaction"

    def _assemble(
        self,
        head: list[Message],
        kept_system: list[Message],
        summary: str,
        tail: list[Message],
        start: int,
    ) -> list[Message]:
        """Place the summary with a role that avoids consecutive same roles, or merge it."""
        last_head_role = head[-1].role if head else "user"
        first_tail_role = tail[0].role if tail else None
        force_user = start == 0 or last_head_role == "system"
        if not force_user and not any(m.role == "user" for m in head + tail):
            force_user = True
        role = "user" if last_head_role in ("assistant", "tool") or force_user else "assistant"
        merge = False
        if first_tail_role is not None and role == first_tail_role:
            flipped = "assistant" if role == "user" else "user"
            if flipped != last_head_role and not force_user:
                role = flipped
            else:
                merge = bool(tail)
        marks = {SUMMARY_MARK: True, SUMMARY_HAS_USER_MARK: bool(self.summary_has_user_turn)}
        if not merge:
            note = Message(role, f"{summary}\n\n{SUMMARY_END_MARKER}", meta=marks)
            return [*head, *kept_system, note, *tail]
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

    def _generate_summary(
        self,
        turns: list[Message],
        focus_topic: str | None,
        limits: Limits,
        ctx: ReplayContext,
    ) -> tuple[str | None, SummarizerError | None]:
        """``_generate_summary``: (the prefixed summary, or None and the error)."""
        content_tokens = sum(ctx.estimator.count_message(m) for m in turns)
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
