"""Compaction strategies, one module per system. ``ctxbench strategies`` lists them.

A strategy is a class with a frozen ``Config`` dataclass (the class is the one source of its
name and summary; the registry keeps only where to import it from); ``build_strategy(name, params)``
makes a fresh instance for one replay. Users plug in their own as ``package.module:Class``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ctxbench import config as configuration
from ctxbench.engine.strategy import PROTOCOL, Strategy
from ctxbench.registry import Registry

if TYPE_CHECKING:
    from ctxbench.engine.strategy import Starter

STRATEGIES = Registry("strategy", list_command="ctxbench strategies")
STRATEGIES.add("none", "ctxbench.strategies.none:NoCompaction")
STRATEGIES.add("sliding_window", "ctxbench.strategies.sliding_window:SlidingWindow")
STRATEGIES.add("dbgpt", "ctxbench.strategies.dbgpt:DbgptStrategy")
STRATEGIES.add("agentscope", "ctxbench.strategies.agentscope:AgentScopeStrategy")
STRATEGIES.add("hermes", "ctxbench.strategies.hermes:HermesStrategy")
STRATEGIES.add("summarize_half", "ctxbench.strategies.summarize_half:SummarizeHalf")
STRATEGIES.add("hierarchical", "ctxbench.strategies.hierarchical:Hierarchical")
STRATEGIES.add("observation_masking", "ctxbench.strategies.observation_masking:ObservationMasking")
STRATEGIES.add("openhands_summarizing", "ctxbench.strategies.openhands:OpenHandsSummarizing")
STRATEGIES.add("openhands_amortized", "ctxbench.strategies.openhands:OpenHandsAmortized")
STRATEGIES.add("anthropic_clear_tool_uses", "ctxbench.strategies.anthropic:ClearToolUses")
STRATEGIES.add("codex", "ctxbench.strategies.codex:Codex")
STRATEGIES.add("autogen_head_tail", "ctxbench.strategies.autogen:AutoGenHeadTail")
STRATEGIES.add("autogen_token_limited", "ctxbench.strategies.autogen:AutoGenTokenLimited")
STRATEGIES.add("langchain_trim", "ctxbench.strategies.langchain_trim:LangChainTrim")
STRATEGIES.add("claude_code", "ctxbench.strategies.claude_code:ClaudeCode")

#: The strategy that never compacts: the baseline other analyses compare with (where a trace
#: overflows, the retention ceiling, what the calls cost without compaction).
BASELINE = "none"
#: The strategy whose agent recorded summaries come from when a trace does not say its format
#: (Claude Code sessions are where recorded summaries are found).
RECORDED_DEFAULT = "claude_code"

#: Released framework code run in its own environment (ctxbench/shipped/): kept apart from
#: STRATEGIES, whose every entry replays in-process, and listed by `ctxbench shipped list`.
SHIPPED_PREFIX = "shipped:"
SHIPPED_STRATEGIES = Registry("shipped strategy", list_command="ctxbench shipped list")
SHIPPED_STRATEGIES.add("shipped:dbgpt@0.8.2", "ctxbench.shipped.dbgpt:ShippedDbgpt")
SHIPPED_STRATEGIES.add("shipped:hermes@0.19.0", "ctxbench.shipped.hermes:ShippedHermes")
SHIPPED_STRATEGIES.add("shipped:agentscope@2.0.11", "ctxbench.shipped.agentscope:ShippedAgentScope")
SHIPPED_STRATEGIES.add(
    "shipped:langchain_trim@1.8.3", "ctxbench.shipped.peers:ShippedLangChainTrim"
)
SHIPPED_STRATEGIES.add(
    "shipped:autogen_head_tail@0.7.5", "ctxbench.shipped.peers:ShippedAutoGenHeadTail"
)
SHIPPED_STRATEGIES.add(
    "shipped:autogen_token_limited@0.7.5", "ctxbench.shipped.peers:ShippedAutoGenTokenLimited"
)
# issue 42: the frameworks people run, as released code
for _name, _target in (
    ("langchain_summarization@1.5.2", "langchain_v1:ShippedLangChainSummarization"),
    ("langchain_summarization@1.1.0", "langchain_v1:ShippedLangChainSummarization11"),
    ("langchain_clear_tool_uses@1.5.2", "langchain_v1:ShippedLangChainClearToolUses"),
    ("strands@1.62.0", "strands:ShippedStrands"),
    ("openai_agents_trimmer@0.24.0", "openai_agents:ShippedOpenAIAgentsTrimmer"),
    ("agent_framework@1.26.0", "agent_framework:ShippedAgentFramework"),
    ("inspect@0.3.285", "inspect_ai:ShippedInspect"),
    ("google_adk@2.13.0", "google_adk:ShippedGoogleAdk"),
    ("deepagents@0.7.32", "deepagents:ShippedDeepAgents"),
    ("gemini_cli@0.61.0", "gemini_cli:ShippedGeminiCli"),
    ("pi@1.6.0", "pi:ShippedPi"),
):
    SHIPPED_STRATEGIES.add(f"shipped:{_name}", f"ctxbench.shipped.{_target}")


#: plain compactors (functions, classes with ``compact``) adapted, by import path
_ADAPTED: dict[str, tuple[Any, type[Strategy]]] = {}


def strategy_class(name: str) -> type[Strategy]:
    """The strategy class registered as ``name`` (or a plug-in ``module:Class``)."""
    import dataclasses

    from ctxbench.errors import UnknownNameError

    cls = (SHIPPED_STRATEGIES if name.startswith(SHIPPED_PREFIX) else STRATEGIES).load(name)
    hint = (
        "subclass ctxbench.Strategy (see `ctxbench strategies` for examples), or give a "
        "function compact(messages, budget, **knobs) on OpenAI-style message dicts"
    )
    if name not in STRATEGIES and name not in SHIPPED_STRATEGIES:
        from ctxbench.strategies.function import adapt, is_plain_compactor

        if is_plain_compactor(cls):
            adapted = _ADAPTED.get(name)
            if adapted is None or adapted[0] is not cls:
                adapted = _ADAPTED[name] = (cls, adapt(cls, name))
            return adapted[1]
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


def registered() -> list[type[Strategy]]:
    """Every registered strategy's class, in registration order (imports them all)."""
    return [strategy_class(name) for name in STRATEGIES.names()]


