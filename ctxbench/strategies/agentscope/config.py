"""``AgentScopeConfig``: the knobs, ``ContextConfig``'s fields with the release's defaults and
its validation (``agent/_config.py``, ``Agent._validate_configs``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ctxbench import config as configuration
from ctxbench.strategies.agentscope.prompts import SUMMARY_FIELDS, SUMMARY_TEMPLATE
from ctxbench.strategies.agentscope.releases import LATEST_RELEASE, RELEASES, AgentScopeRelease
from ctxbench.strategies.releases import check_release, release_field


@dataclass(frozen=True)
class AgentScopeConfig:
    release: Literal["2.0.11", "design"] = release_field(LATEST_RELEASE, RELEASES)
    context_size: int | None = field(
        default=None, metadata={"help": "model.context_size (None = the run window)"}
    )
    trigger_ratio: float = field(
        default=0.8, metadata={"help": "compress at this fraction of context_size (0 < r <= 0.9)"}
    )
    reserve_ratio: float = field(
        default=0.1, metadata={"help": "recent context kept verbatim (< trigger_ratio)"}
    )
    tool_result_limit: int = field(
        default=50_000, metadata={"help": "tokens per tool result before truncation"}
    )
    max_image_num: int = field(default=5, metadata={"help": "images kept in the context"})
    context_buffer_ratio: float = field(
        default=0.2, metadata={"help": "pre-warning band below trigger_ratio"}
    )
    offload: bool | None = field(
        default=None,
        metadata={"help": "an offloader is attached (None = the release's: 2.0.11 no, design yes)"},
    )
    compression_fallback_to_truncation: bool = field(
        default=True, metadata={"help": "on summary failure, drop the messages anyway"}
    )
    inject_runtime_state: bool = field(
        default=True, metadata={"help": "inject the context-length pre-warning"}
    )
    compression_prompt: str | None = field(
        default=None,
        metadata={"help": "the <system-hint> summary instruction (None = the release's)"},
    )
    summary_template: str = field(
        default=SUMMARY_TEMPLATE, metadata={"help": "renders the five summary fields"}
    )
    runtime_state_template: str | None = field(
        default=None, metadata={"help": "wraps injected runtime state (None = the release's)"}
    )
    current_time: str = field(
        default="1970-01-01T00:00:00",
        metadata={"help": "the replay's fixed clock, in time_format %Y-%m-%dT%H:%M:%S (2.0.11)"},
    )
    timezone: str = field(default="UTC", metadata={"help": "InjectionConfig.timezone (2.0.11)"})
    max_iters: int = field(
        default=50, metadata={"help": "ReActConfig.max_iters: model calls per reply (2.0.11)"}
    )

    def __post_init__(self) -> None:
        if not 0 < self.trigger_ratio <= 0.9:
            raise ValueError(f"trigger_ratio must be > 0 and <= 0.9, not {self.trigger_ratio}")
        if not 0 < self.reserve_ratio < 0.9:
            raise ValueError(f"reserve_ratio must be > 0 and < 0.9, not {self.reserve_ratio}")
        if self.reserve_ratio >= self.trigger_ratio:
            raise ValueError(
                f"reserve_ratio ({self.reserve_ratio}) must be smaller than trigger_ratio "
                f"({self.trigger_ratio}), as AgentScope's Agent._validate_configs requires"
            )
        if self.context_size is not None and self.context_size <= 0:
            raise ValueError(f"context_size must be positive, not {self.context_size}")
        if self.tool_result_limit <= 0:
            raise ValueError(f"tool_result_limit must be positive, not {self.tool_result_limit}")
        if self.max_iters < 1:
            raise ValueError(f"max_iters must be >= 1, not {self.max_iters}")
        if self.max_image_num < 0:
            raise ValueError(f"max_image_num must be >= 0, not {self.max_image_num}")
        if not 0 <= self.context_buffer_ratio <= 1:
            raise ValueError(
                f"context_buffer_ratio must be within [0, 1], not {self.context_buffer_ratio}"
            )
        configuration.check_template(
            self.summary_template, [name for name, _, _ in SUMMARY_FIELDS], key="summary_template"
        )
        check_release(self.release, RELEASES)
        if "{runtime_state}" not in self.state_template:
            raise ValueError("runtime_state_template must contain {runtime_state}")
        if (
            self.rules.time_injection
            and self.inject_runtime_state
            and self.context_buffer_ratio >= self.trigger_ratio
        ):
            raise ValueError(
                "The 'context_buffer_ratio' of the context config must be smaller than its "
                "'trigger_ratio', so that the context length is injected and the compression "
                "tool takes effect before the hard compression, got "
                f"{self.context_buffer_ratio} and {self.trigger_ratio}."
            )

    @property
    def rules(self) -> AgentScopeRelease:
        return RELEASES[self.release]

    @property
    def prompt(self) -> str:
        """The compression prompt, ``{current_time}`` filled with the replay's clock."""
        text = (
            self.compression_prompt
            if self.compression_prompt is not None
            else self.rules.compression_prompt
        )
        return text.replace("{current_time}", f"{self.current_time} ({self.timezone})")

    @property
    def state_template(self) -> str:
        if self.runtime_state_template is not None:
            return self.runtime_state_template
        return self.rules.runtime_state_template

    @property
    def offloads(self) -> bool:
        return self.offload if self.offload is not None else self.rules.offload
