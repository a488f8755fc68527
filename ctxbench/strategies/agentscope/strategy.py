"""``AgentScopeStrategy``: the hooks of a replay (``before_call``: images, compression,
runtime state; tool results on arrival; the reply an exception ends), on the pure steps.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import ClassVar

from ctxbench.counting.estimators import AgentScopeCounter
from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext, safe_component
from ctxbench.errors import ProviderOverflowError, SummarizerError
from ctxbench.strategies.agentscope.config import AgentScopeConfig
from ctxbench.strategies.agentscope.layers import (
    Meter,
    PerMessage,
    WholePrompt,
    _is_image,
    _with_parts,
    append_reminder,
    split_context,
    split_tool_result,
)
from ctxbench.strategies.agentscope.offload import Offloader, image_file
from ctxbench.strategies.agentscope.prompts import (
    CONTEXT_OFFLOAD_REMINDER,
    HINT_MARK,
    IMAGE_OFFLOADED,
    IMAGE_REMOVED,
    MAX_ITERS_HINT,
    MAX_ITERS_MARK,
    SUMMARY_MARK,
    SUMMARY_SECTIONS,
    TOOL_RESULT_OFFLOAD_REMINDER,
    TRUNCATED_SUMMARY,
    TRUNCATION_REMINDER,
    parse_summary_fields,
    render_compression_prompt,
    schema_tool_json,
)
from ctxbench.strategies.agentscope.releases import RELEASES
from ctxbench.strategies.base import ReplyAborted, Strategy
from ctxbench.strategies.releases import release_summaries
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import Message, Part


class AgentScopeStrategy(Strategy[AgentScopeConfig]):
    name = "agentscope"
    summary = "AgentScope v2: structured summary at trigger_ratio, keep reserve_ratio recent, truncate big results."
    source = "agentscope-ai/agentscope src/agentscope/agent/_agent.py, _config.py"
    Config = AgentScopeConfig
    default_estimator = "agentscope"
    #: the ``release`` knob's values and what each reproduces (``ctxbench strategies``)
    releases: ClassVar[dict[str, str]] = release_summaries(RELEASES)

    def __init__(self, config: AgentScopeConfig | None = None) -> None:
        super().__init__(config)
        self.cfg = self.config
        #: ``state.summary``: the rendered summary shown after the system prompt
        self.summary_text = ""
        #: every compressed message so far (the session's offloaded context file)
        self.offloaded: list[Message] = []
        #: writes the offloaded files: names from an allow-list, bounded per run
        self.offloader = Offloader()
        self.rules = self.cfg.rules
        self._whole: WholePrompt | None = None
        #: 2.0.11: the prompt length when an exception ended the reply (None: replying)
        self._ended_at: int | None = None
        #: ``cur_iter``: the model calls made in the current reply before this one
        self._iteration = 0

    # -- budget ---------------------------------------------------------------------------------
    def context_size(self, ctx: ReplayContext) -> int:
        return self.cfg.context_size if self.cfg.context_size is not None else ctx.window

    def budget(self, ctx: ReplayContext) -> int:
        return self.context_size(ctx)

    def meter(self, ctx: ReplayContext) -> Meter:
        """How the model counts a request: 2.0.11's whole-prompt rule when deciding with
        AgentScope's own estimate, else the estimator per message (any other estimator)."""
        if self.rules.whole_prompt and isinstance(ctx.estimator, AgentScopeCounter):
            if self._whole is None:
                self._whole = WholePrompt(ctx.tools)
            return self._whole
        return PerMessage(ctx.estimator, ctx.view.est_overhead)

    def prompt_tokens(self, ctx: ReplayContext) -> int:
        """``count_tokens(**_prepare_model_input())`` of the current prompt."""
        return self.meter(ctx).tokens(ctx.view.messages)

    # -- hooks ----------------------------------------------------------------------------------
    def on_tool_result(self, message: Message, ctx: ReplayContext) -> Message:
        kept, offloaded = split_tool_result(message, self.cfg.tool_result_limit, ctx.estimator)
        if not offloaded:
            return message
        offload_reminder = ""
        if self.cfg.offloads:
            stem = safe_component(message.tool_call_id or f"call{ctx.call}")
            path = self.offloader.write(
                ctx,
                f"offload/{safe_component(ctx.trace_id)}/tool_result-{stem}.txt",
                _blocks_bytes(offloaded),
            )
            offload_reminder = TOOL_RESULT_OFFLOAD_REMINDER.format(path=path)
        kept = append_reminder(kept, TRUNCATION_REMINDER.format(offload_reminder=offload_reminder))
        ctx.tool_result_changed("tool_result_limit", message, kept, note="tool result truncated")
        return kept

    def before_call(self, ctx: ReplayContext) -> None:
        #: the previous reply is still acting: no exception and no max-iters call ended it
        acting = self._ended_at is None and self._iteration < self.cfg.max_iters
        if self._ended_at is not None:
            if not self._resume(ctx, self._ended_at):
                raise ReplyAborted("the reply ended at the exception above")
            self._ended_at = None
        loop = self.rules.reply_loop
        if loop and acting and _interrupts_acting(ctx.view.messages):
            self._last_iteration(ctx)
        first_iteration = (  # decided before compression empties the context
            _starts_reply(ctx.view.messages) or (loop and self._iteration >= self.cfg.max_iters)
        )
        self._iteration = 0 if first_iteration else self._iteration + 1
        if loop and self._iteration == self.cfg.max_iters:  # the reply's last round: a hint
            self._max_iters_hint(ctx)
        self.limit_images(ctx)
        self.compress(ctx)
        self.inject_runtime_state(ctx, first_iteration)

    def _max_iters_hint(self, ctx: ReplayContext) -> None:
        hint = MAX_ITERS_HINT.format(max_iters=self.cfg.max_iters)
        ctx.view.replace([*ctx.view.messages, Message("user", hint, meta=dict(MAX_ITERS_MARK))])

    def _last_iteration(self, ctx: ReplayContext) -> None:
        """Recorded user input after tool results: the agent was still acting, so 2.0.11 runs
        one more reasoning step of that reply before the input can start the next one (its
        model call, answered with nothing, saves nothing and ends the reply; the driver's turn
        structure). That step's images, compression and runtime state act on the context
        without the input (``_reply_impl``: ``_limit_context_images``, ``compress_context``,
        ``_inject_runtime_state`` before ``_reasoning``); an exception it raises ends only
        that reply. Its last round gets the max-iters hint, as any call of a reply does."""
        messages = list(ctx.view.messages)
        start = len(messages)
        while (
            start
            and messages[start - 1].role == "user"
            and not messages[start - 1].meta.get("agentscope")
        ):
            start -= 1
        ctx.view.replace(messages[:start])
        try:
            self._iteration += 1
            if self._iteration == self.cfg.max_iters:
                self._max_iters_hint(ctx)
            self.limit_images(ctx)
            self.compress(ctx)
            self.inject_runtime_state(ctx, False)
        except ReplyAborted:
            self._ended_at = None
        finally:
            ctx.view.replace([*ctx.view.messages, *messages[start:]])

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        """No reactive compaction; 2.0.11: the provider's error propagates out of ``reply()``
        (``ModelConfig.max_retries`` 0, no fallback model), ending the reply."""
        if self.rules.reply_loop:
            self._ended_at = len(ctx.view.messages)
        return False

    def _resume(self, ctx: ReplayContext, ended_at: int) -> bool:
        """After an exception ended the reply, the recorded turns of that reply never reach
        the agent: the context is the one it had then, plus new user input (a new reply).
        Returns whether there is new input."""
        messages = list(ctx.view.messages)
        start = len(messages)
        while start > ended_at and messages[start - 1].role == "user":
            start -= 1
        ctx.view.replace([*messages[:ended_at], *messages[start:]])
        return start < len(messages)

    # -- the steps of a call ---------------------------------------------------------------------
    def limit_images(self, ctx: ReplayContext) -> None:
        """``_limit_context_images``: replace the oldest images beyond ``max_image_num``."""
        messages = list(ctx.view.messages)
        refs = [
            (i, j)
            for i, m in enumerate(messages)
            if m.role != "system"
            for j, p in enumerate(m.parts or ())
            if _is_image(p)
        ]
        excess = len(refs) - self.cfg.max_image_num
        if excess <= 0:
            return
        for i, j in refs[:excess]:
            parts = list(messages[i].parts or ())
            parts[j] = Part("text", self._image_reminder(parts[j], ctx))
            messages[i] = _with_parts(messages[i], parts)
        ctx.apply("image_limit", messages, note=f"{excess} image(s) replaced")

    def _image_reminder(self, part: Part, ctx: ReplayContext) -> str:
        raw_name = part.data.get("name")
        name = f"named '{raw_name}' " if isinstance(raw_name, str) and raw_name else ""
        url = part.url
        if not url.startswith(("http://", "https://")):
            url = self._offload_data_url(url, ctx) if self.cfg.offloads else ""
        if url:
            return IMAGE_OFFLOADED.format(name=name, url=url)
        return IMAGE_REMOVED.format(name=name)

    def _offload_data_url(self, url: str, ctx: ReplayContext) -> str:
        found = image_file(url)  # the extension from an allow-list, never the trace's
        if found is None:
            return ""
        extension, data = found
        digest = hashlib.sha256(data).hexdigest()[:12]
        return self.offloader.write(
            ctx, f"offload/{safe_component(ctx.trace_id)}/image-{digest}.{extension}", data
        )

    def compress(self, ctx: ReplayContext) -> None:
        """``_compress_context_impl``."""
        size = self.context_size(ctx)
        threshold = self.cfg.trigger_ratio * size
        if self.prompt_tokens(ctx) < threshold:
            return
        system, head, context = self._parts(ctx.view.messages)
        if not context:
            error = (
                f"The system prompt {'and the compression summary ' if self.summary_text else ''}"
                f"exceed(s) the compression threshold ({threshold} tokens), cannot be compressed."
            )
            ctx.emit(ev.StrategyError(strategy=self.name, error=error))
            if self.rules.reply_loop:  # 2.0.11 raises RuntimeError out of the reply
                self._ended_at = len(ctx.view.messages)
                raise ReplyAborted(f"RuntimeError: {error}")
            return
        meter = self.meter(ctx)
        compress, reserve, sources = split_context(
            head, context, self.cfg.reserve_ratio * size, meter
        )
        if not compress:
            compress, reserve, sources = split_context(head, context, 0, meter)
        summary = self._summarize(system, compress, ctx)
        if summary is None:
            return
        if self.cfg.offloads:
            self.offloaded.extend(compress)
            path = self.offloader.append(  # one file, appended to: AgentScope's offload file
                ctx,
                f"offload/{safe_component(ctx.trace_id)}/context.jsonl",
                "".join(
                    json.dumps(m.to_dict(), ensure_ascii=False) + "\n" for m in compress
                ).encode("utf-8", "surrogatepass"),
            )
            reminder = CONTEXT_OFFLOAD_REMINDER.format(path=path)
            if reminder not in summary:
                summary += "\n" + reminder
        self.summary_text = summary
        ctx.apply(
            "compression",
            [*system, Message("user", summary, meta=dict(SUMMARY_MARK)), *reserve],
            note=f"{len(compress)} message(s) compressed, {len(reserve)} kept",
            sources=[*system, None, *sources],
        )

    def _parts(
        self, messages: Sequence[Message]
    ) -> tuple[list[Message], list[Message], list[Message]]:
        """(system messages, system + summary as counted with every split, the context)."""
        system = [m for m in messages if m.role == "system"]
        summary = [m for m in messages if m.meta.get("agentscope") == "summary"]
        context = [
            m for m in messages if m.role != "system" and m.meta.get("agentscope") != "summary"
        ]
        return system, system + summary[-1:], context

    def _summarize(
        self, system: list[Message], compress: list[Message], ctx: ReplayContext
    ) -> str | None:
        """The new summary text, the truncation fallback, or None (state left unchanged)."""
        size = self.context_size(ctx)
        try:
            return self._structured_summary(system, compress, ctx, "compression")
        except SummarizerError as first:
            error: SummarizerError = first
            if self._request_tokens(system, compress, ctx) > size:
                start = len(compress)
                for i in range(1, len(compress) + 1):
                    start = i
                    if self._request_tokens(system, compress[i:], ctx) < (
                        size * self.cfg.trigger_ratio
                    ):
                        break
                try:
                    return self._structured_summary(
                        system, compress[start:], ctx, "compression_retry"
                    )
                except SummarizerError as second:
                    error = second
        if not self.cfg.compression_fallback_to_truncation:
            ctx.emit(ev.StrategyError(strategy=self.name, error=f"{error.kind}: {error.message}"))
            return None
        return self.summary_text or TRUNCATED_SUMMARY

    def _structured_summary(
        self, system: list[Message], messages: list[Message], ctx: ReplayContext, layer: str
    ) -> str:
        size = self.context_size(ctx)
        request = SummaryRequest(
            strategy=self.name,
            layer=layer,
            prompt=render_compression_prompt(system, self.summary_text, messages, self.cfg.prompt),
            messages=tuple(messages),
            sections=SUMMARY_SECTIONS,
            # the call's room: the band above trigger_ratio that AgentScope reserves for it
            max_tokens=max(1, round((1 - self.cfg.trigger_ratio) * size)),
            previous_summary=self.summary_text or None,
            key=ctx.request_key(layer),
        )
        fields = parse_summary_fields(ctx.summarize(request))
        return self.cfg.summary_template.format(**fields)

    def _request_tokens(
        self, system: list[Message], messages: list[Message], ctx: ReplayContext
    ) -> int:
        head = [*system, *([Message("user", self.summary_text)] if self.summary_text else [])]
        prompt = [*head, *messages, Message("user", self.cfg.prompt)]
        return ctx.estimator.count_prompt(prompt) + ctx.estimator.count(schema_tool_json())

    def inject_runtime_state(self, ctx: ReplayContext, first_iteration: bool) -> None:
        """``_inject_runtime_state``: the time (2.0.11: when no injection in the context records
        one, i.e. at the first call and after a compression removed it; the replay's clock never
        advances, so ``time_interval`` never elapses) and the context-length pre-warning (first
        iteration of a reply only), as ``<key>value</key>`` lines in the template."""
        if not self.cfg.inject_runtime_state:
            return
        injections: dict[str, str] = {}
        if self.rules.time_injection and not any(
            m.meta.get("agentscope") == "runtime_state" and "<current-time>" in m.content
            for m in ctx.view.messages
        ):
            injections["current-time"] = self.cfg.current_time
            injections["timezone"] = self.cfg.timezone
        if first_iteration:
            size = self.context_size(ctx)
            tokens = self.prompt_tokens(ctx)
            band = max(0.0, self.cfg.trigger_ratio - self.cfg.context_buffer_ratio)
            if tokens > band * size:
                injections["context-length"] = (
                    f"Your current context contains {tokens} tokens. When reaching "
                    f"{int(self.cfg.trigger_ratio * size)} tokens, your context will be compressed."
                )
        if not injections:
            return
        state = "\n".join(f"<{k}>{v}</{k}>" for k, v in injections.items())
        ctx.apply(
            "runtime_state",
            [
                *ctx.view.messages,
                Message(
                    "user",
                    self.cfg.state_template.replace("{runtime_state}", state),
                    meta=dict(HINT_MARK),
                ),
            ],
            note=", ".join(injections),
        )


