"""``shipped:strands@1.62.0``: Strands Agents' released conversation managers.

Knobs are the managers' constructor arguments with 1.62.0's defaults
(``SummarizingConversationManager``: ``summary_ratio`` 0.3, ``preserve_recent_messages`` 10,
``pin_first`` None; ``SlidingWindowConversationManager``: ``window_size`` 40,
``should_truncate_results`` True, ``per_turn`` False) and ``proactive_compression`` (None:
off, the release default, only the overflow makes it reduce; a ratio turns on the
``BeforeModelCallEvent`` check, whose ``True`` means 0.7). ``context_window_limit`` is the
model config's (None: the run window; the release falls back to 200,000 without it). What the
driver runs and emulates is in ``ctxbench/shipped/drivers/strands_driver.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ctxbench.shipped.releases import STRANDS
from ctxbench.shipped.strategy import ShippedStrategy

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext


@dataclass(frozen=True)
class StrandsReleaseConfig:
    manager: Literal["summarizing", "sliding_window"] = "summarizing"
    context_window_limit: int | None = field(
        default=None, metadata={"help": "the model config's window (None = the run window)"}
    )
    proactive_compression: float | None = field(
        default=None, metadata={"help": "compress before a call at this ratio (None = off)"}
    )
    summary_ratio: float = 0.3
    preserve_recent_messages: int = 10
    pin_first: int | None = None
    window_size: int = 40
    should_truncate_results: bool = True
    per_turn: int = field(default=0, metadata={"help": "sliding window every N calls (0 = off)"})

    def __post_init__(self) -> None:
        # conversation_manager.py:90
        if self.proactive_compression is not None and not 0 < self.proactive_compression <= 1:
            raise ValueError(
                "proactive_compression must be between 0 (exclusive) and 1 (inclusive), "
                f"not {self.proactive_compression}"
            )
        if self.window_size < 0 or self.per_turn < 0 or self.preserve_recent_messages < 0:
            raise ValueError("window_size, per_turn and preserve_recent_messages must be >= 0")
        if self.context_window_limit is not None and self.context_window_limit <= 0:
            raise ValueError(f"context_window_limit must be > 0, not {self.context_window_limit}")


class ShippedStrands(ShippedStrategy):
    name = "shipped:strands@1.62.0"
    summary = (
        "strands-agents 1.62.0's own conversation manager (summarizing by default; "
        "reduce on overflow, optional proactive compression)."
    )
    source = (
        "PyPI strands-agents==1.62.0 strands/agent/conversation_manager/, "
        "strands/event_loop/event_loop.py"
    )
    Config = StrandsReleaseConfig
    default_estimator = "chars4"
    release = STRANDS

    def budget(self, ctx: ReplayContext) -> int:
        limit: int | None = self.config.context_window_limit
        return limit if limit is not None else ctx.window
