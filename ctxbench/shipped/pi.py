"""``shipped:pi@1.6.0``: pi's compaction as released on npm (``@earendil-works/pi-coding-agent``
1.6.0), run by a JS driver with the machine's node.

Knobs with 1.6.0's defaults (``dist/core/compaction/compaction.js:53``): ``reserve_tokens``
16,384 (compaction when the context passes ``context_window - reserve_tokens``,
``shouldCompact`` ``:173``) and ``keep_recent_tokens`` 20,000 (the newest messages kept,
``prepareCompaction`` ``:609``); ``context_window`` is the model's (None: the run window).
A window at or below 16,384 tokens is over the threshold before every call, but nothing is
summarized until the history's chars/4 estimate passes the 20,000 tokens kept: at 16k pi
overflows until then; retune both knobs for small windows. After an overflow rejection pi
compacts and retries once. What the driver runs and emulates is in
``ctxbench/shipped/drivers/pi_driver.mjs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxbench.shipped.releases import PI
from ctxbench.shipped.strategy import ShippedStrategy

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext


@dataclass(frozen=True)
class PiCompactionConfig:
    reserve_tokens: int = field(
        default=16_384, metadata={"help": "compact when the context passes window - this"}
    )
    keep_recent_tokens: int = field(
        default=20_000, metadata={"help": "the newest tokens kept verbatim after a compaction"}
    )
    context_window: int | None = field(
        default=None, metadata={"help": "the model's context window (None = the run window)"}
    )

    def __post_init__(self) -> None:
        if self.reserve_tokens < 0 or self.keep_recent_tokens <= 0:
            raise ValueError("reserve_tokens must be >= 0 and keep_recent_tokens > 0")
        if self.context_window is not None and self.context_window <= 0:
            raise ValueError(f"context_window must be > 0, not {self.context_window}")


class ShippedPi(ShippedStrategy):
    name = "shipped:pi@1.6.0"
    summary = (
        "@earendil-works/pi-coding-agent 1.6.0's own compaction (npm, node): past window - "
        "16,384 reserved, summarize all but the newest 20,000 tokens (compact(..., streamFn)); "
        "one compact-and-retry after an overflow."
    )
    source = "npm @earendil-works/pi-coding-agent@1.6.0 dist/core/compaction/compaction.js"
    Config = PiCompactionConfig
    default_estimator = "chars4"
    release = PI

    def driver_config(self, ctx: ReplayContext) -> dict[str, Any]:
        c = self.config
        return {
            "reserve_tokens": c.reserve_tokens,
            "keep_recent_tokens": c.keep_recent_tokens,
            "context_window": c.context_window,
        }

    def budget(self, ctx: ReplayContext) -> int:
        window: int | None = self.config.context_window
        return (window if window is not None else ctx.window) - self.config.reserve_tokens
