"""``HermesStrategy``: the compressor's ``compress()`` driven by the agent loop's rules.

At ``release="0.19.0"`` the loop is hermes-agent 0.19.0's (:class:`AgentLoop`): it decides with
the rough ``len(str(msg))`` estimate before every API call and with the provider's real
``prompt_tokens`` after each tool-calling response. At ``"0000416b"`` ``compress()`` runs
whenever the strategy's estimate reaches the threshold before a call, as REFERENCE.md A4 reads
the later commit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

from ctxbench.counting.base import TokenCounter
from ctxbench.engine.context import ReplayContext
from ctxbench.errors import ProviderOverflowError, SummarizerError
from ctxbench.strategies.base import ProviderCall, ReplyAborted, Strategy
from ctxbench.strategies.hermes.fallback import (
    fallback_summary,
    is_context_error,
    is_terminal_failure,
)
from ctxbench.strategies.hermes.limits import RELEASES, HermesConfig, Limits, compute_limits
from ctxbench.strategies.hermes.measure import (
    BudgetCounter,
    conversation,
    rough_api_tokens,
    rough_messages_tokens,
    rough_request_tokens,
)
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
from ctxbench.strategies.releases import release_summaries
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import Message

MIN_SUMMARY_TOKENS = 2000


SUMMARY_RATIO = 0.20


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


class HermesStrategy(Strategy[HermesConfig]):
    name = "hermes"
    summary = "Hermes ContextCompressor: prune old tool output, protect head and token-budgeted tail, summarise the middle."
    source = "NousResearch/hermes-agent agent/context_compressor.py"
    Config = HermesConfig
    default_estimator = "hermes"
    #: the ``release`` knob's values and what each reproduces (``ctxbench strategies``)
    releases: ClassVar[dict[str, str]] = release_summaries(RELEASES)

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
        self.attempts = 0
        #: an accepted response whose usage the next call's post-response check has not read
        self._responded = False
        self.rules = self.cfg.rules
        self.loop = AgentLoop()
        self._budget_counter = BudgetCounter()

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
    def walk_counter(self, ctx: ReplayContext) -> TokenCounter:
        """The count of the compressor's walks: 0.19.0's floor-rounded budget estimate with the
        stored tool-call shape when deciding with Hermes' own estimate, else the estimator."""
        if self.rules.ceil_rounding or ctx.estimator.name != "hermes":
            return ctx.estimator
        return self._budget_counter

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
                "strategy.skipped",
                strategy=self.name,
                reason="ineffective",
                trigger=trigger,
                ineffective=self.ineffective_count,
                fallback_streak=self.fallback_streak,
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
            outcome, messages, note=f"{trigger} compression #{self.compression_count}"
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
        messages, outcome = self.compress(ctx.view.messages, ctx)
        ctx.apply(outcome, messages, note=f"compression #{self.compression_count}")
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
        ctx.apply("proactive_prune", pruned, note=f"{count} tool result(s) pruned")

    # -- compress() --------------------------------------------------------------------------------
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
        rules = self.rules
        counter = self.walk_counter(ctx)
        if len(messages) <= self._head_size(messages) + 3 + 1:
            self.ineffective_count += 1
            return list(messages), "compress_noop"
        msgs, pruned = prune_old_tool_results(
            messages,
            counter,
            protect_tail_count=self.cfg.protect_last_n,
            protect_tail_tokens=limits.tail_token_budget,
            floor_cap=rules.prune_floor_cap,
            pressure_pass=rules.pressure_pass,
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
            anchor_skips_summary=rules.anchor_skips_summary,
        )
        if rules.user_turn_bridge and end == latest_user:
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
        if rules.strip_handoffs:
            turns = [
                t for m in window if m.role != "system" and (t := strip_handoff(m)) is not None
            ]
        else:
            turns = self._turns_after_handoff(msgs, start, end)
        if not turns and rules.strip_handoffs:  # 0.19.0 summarises an empty window too
            self.ineffective_count += 1
            return msgs, layer
        real_user = any(_is_actionable_user(m) for m in msgs)
        if self.summary_has_user_turn is None or real_user:
            self.summary_has_user_turn = real_user

        summary, error = self._generate_summary(turns, auto_focus_topic(msgs), limits, ctx)
        if summary is None and (
            self.cfg.abort_on_summary_failure or (error is not None and is_terminal_failure(error))
        ):  # _last_compress_aborted: compress_context keeps the messages it was given
            return list(messages), "compress_noop"
        used_fallback = summary is None
        if summary is None:
            reason = f"{error.kind}: {error.message}" if error is not None else None
            summary = fallback_summary(turns, self.previous_summary, reason)

        head: list[Message] = []
        for i, msg in enumerate(msgs[:start]):
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
        tail = [
            t
            for m in msgs[end:]
            if (t := strip_handoff(m) if rules.strip_handoffs else m) is not None
        ]
        assembled = self._assemble(head, kept_system, summary, tail, start)
        self.compression_count += 1
        assembled = strip_historical_media(sanitize_tool_pairs(assembled))
        outcome = "fallback_summary" if used_fallback else "compaction"
        if not rules.agent_loop:
            self._record_boundary(outcome)
        return assembled, outcome

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
        if self.rules.user_summary_at_start:
            last_head_role = head[-1].role if head else "user"
            force_user = start == 0 or last_head_role == "system"
        else:  # 0.19.0: the system prompt is not in the list compress() sees
            conversation_head = [m for m in head if m.role != "system"]
            last_head_role = conversation_head[-1].role if conversation_head else "user"
            force_user = False
        first_tail_role = tail[0].role if tail else None
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
