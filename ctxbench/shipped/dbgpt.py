"""``shipped:dbgpt@0.8.2``: DB-GPT's released context management, run by its driver.

Knobs are ``ContextBudgetConfig``'s fields as ``[service.web.agent_context]`` sets them (the
same fields as the reproduction's, :data:`ctxbench.strategies.dbgpt.config.AGENT_CONTEXT_KEYS`,
derived from :class:`~ctxbench.strategies.dbgpt.DbgptConfig`), plus the model name the tracker
counts with. The defaults are the release's, except ``truncated_observation_max_chars``: 200 as
on the app/TOML path (the core class's own default, used when no config is passed, is 500).
What the driver runs and what it emulates is in ``ctxbench/shipped/drivers/dbgpt_driver.py``.
"""

from __future__ import annotations

from dataclasses import field, fields, make_dataclass
from typing import Any

from ctxbench.shipped.releases import DBGPT
from ctxbench.shipped.strategy import ShippedStrategy
from ctxbench.strategies.dbgpt.config import (
    AGENT_CONTEXT_KEYS,
    OBSERVATION_MAX_CHARS,
    DbgptConfig,
    check_agent_context,
)


def _release_fields() -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = []
    for f in fields(DbgptConfig):
        if f.name == "truncated_observation_max_chars":
            help_text = "app/TOML path 200; core class default 500"
            out.append(
                (
                    f.name,
                    int,
                    field(default=OBSERVATION_MAX_CHARS["app"], metadata={"help": help_text}),
                )
            )
        elif f.name in AGENT_CONTEXT_KEYS:
            out.append((f.name, f.type, field(default=f.default, metadata=f.metadata)))
    help_text = "tokenizer selection (None or unknown: cl100k_base; gpt-4o: o200k)"
    out.append(("model_name", "str | None", field(default=None, metadata={"help": help_text})))
    return out


#: ``ContextBudgetConfig``'s knobs (the reproduction's fields of the same names)
DbgptReleaseConfig = make_dataclass(
    "DbgptReleaseConfig",
    _release_fields(),
    frozen=True,
    namespace={"__post_init__": check_agent_context, "__module__": __name__},
)


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
