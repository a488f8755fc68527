"""``shipped:agentscope@2.0.11``: AgentScope's released ``Agent.reply()``, run by its driver.

Knobs are ``ContextConfig``'s fields with 2.0.11's defaults (``compression_prompt`` and
``summary_template`` None: the release's own text), plus what the agent around it is built
with: the model's ``context_size`` (None: the run window; ``ChatModelBase``'s default is
32768), ``InjectionConfig``'s ``inject_runtime_state``/``timezone``/``time_format``,
``ReActConfig.max_iters`` and the replay's fixed clock. They are checked here with the
release's own rules (``_config.py`` field bounds, ``Agent._validate_configs``) before a driver
starts. What the driver runs and what it emulates is in
``ctxbench/shipped/drivers/agentscope_driver.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxbench.shipped.releases import AGENTSCOPE
from ctxbench.shipped.strategy import ShippedStrategy


@dataclass(frozen=True)
class AgentScopeReleaseConfig:
    context_size: int | None = field(
        default=None, metadata={"help": "model.context_size (None = the run window)"}
    )
    trigger_ratio: float = 0.8
    reserve_ratio: float = 0.1
    context_buffer_ratio: float = 0.2
    tool_result_limit: int = 50_000
    compression_fallback_to_truncation: bool = True
    compression_tool_enabled: bool = False
    max_image_num: int = 5
    compression_prompt: str | None = field(
        default=None, metadata={"help": "None = the release's compression prompt"}
    )
    summary_template: str | None = field(
        default=None, metadata={"help": "None = the release's summary template"}
    )
    inject_runtime_state: bool = True
    timezone: str = "UTC"
    time_format: str = "%Y-%m-%dT%H:%M:%S"
    current_time: str = field(
        default="1970-01-01T00:00:00",
        metadata={"help": "the replay's fixed clock, in time_format"},
    )
    max_iters: int = field(default=50, metadata={"help": "ReActConfig.max_iters per reply"})

    def __post_init__(self) -> None:
        # agent/_config.py field bounds
        if not 0 < self.trigger_ratio <= 0.9:
            raise ValueError(f"trigger_ratio must be > 0 and <= 0.9, not {self.trigger_ratio}")
        if not 0 < self.reserve_ratio < 0.9:
            raise ValueError(f"reserve_ratio must be > 0 and < 0.9, not {self.reserve_ratio}")
        if not 0 <= self.context_buffer_ratio <= 1:
            raise ValueError(
                f"context_buffer_ratio must be within [0, 1], not {self.context_buffer_ratio}"
            )
        if self.max_image_num < 0:
            raise ValueError(f"max_image_num must be >= 0, not {self.max_image_num}")
        if self.context_size is not None and self.context_size <= 0:
            raise ValueError(f"context_size must be positive, not {self.context_size}")
        if self.max_iters < 1:
            raise ValueError(f"max_iters must be >= 1, not {self.max_iters}")
        # Agent._validate_configs (agent/_agent.py:247-283)
        if self.reserve_ratio >= self.trigger_ratio:
            raise ValueError(
                f"reserve_ratio ({self.reserve_ratio}) must be smaller than trigger_ratio "
                f"({self.trigger_ratio}), as Agent._validate_configs requires"
            )
        if (
            self.inject_runtime_state or self.compression_tool_enabled
        ) and self.context_buffer_ratio >= self.trigger_ratio:
            raise ValueError(
                f"context_buffer_ratio ({self.context_buffer_ratio}) must be smaller than "
                f"trigger_ratio ({self.trigger_ratio}) while the runtime state is injected or "
                "the compression tool is on, as Agent._validate_configs requires"
            )
        if self.summary_template is not None and "{task_overview}" not in self.summary_template:
            raise ValueError("summary_template must use the summary fields, e.g. {task_overview}")


class ShippedAgentScope(ShippedStrategy):
    name = "shipped:agentscope@2.0.11"
    summary = "AgentScope 2.0.11's own Agent.reply() on the recorded turns (ContextConfig)."
    source = "PyPI agentscope==2.0.11 agentscope/agent/_agent.py, agent/_config.py, model/_base.py"
    Config = AgentScopeReleaseConfig
    default_estimator = "agentscope"
    release = AGENTSCOPE

    def summary_extra(self, text: str) -> dict[str, Any]:
        """The summary as ``SummarySchema``'s fields: the model's forced tool call (the driver
        emulates the model), parsed as the reproduction parses it."""
        from ctxbench.strategies.agentscope import parse_summary_fields

        return {"fields": parse_summary_fields(text)}
