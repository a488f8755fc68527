"""``shipped:inspect@0.3.285``: inspect's compaction handler as its ``react`` agent uses it.

Knobs are the compaction strategies' constructor arguments with 0.3.285's defaults
(``inspect_ai/model/_compaction/``: ``threshold`` 0.9 of the model's input tokens in
``types.py:42``; ``CompactionTrim.preserve`` 0.8; ``CompactionEdit.keep_tool_uses`` 3 and
``keep_tool_inputs`` True) and ``strategy``, which one runs (``summary`` by default; the
``react`` agent's own default is no compaction). ``context_window`` is the model's input
tokens (None: the run window; the release falls back to 128,000 for an unknown model). What
the driver runs and emulates is in ``ctxbench/shipped/drivers/inspect_driver.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ctxbench.shipped.releases import INSPECT
from ctxbench.shipped.strategy import ShippedStrategy

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext


@dataclass(frozen=True)
class InspectCompactionConfig:
    strategy: Literal["summary", "trim", "edit"] = "summary"
    threshold: float = field(
        default=0.9, metadata={"help": "fraction of the window (<= 1) or a token count (> 1)"}
    )
    context_window: int | None = field(
        default=None, metadata={"help": "the model's input tokens (None = the run window)"}
    )
    preserve: float = field(default=0.8, metadata={"help": "trim: share of messages kept"})
    keep_tool_uses: int = field(default=3, metadata={"help": "edit: tool results kept"})
    keep_tool_inputs: bool = True

    def __post_init__(self) -> None:
        if self.threshold <= 0:
            raise ValueError(f"threshold must be > 0, not {self.threshold}")
        if not 0 < self.preserve <= 1:
            raise ValueError(f"preserve must be within (0, 1], not {self.preserve}")
        if self.keep_tool_uses < 0:
            raise ValueError(f"keep_tool_uses must be >= 0, not {self.keep_tool_uses}")


class ShippedInspect(ShippedStrategy):
    name = "shipped:inspect@0.3.285"
    summary = "inspect-ai 0.3.285's own compaction handler (summary, trim or edit) at 0.9."
    source = "PyPI inspect-ai==0.3.285 inspect_ai/model/_compaction/"
    Config = InspectCompactionConfig
    default_estimator = "chars4"
    release = INSPECT

    def budget(self, ctx: ReplayContext) -> int:
        limit: int | None = self.config.context_window
        return limit if limit is not None else ctx.window
