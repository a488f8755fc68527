"""The strategy adaptor: a released framework, run by its driver, as a ctxbench strategy.

The adaptor keeps the replay's full recorded history and sends the driver only what was
appended since the previous call; the driver holds the framework's own state (memory, breaker,
attempt budget) and answers with the prompt the framework would send. The adaptor turns that
answer into the usual events: the framework's re-assembly of its prompt from memory (``base``)
replaces the view without an event (it is not a compaction), each layer that ran is a
``ctx.apply`` (``compaction`` + ``context.status``), summaries go through ``ctx.summarize``,
a framework exception inside a call fails it with the exception text (``ReplyAborted``), and a
``shipped`` event at the start records the release, the environment's hash and the driver.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ctxbench.engine import events as ev
from ctxbench.engine.strategy import ProviderCall, ReplyAborted
from ctxbench.errors import SummarizerError
from ctxbench.shipped import environment
from ctxbench.shipped.process import DRIVERS_DIR, DriverProcess, acquire
from ctxbench.shipped.protocol import (
    PROTOCOL_VERSION,
    ProtocolError,
    decode_prompt,
    encode_message,
    encode_tools,
)
from ctxbench.shipped.releases import Release
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.layers import FullHistory
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import Message

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext
    from ctxbench.errors import ProviderOverflowError

#: the adaptor's own event type (the ``shipped`` event at the start is the engine's: the row
#: reads the release and the environment's hash from it)
SHIPPED = ev.SHIPPED
SHIPPED_CALL = ev.SHIPPED_CALL


class ShippedStrategy(Strategy):
    """Base of every ``shipped:<framework>@<version>`` strategy (subclasses set ``release``)."""

    release: ClassVar[Release]
    #: where the release's rule differs from a reproduction of the same system (``ctxbench
    #: strategies`` prints it)
    differs: ClassVar[str] = ""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.env = self.environment()
        self.history = FullHistory()
        self._sent = 0
        self._driver: DriverProcess | None = None
        self._ctx: ReplayContext | None = None
        self._last_call: dict[str, Any] | None = None

    # -- where the framework lives (tests of the fault paths override these) --------------------------
    def environment(self) -> environment.Environment:
        return environment.require(self.release)

    def driver_program(self) -> Path:
        return DRIVERS_DIR / self.release.driver

    def driver_config(self, ctx: ReplayContext) -> dict[str, Any]:
        """The framework's own config fields, as the driver passes them to the framework."""
        return dict(asdict(self.config))

    # -- hooks ----------------------------------------------------------------------------------------
    def on_start(self, ctx: ReplayContext) -> None:
        self._ctx = ctx
        self._driver = acquire(self.env, self.driver_program())
        ready = self._driver.exchange(
            {
                "op": "start",
                "protocol": PROTOCOL_VERSION,
                "trace_id": ctx.trace_id,
                "window": ctx.window,
                "reserved": ctx.reserved,
                "config": self.driver_config(ctx),
                "tools": encode_tools(ctx.tools),
            },
            self._answer,
            "ready",
        )
        ctx.emit(
            ev.Shipped(
                release=self.release.key,
                framework_version=str(ready.get("version", "")),
                env_hash=self.env.manifest.env_hash,
                driver=self.driver_program().name,
                notes=ready.get("notes", []),
            )
        )

    def before_call(self, ctx: ReplayContext) -> None:
        history = self.history.sync(ctx.view.messages)
        new = [encode_message(m, i) for i, m in enumerate(history[self._sent :], self._sent)]
        self._sent = len(history)
        reply = self._request(
            ctx, {"op": "call", "call": ctx.call, "append": new, "last_call": self._last_call}
        )
        self._apply(ctx, reply, history)
        self._record(ctx, reply)
        # the framework raised inside the call: the reply fails (not the probes' read after the
        # last call, which is no call)
        if reply.get("exception") and ctx.call < ctx.n_calls:
            raise ReplyAborted(str(reply["exception"]))

    def after_call(self, call: ProviderCall, ctx: ReplayContext) -> None:
        """Remember the verdict: the next ``call`` request carries it (post-response usage)."""
        self._last_call = {"ok": call.accepted, "prompt_tokens": call.true_tokens}

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        reply = self._request(ctx, {"op": "overflow", "error": str(error), "attempt": attempt})
        self._apply(ctx, reply, self.history.messages)
        self._record(ctx, reply)
        if reply.get("exception"):  # reacting to the overflow raised: the call fails with it
            raise ReplyAborted(str(reply["exception"]))
        return bool(reply.get("retry"))

    # -- the exchange -------------------------------------------------------------------------------------
    def _request(self, ctx: ReplayContext, payload: Mapping[str, Any]) -> dict[str, Any]:
        if self._driver is None:
            raise RuntimeError("on_start was not called")
        return self._driver.exchange(payload, self._answer, "prompt")

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """Serve a driver's ``summarize`` with the run's summarizer."""
        ctx = self._ctx
        if request["op"] != "summarize" or ctx is None:
            raise ProtocolError(f"unexpected request from the driver: {request['op']!r}")
        items = request.get("messages") or []
        history = self.history.messages
        messages = tuple(
            decode_prompt([{"ref": i} if isinstance(i, int) else i for i in items], history)
        )
        layer = str(request.get("layer", "summary"))
        summary = SummaryRequest(
            strategy=self.name,
            layer=layer,
            prompt=str(request.get("prompt", "")),
            messages=messages,
            sections=tuple(request.get("sections") or ()),
            max_tokens=request.get("max_tokens"),
            previous_summary=request.get("previous_summary"),
            key=ctx.request_key(str(request.get("key") or layer)),
            send_max_tokens=bool(request.get("send_max_tokens", True)),
        )
        try:
            text = ctx.summarize(summary)
        except SummarizerError as exc:
            return {"op": "summary", "ok": False, "text": "", "error": exc.message}
        return {"op": "summary", "ok": True, "text": text, **self.summary_extra(text)}

    def summary_extra(self, text: str) -> dict[str, Any]:
        """More of a summary answer than its text, for a driver whose framework wants it in
        another shape (AgentScope: the structured output's fields)."""
        return {}

    def _apply(self, ctx: ReplayContext, reply: Mapping[str, Any], history: list[Message]) -> None:
        """Make the view the framework's prompt. When it is what the model saw last plus what
        was appended (a stateless trim giving the same cut, a layer redoing last call's work),
        nothing is recorded: the prompt did not change. Otherwise the framework's re-assembly
        from memory replaces the view silently and each layer that ran is a ``ctx.apply``."""
        steps = [s for s in reply.get("steps") or () if isinstance(s, Mapping)]
        if len(steps) != len(reply.get("steps") or ()):
            raise ProtocolError("every step must be an object with a layer and messages")
        decoded = [(str(s.get("layer", "shipped")), decode_prompt(s.get("messages"), history),
                    _sources(s["messages"], history), str(s.get("note", ""))) for s in steps]  # fmt: skip
        base = decode_prompt(reply["base"], history) if reply.get("base") is not None else None
        final = decoded[-1][1] if decoded else base
        if final is None or ctx.view.shows(final):
            return
        if base is not None and not ctx.view.shows(base):
            ctx.reassemble(base, _sources(reply["base"], history))
        for layer, messages, sources, note in decoded:
            ctx.apply(layer, messages, note=note, sources=sources)

    def _record(self, ctx: ReplayContext, reply: Mapping[str, Any]) -> None:
        """The framework's own account of the call: layers that ran, counts, exception."""
        self.history.sent(ctx.view.messages)
        ctx.emit(
            ev.ShippedCall(
                layers=[
                    str(s.get("layer")) for s in reply.get("steps") or () if isinstance(s, Mapping)
                ],
                info=dict(reply.get("info") or {}),
                exception=reply.get("exception"),
            )
        )


def _sources(items: list[Any], history: list[Message]) -> list[Message | None]:
    """The history message each decoded prompt item stands for (its ``ref``; None: new), so a
    rewrite keeps its trace index by the engine's one rule (``Recorder.inherit`` of :mod:`ctxbench.engine.recorder`)."""
    refs = [i.get("ref") if isinstance(i, Mapping) else None for i in items]
    return [history[r] if isinstance(r, int) else None for r in refs]
