"""Compaction strategies, one module per system. ``ctxbench strategies`` lists them.

A strategy is a class with a frozen ``Config`` dataclass; ``build_strategy(name, params)``
makes a fresh instance for one replay. Users plug in their own as ``package.module:Class``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxbench import config as configuration
from ctxbench.registry import Registry
from ctxbench.strategies.base import Strategy

STRATEGIES = Registry("strategy", list_command="ctxbench strategies")
STRATEGIES.add(
    "none",
    "ctxbench.strategies.none:NoCompaction",
    "Never compacts: shows where a trace overflows.",
)
STRATEGIES.add(
    "sliding_window",
    "ctxbench.strategies.sliding_window:SlidingWindow",
    "System + the last N whole rounds (optionally pinning the first user message).",
)
STRATEGIES.add(
    "dbgpt",
    "ctxbench.strategies.dbgpt:DbgptStrategy",
    "DB-GPT agent context management: 5 states, layers 1-4, snapshots.",
)
STRATEGIES.add(
    "agentscope",
    "ctxbench.strategies.agentscope:AgentScopeStrategy",
    "AgentScope v2: structured summary at trigger_ratio, keep reserve_ratio recent, truncate big results.",
)
STRATEGIES.add(
    "hermes",
    "ctxbench.strategies.hermes:HermesStrategy",
    "Hermes ContextCompressor: prune old tool output, protect head and tail, summarise the middle.",
)
STRATEGIES.add(
    "summarize_half",
    "ctxbench.strategies.summarize_half:SummarizeHalf",
    "Seed 003 ContextManager: over budget, summarise the oldest half of the rounds.",
)
STRATEGIES.add(
    "hierarchical",
    "ctxbench.strategies.hierarchical:Hierarchical",
    "ctxbench synthesis: hot rounds in the prompt, cold rounds retrieved by BM25.",
)
STRATEGIES.add(
    "observation_masking",
    "ctxbench.strategies.observation_masking:ObservationMasking",
    "Keep the last M rounds' observations; older ones become a placeholder.",
)
STRATEGIES.add(
    "openhands_summarizing",
    "ctxbench.strategies.openhands:OpenHandsSummarizing",
    "OpenHands V0 LLMSummarizingCondenser: head + summary + tail by event count.",
)
STRATEGIES.add(
    "openhands_amortized",
    "ctxbench.strategies.openhands:OpenHandsAmortized",
    "OpenHands V0 AmortizedForgettingCondenser: head + tail by event count.",
)
STRATEGIES.add(
    "anthropic_clear_tool_uses",
    "ctxbench.strategies.anthropic:ClearToolUses",
    "Anthropic clear_tool_uses_20250919: over the trigger, clear old tool results.",
)
STRATEGIES.add(
    "codex",
    "ctxbench.strategies.codex:Codex",
    "Codex CLI: at 90% of the window, recent user messages + a handoff summary.",
)
STRATEGIES.add(
    "autogen_head_tail",
    "ctxbench.strategies.autogen:AutoGenHeadTail",
    "AutoGen HeadAndTailChatCompletionContext: first n + 'Skipped' + last m.",
)
STRATEGIES.add(
    "autogen_token_limited",
    "ctxbench.strategies.autogen:AutoGenTokenLimited",
    "AutoGen TokenLimitedChatCompletionContext: pop the middle message until it fits.",
)
STRATEGIES.add(
    "langchain_trim",
    "ctxbench.strategies.langchain_trim:LangChainTrim",
    "LangChain trim_messages before every call: last/first N tokens, type boundaries.",
)
STRATEGIES.add(
    "claude_code",
    "ctxbench.strategies.claude_code:ClaudeCode",
    "Claude Code auto-compact: 9-section summary at effective window - 13K (2nd-hand).",
)

#: Released framework code run in its own environment (ctxbench/shipped/): kept apart from
#: STRATEGIES, whose every entry replays in-process, and listed by `ctxbench shipped list`.
SHIPPED_PREFIX = "shipped:"
SHIPPED_STRATEGIES = Registry("shipped strategy", list_command="ctxbench shipped list")
SHIPPED_STRATEGIES.add(
    "shipped:dbgpt@0.8.2",
    "ctxbench.shipped.dbgpt:ShippedDbgpt",
    "DB-GPT 0.8.2's own ContextManager and thinking(), rebuilt from memory every call.",
)

#: What the engine calls on a strategy that does not subclass :class:`Strategy`.
PROTOCOL: tuple[str, ...] = (
    "name",
    "default_estimator",
    "on_start",
    "on_tool_results",
    "on_tool_result",
    "before_call",
    "on_overflow",
    "budget",
    "state_of",
)


def strategy_class(name: str) -> type[Strategy]:
    """The strategy class registered as ``name`` (or a plug-in ``module:Class``)."""
    import dataclasses

    from ctxbench.errors import UnknownNameError

    cls = (SHIPPED_STRATEGIES if name.startswith(SHIPPED_PREFIX) else STRATEGIES).load(name)
    hint = "subclass ctxbench.strategies.base.Strategy (see docs/plugins.md)"
    if not isinstance(cls, type):
        raise UnknownNameError(
            f"{name!r} is not a strategy: it is a {type(cls).__name__}, not a class", hint=hint
        )
    if not issubclass(cls, Strategy):
        for attr in PROTOCOL:
            if not hasattr(cls, attr):
                raise UnknownNameError(f"{name!r} is not a strategy: it has no {attr}", hint=hint)
    config = getattr(cls, "Config", None)
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)):
        raise UnknownNameError(
            f"strategy {name!r} has no Config dataclass (Config = {config!r})",
            hint="set Config to a frozen dataclass of its knobs, or leave Strategy's NoConfig",
        )
    result: type[Strategy] = cls
    return result


def build_strategy(
    name: str, params: Mapping[str, Any] | None = None, *, source: str | None = None
) -> Strategy:
    """A fresh strategy instance configured from ``params`` (unknown keys are errors)."""
    cls = strategy_class(name)
    cfg = configuration.build(cls.Config, dict(params or {}), source=source or f"strategy {name}")
    return cls(cfg)


__all__ = ["SHIPPED_STRATEGIES", "STRATEGIES", "Strategy", "build_strategy", "strategy_class"]
