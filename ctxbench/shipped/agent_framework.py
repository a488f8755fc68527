"""``shipped:agent_framework@1.26.0``: Microsoft Agent Framework's
``ContextWindowCompactionStrategy`` as its harness runs it.

Knobs are the strategy's constructor arguments with 1.26.0's defaults
(``agent_framework/_compaction.py:2851-2866``): tool results evicted above 0.5 of the input
budget, the oldest groups truncated above 0.8, the last 4 tool-call groups kept. The input
budget is ``max_context_window_tokens - max_output_tokens`` (None: the run window and the
run's reserved tokens). ``after_run`` runs the strategy on the stored history when a run ends
(the harness's ``CompactionProvider``). What the driver runs and emulates is in
``ctxbench/shipped/drivers/agent_framework_driver.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ctxbench.shipped.releases import AGENT_FRAMEWORK
from ctxbench.shipped.strategy import ShippedStrategy

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext


@dataclass(frozen=True)
class ContextWindowConfig:
    max_context_window_tokens: int | None = field(
        default=None, metadata={"help": "the model's window (None = the run window)"}
    )
    max_output_tokens: int | None = field(
        default=None, metadata={"help": "the output reservation (None = the run's reserved)"}
    )
    tool_eviction_threshold: float = 0.5
    truncation_threshold: float = 0.8
    keep_last_tool_call_groups: int = 4
    preserve_first_user_group: bool = False
    after_run: bool = field(
        default=True, metadata={"help": "compact the stored history when a run ends"}
    )

    def __post_init__(self) -> None:
        # _compaction.py:2895-2904
        if not 0.0 < self.tool_eviction_threshold <= 1.0:
            raise ValueError("tool_eviction_threshold must be in (0.0, 1.0].")
        if not 0.0 < self.truncation_threshold <= 1.0:
            raise ValueError("truncation_threshold must be in (0.0, 1.0].")
        if self.truncation_threshold < self.tool_eviction_threshold:
            raise ValueError("truncation_threshold must be >= tool_eviction_threshold.")
        if self.keep_last_tool_call_groups < 0:
            raise ValueError("keep_last_tool_call_groups must be greater than or equal to 0.")
        if self.max_context_window_tokens is not None and self.max_context_window_tokens <= 0:
            raise ValueError("max_context_window_tokens must be positive.")


class ShippedAgentFramework(ShippedStrategy):
    name = "shipped:agent_framework@1.26.0"
    summary = (
        "agent-framework-core 1.26.0's own ContextWindowCompactionStrategy: tool results "
        "evicted at 0.5, truncation at 0.8 of the input budget."
    )
    source = "PyPI agent-framework-core==1.26.0 agent_framework/_compaction.py"
    Config = ContextWindowConfig
    default_estimator = "chars4"
    release = AGENT_FRAMEWORK

    def budget(self, ctx: ReplayContext) -> int:
        c = self.config
        window = c.max_context_window_tokens or ctx.window
        output = c.max_output_tokens if c.max_output_tokens is not None else ctx.reserved
        return int(window - output)
