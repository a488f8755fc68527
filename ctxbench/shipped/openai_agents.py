"""``shipped:openai_agents_trimmer@0.24.0``: the OpenAI Agents SDK's ``ToolOutputTrimmer``.

Knobs are the trimmer's fields with 0.24.0's defaults
(``agents/extensions/tool_output_trimmer.py:112-115``); ``trimmable_tools`` empty means None
(every tool). The SDK's other compaction is the provider's (server side), out of reach offline.
What the driver runs and emulates is in ``ctxbench/shipped/drivers/openai_agents_driver.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxbench.shipped.releases import OPENAI_AGENTS_TRIMMER
from ctxbench.shipped.strategy import ShippedStrategy

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext


@dataclass(frozen=True)
class ToolOutputTrimmerConfig:
    recent_turns: int = field(default=2, metadata={"help": "recent user turns never trimmed"})
    max_output_chars: int = field(default=500, metadata={"help": "outputs above this trim"})
    preview_chars: int = 200
    trimmable_tools: tuple[str, ...] = field(
        default=(), metadata={"help": "tools whose outputs trim (empty = all)"}
    )

    def __post_init__(self) -> None:
        # tool_output_trimmer.py:117-123
        if self.recent_turns < 1:
            raise ValueError(f"recent_turns must be >= 1, got {self.recent_turns}")
        if self.max_output_chars < 1:
            raise ValueError(f"max_output_chars must be >= 1, got {self.max_output_chars}")
        if self.preview_chars < 0:
            raise ValueError(f"preview_chars must be >= 0, got {self.preview_chars}")


class ShippedOpenAIAgentsTrimmer(ShippedStrategy):
    name = "shipped:openai_agents_trimmer@0.24.0"
    summary = "openai-agents 0.24.0's own ToolOutputTrimmer before each model call."
    source = "PyPI openai-agents==0.24.0 agents/extensions/tool_output_trimmer.py"
    Config = ToolOutputTrimmerConfig
    default_estimator = "chars4"
    release = OPENAI_AGENTS_TRIMMER

    def driver_config(self, ctx: ReplayContext) -> dict[str, Any]:
        c = self.config
        return {
            "recent_turns": c.recent_turns,
            "max_output_chars": c.max_output_chars,
            "preview_chars": c.preview_chars,
            "trimmable_tools": list(c.trimmable_tools) or None,
        }
