"""``HermesStrategy``: the compressor's ``compress()`` driven by the agent loop's rules
(:mod:`~ctxbench.strategies.hermes.compressor` holds ``compress()`` and its state).

At ``release="0.19.0"`` the loop is hermes-agent 0.19.0's (:class:`AgentLoop`): it decides with
the rough ``len(str(msg))`` estimate before every API call and with the provider's real
``prompt_tokens`` after each tool-calling response. At ``"0000416b"`` ``compress()`` runs
whenever the strategy's estimate reaches the threshold before a call, as docs/sources.md reads
the later commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext
from ctxbench.errors import ProviderOverflowError
from ctxbench.strategies.base import ProviderCall, ReplyAborted
from ctxbench.strategies.hermes.compressor import ContextCompressor
from ctxbench.strategies.hermes.fallback import is_context_error
from ctxbench.strategies.hermes.limits import RELEASES, HermesConfig, Limits, compute_limits
from ctxbench.strategies.hermes.measure import (
    conversation,
    rough_api_tokens,
    rough_messages_tokens,
    rough_request_tokens,
)
from ctxbench.strategies.hermes.prune import prune_old_tool_results
from ctxbench.strategies.hermes.summary import _is_actionable_user, is_summary_message, stand_ins
from ctxbench.strategies.releases import release_summaries
from ctxbench.trace import Message

#: a retry after an overflow needs the estimate below this share of the original (PR #50726)
PROGRESS_TOKEN_RATIO = 0.95
#: 0.19.0: compactions per user turn, pre-API and overflow together (conversation_loop.py:1219)
MAX_TURN_COMPRESSION_ATTEMPTS = 3
#: 0.19.0: compression passes of the turn prologue's preflight (turn_context.py:651)
PREFLIGHT_PASSES = 3
#: ``_ensure_compressed_has_user_turn``'s marker when no human turn exists (0.19.0)
NO_USER_TURN_MARKER = (
    "Continue from the compressed conversation context above. "
    "This marker exists because no human user turn was available."
)


class AgentLoop:
    """The 0.19.0 agent loop's compaction state around ``ContextCompressor`` (the usage latch of
    ``update_from_response``, the deferral of ``should_defer_preflight_to_real_usage``, and
    the per-turn ``compression_attempts``), as pure bookkeeping the strategy consults."""

    def __init__(self) -> None:
        self.last_prompt_tokens = 0
        self.last_real_prompt_tokens = 0
        self.awaiting_real_usage = False
        self.last_compression_rough = 0
        self.rough_when_fit = 0
        self.attempts = 0
        #: the turn ended with ``compression_exhausted`` (run_conversation returned failed)
        self.exhausted = False

    def defer(self, rough: int, threshold: int) -> bool:
        """``should_defer_preflight_to_real_usage`` (context_compressor.py:1515-1555)."""
        if rough < threshold:
            return False
        if self.awaiting_real_usage:
            return True
        if self.last_real_prompt_tokens <= 0 or self.last_real_prompt_tokens >= threshold:
            return False
        baseline = self.rough_when_fit or self.last_compression_rough
        if baseline <= 0:
            return False
        if max(0, rough - baseline) > max(4096, int(threshold * 0.05)):
            return False
        self.rough_when_fit = max(baseline, rough)
        return True

    def compacted(self, rough_after: int) -> None:
        """After ``_compress_context`` (conversation_compression.py:1450-1460)."""
        self.last_compression_rough = rough_after
        self.last_prompt_tokens = -1
        self.awaiting_real_usage = True


class HermesStrategy(ContextCompressor):
    name = "hermes"
    summary = "Hermes ContextCompressor: prune old tool output, protect head and token-budgeted tail, summarise the middle."
    source = "NousResearch/hermes-agent agent/context_compressor.py"
    Config = HermesConfig
    default_estimator = "hermes"
    #: the ``release`` knob's values and what each reproduces (``ctxbench strategies``)
    releases: ClassVar[dict[str, str]] = release_summaries(RELEASES)

    def __init__(self, config: HermesConfig | None = None) -> None:
        super().__init__(config)
        self.attempts = 0
        #: an accepted response whose usage the next call's post-response check has not read
        self._responded = False
        self.loop = AgentLoop()

    # -- budget -----------------------------------------------------------------------------------
    def on_start(self, ctx: ReplayContext) -> None:
        self.limits = compute_limits(self.cfg, ctx.window, ctx.reserved)

    def budget(self, ctx: ReplayContext) -> int:
        limits = self._limits(ctx)
        effective = limits.context_length - limits.max_tokens
        return effective if effective > 0 else limits.context_length

    # -- hooks ------------------------------------------------------------------------------------
    def before_call(self, ctx: ReplayContext) -> None:
        if self.rules.agent_loop:
            self._loop_before_call(ctx)
            return
        limits = self._limits(ctx)
        self.attempts = 0
        self._proactive_prune(ctx)
        if ctx.view.estimated_tokens < limits.threshold_tokens:
            return
        if self.blocked:
            ctx.emit(
                ev.StrategySkipped(
                    strategy=self.name,
                    reason="ineffective",
                    ineffective=self.ineffective_count,
                    fallback_streak=self.fallback_streak,
                )
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
        if self.rules.agent_loop:
            return self._loop_overflow(ctx)
        self.attempts += 1
        if self.attempts > self.cfg.max_compression_attempts:
            return False
        return self._compress_and_apply(ctx)

    # -- the 0.19.0 agent loop -----------------------------------------------------------------------
    def _loop_before_call(self, ctx: ReplayContext) -> None:
        """One model call of ``run_conversation``: at a user turn the prologue's preflight,
        else the post-response check of the previous tool-calling response (real usage);
        then the pre-API check (the rough estimate of the API copies)."""
        limits = self._limits(ctx)
        loop = self.loop
        responded, self._responded = self._responded, False
        if self._starts_user_turn(ctx.view.messages):
            loop.attempts, loop.exhausted = 0, False  # conversation_loop.py:686
            self._prologue(ctx, limits)
        elif loop.exhausted:
            raise ReplyAborted("compression_exhausted: the turn ended at the failed call above")
        elif responded and self._after_tool_calls(ctx.view.messages):
            real = loop.last_prompt_tokens
            if real <= 0:
                real = (
                    0
                    if real == -1
                    else rough_request_tokens(ctx.view.messages, ctx.tools, with_system=False)
                )
            if self._should_compress(real, limits):
                self._compress_context(ctx, "post_response")
        rough = rough_api_tokens(ctx.view.messages, ctx.tools)
        if (
            len(conversation(ctx.view.messages)) > 1
            and loop.attempts < MAX_TURN_COMPRESSION_ATTEMPTS
            and not loop.defer(rough, limits.threshold_tokens)
            and self._should_compress(rough, limits)
        ):
            loop.attempts += 1
            self._compress_context(ctx, "pre_api")

    def _prologue(self, ctx: ReplayContext, limits: Limits) -> None:
        """The turn prologue's preflight (turn_context.py:563-680): gated by
        ``_should_run_preflight_estimate``, measured by ``estimate_request_tokens_rough``, up to
        3 passes while they make progress; it does not spend the turn's attempts."""
        cfg, loop = self.cfg, self.loop
        rows = len(conversation(ctx.view.messages))
        if (
            rows <= cfg.protect_first_n + cfg.protect_last_n + 1
            and rough_messages_tokens(ctx.view.messages) < limits.threshold_tokens
        ):
            return
        tokens = rough_request_tokens(ctx.view.messages, ctx.tools)
        deferred = loop.defer(tokens, limits.threshold_tokens)
        if not deferred and loop.last_prompt_tokens >= 0 and tokens > loop.last_prompt_tokens:
            loop.last_prompt_tokens = tokens
        if deferred or not self._should_compress(tokens, limits):
            return
        for _ in range(PREFLIGHT_PASSES):
            before = tokens
            self._compress_context(ctx, "preflight")
            tokens = rough_request_tokens(ctx.view.messages, ctx.tools)
            after = len(conversation(ctx.view.messages))
            if not (after < rows or (before > 0 and tokens < before * PROGRESS_TOKEN_RATIO)):
                break  # _compression_made_progress (turn_context.py:190)
            if not self._should_compress(tokens, limits):
                break
            rows = after

    def after_call(self, call: ProviderCall, ctx: ReplayContext) -> None:
        """The provider's real prompt count of an accepted call: 0.19.0's
        ``update_from_response``; at the later commit, the anti-thrash verdict alone."""
        if not call.accepted:
            return
        limits = self._limits(ctx)
        if self.rules.agent_loop:
            self.update_from_response(call.true_tokens, limits)
            self._responded = True
            return
        if call.true_tokens < limits.threshold_tokens:
            self.ineffective_count = 0
        elif self.verify_pending:
            self.ineffective_count += 1
        self.verify_pending = False

    def update_from_response(self, prompt_tokens: int, limits: Limits) -> None:
        """``update_from_response`` (context_compressor.py:1459-1513): the usage-driven state
        after a call the provider accepted. The after-call hook calls this with the provider's
        prompt count (:meth:`after_call`)."""
        loop = self.loop
        loop.last_prompt_tokens = prompt_tokens
        if prompt_tokens > 0:
            loop.last_real_prompt_tokens = prompt_tokens
            if prompt_tokens < limits.threshold_tokens:
                if loop.awaiting_real_usage and loop.last_compression_rough > 0:
                    loop.rough_when_fit = loop.last_compression_rough
                self.ineffective_count = 0
            else:
                loop.rough_when_fit = 0
            if self.verify_pending:
                if prompt_tokens >= limits.threshold_tokens:
                    self.ineffective_count += 1
                else:
                    self.ineffective_count = 0
        self.verify_pending = False
        loop.awaiting_real_usage = False

    def _should_compress(self, tokens: int, limits: Limits) -> bool:
        return tokens >= limits.threshold_tokens and not self.blocked

    def _compress_context(self, ctx: ReplayContext, trigger: str) -> bool:
        """``agent._compress_context`` without ``force``: blocked by the anti-thrash guard,
        then ``compress()``, the re-inserted user turn and the usage latch. True when the
        message list changed."""
        if self.blocked:
            ctx.emit(
                ev.StrategySkipped(
                    strategy=self.name,
                    reason="ineffective",
                    trigger=trigger,
                    ineffective=self.ineffective_count,
                    fallback_streak=self.fallback_streak,
                )
            )
            return False
        before = ctx.view.messages
        messages, outcome = self.compress(before, ctx)
        if messages == list(before):  # "Compression made no progress": nothing else happens
            return False
        if outcome in ("compaction", "fallback_summary"):
            self._record_boundary(outcome)
        messages = ensure_user_turn(before, messages)
        changed = ctx.apply(
            outcome,
            messages,
            note=f"{trigger} compression #{self.compression_count}",
            sources=stand_ins(before, messages),
        )
        self.loop.compacted(rough_request_tokens(ctx.view.messages, ctx.tools))
        return changed

    def _loop_overflow(self, ctx: ReplayContext) -> bool:
        """The context-overflow handler (conversation_loop.py:3770-3830): one shared attempt,
        blocked by the anti-thrash guard, retried only on progress; otherwise the turn ends."""
        loop = self.loop
        loop.attempts += 1
        if loop.attempts > MAX_TURN_COMPRESSION_ATTEMPTS:
            loop.exhausted = True
            return False
        before_len, before = len(ctx.view), rough_messages_tokens(ctx.view.messages)
        self._compress_context(ctx, "overflow")
        after = rough_messages_tokens(ctx.view.messages)
        if len(ctx.view) < before_len or 0 < after < before * PROGRESS_TOKEN_RATIO:
            return True
        loop.exhausted = True
        return False

    @staticmethod
    def _starts_user_turn(messages: Sequence[Message]) -> bool:
        last = next((m for m in reversed(messages) if m.role != "system"), None)
        return last is not None and _is_actionable_user(last)

    @staticmethod
    def _after_tool_calls(messages: Sequence[Message]) -> bool:
        """The previous response had tool calls (the post-response check's branch)."""
        last = next((m for m in reversed(messages) if m.role == "assistant"), None)
        return last is not None and bool(last.tool_calls)

    def _compress_and_apply(self, ctx: ReplayContext) -> bool:
        """One compression; True when it made progress (fewer messages or < 95% tokens)."""
        before_len, before_tokens = len(ctx.view), ctx.view.estimated_tokens
        before = ctx.view.messages
        messages, outcome = self.compress(before, ctx)
        ctx.apply(
            outcome,
            messages,
            note=f"compression #{self.compression_count}",
            sources=stand_ins(before, messages),
        )
        return (
            len(ctx.view) < before_len
            or ctx.view.estimated_tokens < before_tokens * PROGRESS_TOKEN_RATIO
        )

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
        ctx.apply(
            "proactive_prune",
            pruned,
            note=f"{count} tool result(s) pruned",
            sources=stand_ins(messages, pruned),
        )


def ensure_user_turn(original: Sequence[Message], compressed: list[Message]) -> list[Message]:
    """``_ensure_compressed_has_user_turn`` (conversation_compression.py:676-695): with no real
    user message left, re-insert the last one before the first assistant message not preceded
    by a user turn, else at the end (a marker when the history has none)."""
    if any(_is_actionable_user(m) for m in compressed):
        return compressed
    anchor = next((m for m in reversed(original) if _is_actionable_user(m)), None)
    anchor = anchor if anchor is not None else Message("user", NO_USER_TURN_MARKER)
    out = list(compressed)
    for i, message in enumerate(out):
        if message.role == "assistant" and (i == 0 or out[i - 1].role != "user"):
            return [*out[:i], anchor, *out[i:]]
    if not out or out[-1].role != "user" or is_summary_message(out[-1]):
        return [*out, anchor]
    merged = f"{anchor.content}\n\n{out[-1].content}".strip()  # the anchor leads
    return [*out[:-1], out[-1].with_text(merged)]
