"""The strategy protocol: a compaction policy built from a frozen config.

A strategy instance lives for one replay (it may keep state, such as a summary or a failure
counter). The engine calls its hooks in this order for every recorded model call:

1. ``on_tool_results(batch, ctx)`` for the tool results (or DB-GPT ``Observation:`` messages)
   of one turn, appended since the last call; by default each goes through
   ``on_tool_result(message, ctx)``, which returns the message to keep (maybe truncated);
2. ``before_call(ctx)``: proactive compaction of ``ctx.view`` through ``ctx.apply``;
3. the provider checks the prompt; on an overflow, ``on_overflow(error, attempt, ctx)`` may
   compact and returns True to retry, False to give up (the call fails).

Strategies change the view only through ``ctx.apply(layer, messages)``, which records the
compaction event and the ``context.status`` that follows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ctxbench.trace import Message

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext
    from ctxbench.errors import ProviderOverflowError

#: DB-GPT's state thresholds, used to label ``context.status`` for every strategy.
DEFAULT_STATE_THRESHOLDS: tuple[tuple[float, str], ...] = (
    (1.0, "overflow"),
    (0.95, "critical"),
    (0.90, "error"),
    (0.70, "warning"),
)


class ReplyAborted(Exception):
    """Raised by ``before_call`` when the system's own code ends the reply before calling the
    model (AgentScope's ``RuntimeError`` on an empty context over the threshold). The engine
    records the call as failed with kind ``aborted``; the message is the system's."""


@dataclass(frozen=True)
class NoConfig:
    """A strategy without knobs."""


class Strategy:
    """Base class. Subclasses set ``name``, ``summary``, ``source``, ``Config`` and hooks."""

    name: ClassVar[str] = "strategy"
    summary: ClassVar[str] = ""
    source: ClassVar[str] = ""
    Config: ClassVar[type[Any]] = NoConfig
    #: the estimator the real system uses to decide (a counter spec)
    default_estimator: ClassVar[str] = "chars4"

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.Config()

    # -- hooks ----------------------------------------------------------------------------------
    def on_start(self, ctx: ReplayContext) -> None:
        """Called once before the first message is appended."""

    def on_tool_result(self, message: Message, ctx: ReplayContext) -> Message:
        """Return the tool result to append (default: unchanged)."""
        return message

    def on_tool_results(self, messages: list[Message], ctx: ReplayContext) -> list[Message]:
        """Return the batch of results answering one assistant turn (parallel calls together).

        The default passes each through :meth:`on_tool_result`; override for per-turn budgets.
        """
        return [self.on_tool_result(m, ctx) for m in messages]

    def before_call(self, ctx: ReplayContext) -> None:
        """Compact ``ctx.view`` before a model call if the strategy's rules say so."""

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        """React to a provider overflow; return True to retry the call."""
        return False

    def keeps_system(self) -> bool:
        """Whether this configuration promises to keep the system message (checked by the
        invariant tests; a strategy whose documented rule may drop it returns False)."""
        return True

    def keeps_pairs(self) -> bool:
        """Whether this configuration promises prompts with intact tool pairs (a faithful
        reproduction of a system that sends broken pairs returns False; the provider then
        rejects such a prompt as a failed call of kind ``pairing``)."""
        return True

    # -- how status events are labelled ------------------------------------------------------
    def budget(self, ctx: ReplayContext) -> int:
        """The token budget the strategy compares its estimate with (default: window - reserved)."""
        return ctx.window - ctx.reserved

    def state_of(self, ratio: float, budget: int) -> str:
        """The DB-GPT state name of a usage ratio."""
        if budget <= 0:
            return "overflow"
        for threshold, state in DEFAULT_STATE_THRESHOLDS:
            if ratio >= threshold:
                return state
        return "normal"
