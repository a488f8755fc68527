"""LangChain v1's agent middleware as released (``langchain`` 1.5.2): ``SummarizationMiddleware``
and ``ContextEditingMiddleware``'s ``ClearToolUsesEdit``. (``deepagents`` 0.7.32 ships its own
``_DeepAgentsSummarizationMiddleware``, ``deepagents/middleware/summarization.py:578``, with
history offload to a backend and argument truncation: it needs a driver of its own.)

Knobs are the middleware constructors' own arguments with 1.5.2's defaults, except one:
``SummarizationMiddleware``'s ``trigger`` defaults to None in the release
(``langchain/agents/middleware/summarization.py:286``: it never summarizes until configured),
and a strategy that never compacts is ``none``; the strategy's default is the release
docstring's example ``("fraction", 0.8)`` (``:305``); ``trigger_fraction = "none"`` is not
accepted, set the three trigger knobs to choose. ``max_input_tokens`` is the chat model's
profile (None: the run window). What the driver runs and emulates is in
``ctxbench/shipped/drivers/langchain_middleware_driver.py``.

How they differ from ``langchain_trim`` (``trim_messages`` in a ``pre_model_hook``): the
summarization middleware *rewrites the agent state* (the summary and the kept messages replace
the history for good, so a later call never sees a dropped message again), it keeps a number of
messages rather than a token budget by default, and it never splits an AI message from its tool
results (``_find_safe_cutoff_point``), while ``trim_messages`` recomputes its cut from the whole
history before every call and can start the kept part on a tool result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ctxbench.shipped.releases import (
    LANGCHAIN_CLEAR_TOOL_USES,
    LANGCHAIN_SUMMARIZATION,
    LANGCHAIN_SUMMARIZATION_1_1,
)
from ctxbench.shipped.strategy import ShippedStrategy

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext

KeepKind = Literal["messages", "tokens", "fraction"]


def _triggers(cfg: Any) -> list[list[Any]]:
    out: list[list[Any]] = []
    for kind in ("fraction", "tokens", "messages"):
        value = getattr(cfg, f"trigger_{kind}")
        if value is not None:
            out.append([kind, value])
    return out


def _check_keep(kind: str, value: float) -> None:
    # summarization.py:_validate_context_size
    if kind == "fraction" and not 0 < value <= 1:
        raise ValueError(f"keep_value must be within (0, 1] for a fraction, not {value}")
    if kind in ("tokens", "messages") and value <= 0:
        raise ValueError(f"keep_value must be > 0, not {value}")


@dataclass(frozen=True)
class SummarizationConfig:
    max_input_tokens: int | None = field(
        default=None, metadata={"help": "the model profile's max_input_tokens (None = window)"}
    )
    trigger_fraction: float | None = field(
        default=0.8, metadata={"help": "summarize at this fraction of max_input_tokens"}
    )
    trigger_tokens: int | None = field(default=None, metadata={"help": "or at these tokens"})
    trigger_messages: int | None = field(default=None, metadata={"help": "or at these messages"})
    keep_kind: KeepKind = "messages"
    keep_value: float = field(default=20, metadata={"help": "what is kept after a summary"})
    trim_tokens_to_summarize: int | None = 4000
    report_usage: bool = field(
        default=True, metadata={"help": "recorded AI turns carry the provider's usage"}
    )

    def __post_init__(self) -> None:
        _check_keep(self.keep_kind, self.keep_value)
        if self.trigger_fraction is not None and not 0 < self.trigger_fraction <= 1:
            raise ValueError(f"trigger_fraction must be within (0, 1], not {self.trigger_fraction}")
        for name in ("trigger_tokens", "trigger_messages", "max_input_tokens"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0, not {value}")


@dataclass(frozen=True)
class ClearToolUsesConfig:
    trigger: int = field(default=100_000, metadata={"help": "tokens above which results clear"})
    clear_at_least: int = 0
    keep: int = field(default=3, metadata={"help": "most recent tool results kept"})
    clear_tool_inputs: bool = False
    exclude_tools: tuple[str, ...] = ()
    placeholder: str = "[cleared]"

    def __post_init__(self) -> None:
        if self.trigger < 0 or self.clear_at_least < 0 or self.keep < 0:
            raise ValueError("trigger, clear_at_least and keep must be >= 0")


class ShippedLangChainSummarization(ShippedStrategy):
    name = "shipped:langchain_summarization@1.5.2"
    summary = (
        "langchain 1.5.2's own SummarizationMiddleware.before_model on the agent state "
        "(trigger: the release example 0.8 of the window; the release default is none)."
    )
    source = "PyPI langchain==1.5.2 langchain/agents/middleware/summarization.py"
    differs = (
        "unlike langchain_trim (trim_messages in a pre_model_hook), it rewrites the agent "
        "state for good, keeps a number of messages, never cuts an AI message from its tool "
        "results"
    )
    Config = SummarizationConfig
    default_estimator = "chars4"
    release = LANGCHAIN_SUMMARIZATION

    def driver_config(self, ctx: ReplayContext) -> dict[str, Any]:
        c = self.config
        return {
            "middleware": "summarization",
            "max_input_tokens": c.max_input_tokens,
            "trigger": _triggers(c),
            "keep": [c.keep_kind, c.keep_value],
            "trim_tokens_to_summarize": c.trim_tokens_to_summarize,
            "report_usage": c.report_usage,
        }

    def budget(self, ctx: ReplayContext) -> int:
        limit: int | None = self.config.max_input_tokens
        return limit if limit is not None else ctx.window


class ShippedLangChainClearToolUses(ShippedStrategy):
    name = "shipped:langchain_clear_tool_uses@1.5.2"
    summary = "langchain 1.5.2's own ContextEditingMiddleware(ClearToolUsesEdit) on each request."
    source = "PyPI langchain==1.5.2 langchain/agents/middleware/context_editing.py"
    Config = ClearToolUsesConfig
    default_estimator = "chars4"
    release = LANGCHAIN_CLEAR_TOOL_USES

    def driver_config(self, ctx: ReplayContext) -> dict[str, Any]:
        c = self.config
        return {
            "middleware": "clear_tool_uses",
            "trigger": c.trigger,
            "clear_at_least": c.clear_at_least,
            "keep": c.keep,
            "clear_tool_inputs": c.clear_tool_inputs,
            "exclude_tools": list(c.exclude_tools),
            "placeholder": c.placeholder,
            "report_usage": False,
        }


class ShippedLangChainSummarization11(ShippedLangChainSummarization):
    """The same middleware as released in 1.1.0 (same knobs and defaults): ``ctxbench parity``
    against 1.5.2 shows what changed (1.1.0 moves a cutoff that would split a tool pair
    *back* to the nearest safe index within 5 messages, ``_is_safe_cutoff_point``; 1.5.2
    moves it to the AI message of the results it lands on, ``_find_safe_cutoff_point``, and
    scales its count by the provider's reported usage)."""

    name = "shipped:langchain_summarization@1.1.0"
    summary = "langchain 1.1.0's own SummarizationMiddleware.before_model on the agent state."
    source = "PyPI langchain==1.1.0 langchain/agents/middleware/summarization.py"
    release = LANGCHAIN_SUMMARIZATION_1_1
