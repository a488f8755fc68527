"""``sliding_window``: keep the system messages and the last ``keep_rounds`` whole rounds.

Source: the "sliding window" pattern of the ContextManager design article (docs/sources.md):
"keep system + the most recent N rounds of user/assistant/tool". Rounds come from
:func:`ctxbench.pairing.rounds`, so a tool call and its results are never split.

Knobs (defaults):
- ``keep_rounds`` (8): rounds kept in the prompt;
- ``pin_first_user`` (False): also keep the first user message (the original task);
- ``trigger_ratio`` (0.0): slide only when the estimate reaches this fraction of the budget;
  0 slides before every call, which is what a plain sliding window does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxbench.engine.context import ReplayContext
from ctxbench.engine.strategy import Starter
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.layers import CONTEXT_MANAGER_ARTICLE
from ctxbench.trace import Message


@dataclass(frozen=True)
class SlidingWindowConfig:
    keep_rounds: int = field(default=8, metadata={"help": "whole rounds kept in the prompt"})
    pin_first_user: bool = field(
        default=False, metadata={"help": "also keep the first user message"}
    )
    trigger_ratio: float = field(
        default=0.0, metadata={"help": "slide only at this fraction of the budget (0 = always)"}
    )

    def __post_init__(self) -> None:
        if self.keep_rounds < 1:
            raise ValueError(f"keep_rounds must be >= 1, not {self.keep_rounds}")
        if not 0.0 <= self.trigger_ratio <= 1.0:
            raise ValueError(f"trigger_ratio must be within [0, 1], not {self.trigger_ratio}")


def window_of(
    messages: tuple[Message, ...], keep_rounds: int, pin_first_user: bool
) -> list[Message]:
    """System messages, optionally the first user message, and the last ``keep_rounds`` rounds."""
    from ctxbench.pairing import rounds

    segs = rounds(messages)
    kept: set[int] = {i for i, m in enumerate(messages) if m.role == "system"}
    for r in segs[-keep_rounds:]:
        kept.update(r.indices)
    if pin_first_user:
        first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
        if first_user is not None:
            kept.add(first_user)
    return [m for i, m in enumerate(messages) if i in kept]


class SlidingWindow(Strategy[SlidingWindowConfig]):
    name = "sliding_window"
    summary = "System + the last N whole rounds (optionally pinning the first user message)."
    source = f"{CONTEXT_MANAGER_ARTICLE}, 'Sliding window'"
    Config = SlidingWindowConfig
    default_estimator = "chars4"
    starter = Starter(
        1, "system + the last N whole rounds", "{ keep_rounds = [4, 8] }  # a list is an axis"
    )

    def before_call(self, ctx: ReplayContext) -> None:
        cfg = self.config
        budget = self.budget(ctx)
        if cfg.trigger_ratio > 0 and ctx.view.estimated_tokens < cfg.trigger_ratio * budget:
            return
        messages = ctx.view.messages
        if len(ctx.view.rounds()) <= cfg.keep_rounds:
            return
        ctx.apply("sliding_window", window_of(messages, cfg.keep_rounds, cfg.pin_first_user))