def reproducing(meta: Mapping[str, Any], *, default: str | None = None) -> str | None:
    """The registered strategy that reproduces the agent a trace was imported from (its
    :attr:`Strategy.reproduces` holds the trace's ``imported_from.format``), else ``default``."""
    source = meta.get("imported_from")
    fmt = source.get("format") if isinstance(source, Mapping) else None
    found = (cls.name for cls in registered() if fmt in cls.reproduces)
    return next(found, default) if isinstance(fmt, str) else default


def starters() -> list[tuple[str, Starter]]:
    """The strategies ``ctxbench init`` proposes for any traces, by :attr:`Strategy.starter`."""
    found = [(cls.starter, cls.name) for cls in registered() if cls.starter is not None]
    return [(name, starter) for starter, name in sorted(found, key=lambda f: f[0].rank)]


def config_file_params(name: str, data: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The knobs of strategy ``name`` in a parsed ``--config`` file: the keys of its real
    system's own section (:attr:`Strategy.native_section`) when the file has it, else the
    top-level keys. A file holding another strategy's own section is an error naming it."""
    from ctxbench.errors import ConfigError

    named = strategy_class(name)
    for cls in [named, *(c for c in registered() if c is not named)]:
        section = _section(data, cls.native_section)
        if section is None:
            continue
        key = cls.native_section
        if cls.name != name:
            raise ConfigError(
                f"[{key}] configures {cls.name}, but --strategy is {name!r}",
                path=path,
                hint=f"use --strategy {cls.name}, or put the strategy's knobs at top level",
            )
        if not isinstance(section, Mapping):
            raise ConfigError("expected a table", path=path, key=key, hint=f"write it as [{key}]")
        return dict(section)
    return dict(data)


def _section(data: Mapping[str, Any], dotted: str) -> Any:
    """The value at ``dotted`` key path of ``data`` (None: absent, or no path)."""
    if not dotted:
        return None
    found: Any = data
    for key in dotted.split("."):
        found = found.get(key) if isinstance(found, Mapping) else None
    return found


__all__ = [
    "BASELINE",
    "RECORDED_DEFAULT",
    "SHIPPED_STRATEGIES",
    "STRATEGIES",
    "Strategy",
    "build_strategy",
    "config_file_params",
    "registered",
    "reproducing",
    "starters",
    "strategy_class",
]