def _last_turn(messages: Sequence[Message]) -> Message | None:
    """The last recorded non-system message (the strategy's own additions skipped)."""
    return next(
        (m for m in reversed(messages) if m.role != "system" and not m.meta.get("agentscope")),
        None,
    )


def _interrupts_acting(messages: Sequence[Message]) -> bool:
    """Recorded user input ends the view and the recorded turn before it is a tool result
    (or a call): the reply was still acting when the input arrived."""
    recorded = [m for m in messages if m.role != "system" and not m.meta.get("agentscope")]
    i = len(recorded)
    while i and recorded[i - 1].role == "user":
        i -= 1
    if i in (0, len(recorded)) or messages[-1].role != "user":
        return False
    before = recorded[i - 1]
    return before.role == "tool" or (before.role == "assistant" and bool(before.tool_calls))


def _starts_reply(messages: Sequence[Message]) -> bool:
    """``cur_iter == 0``: the first call of a ``reply()``: the run's first call, recorded user
    input, or a turn after an answer without tool calls (that answer ended the reply)."""
    last = _last_turn(messages)
    return last is None or last.role == "user" or (last.role == "assistant" and not last.tool_calls)


def _blocks_bytes(blocks: Sequence[Part]) -> bytes:
    """Offloaded blocks as a file: text as is, other blocks as JSON lines."""
    pieces: list[str] = []
    for part in blocks:
        pieces.append(part.text if part.is_text else json.dumps(part.to_dict(), ensure_ascii=False))
    return "\n".join(pieces).encode("utf-8", "surrogatepass")
