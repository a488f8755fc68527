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

STRATEGIES = Registry("strategy")
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


def strategy_class(name: str) -> type[Strategy]:
    """The strategy class registered as ``name`` (or a plug-in ``module:Class``)."""
    from ctxbench.errors import UnknownNameError

    cls = STRATEGIES.load(name)
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        for hook in ("before_call", "on_tool_result", "on_overflow"):
            if not hasattr(cls, hook):
                raise UnknownNameError(
                    f"{name!r} is not a strategy: it has no {hook}()",
                    hint="subclass ctxbench.strategies.base.Strategy",
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


__all__ = ["STRATEGIES", "Strategy", "build_strategy", "strategy_class"]
