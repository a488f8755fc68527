"""``shipped:dbgpt@0.8.2``: DB-GPT's released context management, run by its driver.

Knobs are ``ContextBudgetConfig``'s fields as ``[service.web.agent_context]`` sets them, plus
the model name the tracker counts with. The defaults are the release's, except
``truncated_observation_max_chars``: 200 as on the app/TOML path (the core class's own default,
used when no config is passed, is 500). What the driver runs and what it emulates is in
``ctxbench/shipped/drivers/dbgpt_driver.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxbench.shipped.releases import DBGPT
from ctxbench.shipped.strategy import ShippedStrategy


@dataclass(frozen=True)
class DbgptReleaseConfig:
    max_context_tokens: int | None = field(
        default=None, metadata={"help": "model window (None = the provider window)"}
    )
    reserved_tokens: int | None = field(
        default=None, metadata={"help": "output reservation (None = the run's --reserved)"}
    )
    warning_threshold: float = 0.70
    error_threshold: float = 0.90
    critical_threshold: float = 0.95
    min_keep_recent_rounds: int = 3
    max_compact_failures: int = 3
    max_observation_age_rounds: int = 5
    truncated_observation_max_chars: int = field(
        default=200, metadata={"help": "app/TOML path 200; core class default 500"}
    )
    min_keep_tokens: int = 10_000
    model_name: str | None = field(
        default=None,
        metadata={"help": "tokenizer selection (None or unknown: cl100k_base; gpt-4o: o200k)"},
    )

    def __post_init__(self) -> None:
        if not 0 < self.warning_threshold <= self.error_threshold <= self.critical_threshold <= 1:
            raise ValueError(
                "thresholds must satisfy 0 < warning_threshold <= error_threshold <= "
                f"critical_threshold <= 1 (got {self.warning_threshold}, "
                f"{self.error_threshold}, {self.critical_threshold})"
            )
        for name in (
            "min_keep_recent_rounds",
            "max_compact_failures",
            "max_observation_age_rounds",
            "truncated_observation_max_chars",
            "min_keep_tokens",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, not {getattr(self, name)}")


class ShippedDbgpt(ShippedStrategy):
    name = "shipped:dbgpt@0.8.2"
    summary = "DB-GPT 0.8.2's own ContextManager and thinking(), rebuilt from memory every call."
    source = "PyPI dbgpt==0.8.2 dbgpt/agent/core/context/, agent/core/base_agent.py"
    Config = DbgptReleaseConfig
    default_estimator = "dbgpt"
    release = DBGPT

    def sends_tool_roles(self) -> bool:
        """The ReAct agent stores and sends rounds as text (Thought / Action / Action Input,
        then an ``Observation:`` user turn), so the provider sees no tool roles to pair."""
        return False
