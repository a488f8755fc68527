"""``shipped:deepagents@0.7.32``: deep agents' own summarization middleware
(``_DeepAgentsSummarizationMiddleware``, as ``create_deep_agent`` installs it through
``create_summarization_middleware``), not LangChain's configured.

Knobs and 0.7.32's defaults (``deepagents/middleware/summarization.py``): with a model profile
(``model_profile``, its ``max_input_tokens``: None = the run window) summarize at 0.85 of the
limit and keep the newest 0.10 of it, ``write_file``/``edit_file`` arguments of older messages
truncated to 2,000 characters past the same 0.85 (``compute_summarization_defaults``,
``:279``); without a profile 170,000 tokens / keep 6 messages, arguments truncated past 20
messages. ``trim_tokens_to_summarize`` None (the factory's default, ``:1873``: everything
evicted is summarized). ``max_output_tokens`` (None: the run's reserved) is the model's
output setting the input budget subtracts (``_input_budget``, ``:1494``: 0.95 x limit -
output).

How it differs from ``shipped:langchain_summarization`` (LangChain's middleware it wraps): the
state's messages are never rewritten (a ``_summarization_event`` marks the cutoff and each call
rebuilds the effective messages), the evicted messages are written to the backend's
``/conversation_history/<session>.md`` and the summary message names that file, large tool
arguments are truncated before summarizing, the complete request is checked against 0.95 of
the limit after summarizing, and a provider's overflow rejection summarizes and retries once.
What the driver runs and emulates is in ``ctxbench/shipped/drivers/deepagents_driver.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxbench.shipped.releases import DEEPAGENTS
from ctxbench.shipped.strategy import ShippedStrategy

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext


@dataclass(frozen=True)
class DeepAgentsConfig:
    model_profile: bool = field(
        default=True, metadata={"help": "the model has a profile (fraction defaults)"}
    )
    max_input_tokens: int | None = field(
        default=None, metadata={"help": "the profile's max_input_tokens (None = window)"}
    )
    max_output_tokens: int | None = field(
        default=None, metadata={"help": "the model's output tokens (None = the run's reserved)"}
    )
    trim_tokens_to_summarize: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_input_tokens", "max_output_tokens", "trim_tokens_to_summarize"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0, not {value}")


class ShippedDeepAgents(ShippedStrategy):
    name = "shipped:deepagents@0.7.32"
    summary = (
        "deepagents 0.7.32's own summarization middleware: 0.85 of the window, keeps 0.10, "
        "history offloaded to a backend file, old tool arguments truncated (no profile: "
        "170k tokens / 6 messages)."
    )
    source = "PyPI deepagents==0.7.32 deepagents/middleware/summarization.py"
    differs = (
        "unlike shipped:langchain_summarization (the middleware it wraps), the state is never "
        "rewritten, evicted messages go to a backend file the summary names, old tool "
        "arguments are truncated first, and an overflow summarizes and retries once"
    )
    Config = DeepAgentsConfig
    default_estimator = "chars4"
    release = DEEPAGENTS

    def driver_config(self, ctx: ReplayContext) -> dict[str, Any]:
        c = self.config
        return {
            "model_profile": c.model_profile,
            "max_input_tokens": c.max_input_tokens,
            "max_output_tokens": c.max_output_tokens,
            "trim_tokens_to_summarize": c.trim_tokens_to_summarize,
        }

    def budget(self, ctx: ReplayContext) -> int:
        limit: int | None = self.config.max_input_tokens
        return limit if limit is not None else ctx.window
