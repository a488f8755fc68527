"""Token counters: exact tokenizers loaded offline from ``tokenizers/``, and the estimators
frameworks use. ``get_counter(spec)`` returns one shared instance per process, so its message
cache serves every replay in that process."""

from __future__ import annotations

from functools import cache, lru_cache

from ctxbench.counting.base import Framing, TokenCounter
from ctxbench.registry import Registry

COUNTERS = Registry("counter")
COUNTERS.add(
    "chars4",
    "ctxbench.counting.estimators:Chars4Counter",
    "len(text)//4 over message text",
    "rule of thumb",
)
COUNTERS.add(
    "dbgpt",
    "ctxbench.counting.factories:dbgpt",
    "DB-GPT: content only, tiktoken cl100k_base, len//4 fallback",
    "eosphoros-ai/DB-GPT dbgpt/model/utils/token_utils.py ProxyTokenizerWrapper",
)
COUNTERS.add(
    "agentscope",
    "ctxbench.counting.estimators:AgentScopeCounter",
    "AgentScope: utf-8 bytes/4 + tools JSON + 2000/media",
    "agentscope-ai/agentscope src/agentscope/model/_base.py count_tokens",
)
COUNTERS.add(
    "hermes",
    "ctxbench.counting.estimators:HermesCounter",
    "Hermes: (len+3)//4 + 10/message, call envelope, replay keys",
    "NousResearch/hermes-agent agent/context_compressor.py _estimate_msg_budget_tokens",
)


@cache
def get_counter(spec: str) -> TokenCounter:
    """The counter named ``spec`` (see ``ctxbench counters``), shared per process."""
    factory = COUNTERS.load(spec)
    counter = factory()
    if not isinstance(counter, TokenCounter):
        raise TypeError(f"counter {spec!r} built {type(counter).__name__}, not a TokenCounter")
    return counter


__all__ = ["COUNTERS", "Framing", "TokenCounter", "get_counter"]
