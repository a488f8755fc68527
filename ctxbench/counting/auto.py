"""``--counter auto``: the counter and reasoning rule of the model that recorded a trace.

:func:`choose` is a pure function of a trace's ``meta.model`` (the name the provider or the
framework recorded, with any ``litellm_proxy/``, ``openai/``, ``deepseek/`` prefix), so any
runner can wire it in. Families without a public tokenizer (Claude) get a stand-in counter and
``exact=False``: fit a profile (``ctxbench calibrate --save-profile``) before trusting counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ctxbench.counting.billing import BilledRule
from ctxbench.counting.reasoning import ReasoningRule
from ctxbench.trace import Trace

AUTO = "auto"

#: The counter used when the model is unknown or missing.
FALLBACK_COUNTER = "tiktoken:o200k_base"


@dataclass(frozen=True)
class Choice:
    """What ``auto`` picked for one model name."""

    model: str
    family: str
    counter: str
    reasoning: ReasoningRule
    exact: bool
    note: str = ""

    def describe(self, reasoning: str = "", given_by: str = "") -> str:
        """What was picked; ``reasoning`` replaces the family's rule (``given_by`` says who
        set it: ``--reasoning``, the sweep file)."""
        picked = f"{self.model or '(no meta.model)'} -> {self.counter}, reasoning "
        if reasoning:
            return f"{picked}{reasoning} ({given_by})"
        rule = f"{picked}{self.reasoning} (documented; billed usage that tells the rules apart wins"
        return rule + (f"; {self.note})" if self.note else ")")


@dataclass(frozen=True)
class _Family:
    family: str
    pattern: str
    counter: str
    reasoning: ReasoningRule
    exact: bool = True
    note: str = ""


# First match wins; patterns match the bare model name (prefixes removed, lower case).
_FAMILIES: tuple[_Family, ...] = (
    # R1 refused returned reasoning; ``deepseek-reasoner`` has been the thinking mode of
    # DeepSeek-V3.1 and later since 2025-08-21 (api-docs.deepseek.com/news/news250821), which
    # counts the reasoning of tool turns (api-docs.deepseek.com/guides/thinking_mode)
    _Family("deepseek-r1", r"deepseek-r1", "hf:deepseek-v3.1", "none"),
    _Family("deepseek-thinking", r"deepseek-reasoner", "hf:deepseek-v3.1", "tool_turns"),
    _Family("deepseek-v3", r"deepseek-v3(-0324)?$", "hf:deepseek-v3", "tool_turns"),
    # deepseek-chat / -v3.1 / -v3.2 / -v4-* / -flash / -pro share the V3 vocabulary; V3.1's
    # template is the newest one shipped (V3.2 and V4 ship none)
    _Family("deepseek", r"deepseek", "hf:deepseek-v3.1", "tool_turns"),
    _Family("openai-reasoning", r"^(o\d|gpt-5|codex)", "tiktoken:o200k_base", "current_turn"),
    _Family("openai", r"^(gpt-4o|gpt-4\.1|chatgpt-4o|gpt-oss)", "tiktoken:o200k_base", "none"),
    _Family("openai-legacy", r"^gpt-(4|3\.5)", "tiktoken:cl100k_base", "none"),
    # Opus 4.5+, Sonnet 4.6+ (and later majors) keep every prior thinking block
    _Family(
        "anthropic-preserved-thinking",
        r"claude-(opus-(4-[5-9]|[5-9])|sonnet-(4-[6-9]|[5-9])|mythos)",
        "tiktoken:o200k_base",
        "all",
        exact=False,
        note="no public Claude tokenizer: o200k_base stands in, fit a profile",
    ),
    _Family(
        "anthropic",
        r"claude",
        "tiktoken:o200k_base",
        "current_turn",
        exact=False,
        note="no public Claude tokenizer: o200k_base stands in, fit a profile",
    ),
    _Family("qwen3", r"^(qwen3|qwq)", "hf:qwen2.5", "current_turn", note="Qwen2.5 vocabulary"),
    _Family("qwen", r"^qwen", "hf:qwen2.5", "none"),
    _Family("llama", r"llama", "hf:llama3", "none"),
    _Family(
        "mistral", r"^(mistral|mixtral|codestral|devstral|ministral)", "mistral:tekken", "none"
    ),
)


def bare_model(model: str) -> str:
    """``model`` without provider prefixes, in lower case (``litellm_proxy/anthropic/x`` -> ``x``)."""
    return model.strip().lower().rsplit("/", 1)[-1]


def choose(model: str | None) -> Choice:
    """The counter and reasoning rule for a recorded model name (``None``: unknown)."""
    name = bare_model(model or "")
    for fam in _FAMILIES:
        if name and re.search(fam.pattern, name):
            return Choice(model or "", fam.family, fam.counter, fam.reasoning, fam.exact, fam.note)
    note = "unknown model" if name else "the trace records no model"
    return Choice(model or "", "unknown", FALLBACK_COUNTER, "all", False, f"{note}: fallback")


def rule_for(
    reasoning: str,
    model: str | None,
    counter_spec: str,
    trace: Trace | None = None,
    trace_hash: str = "",
) -> str | None:
    """The reasoning rule a replay counts under: ``reasoning`` when set; else, where ``trace``
    records billed usage that tells the rules apart, the rule it supports
    (:func:`billed_for`); else the family's documented rule of the recorded ``model`` (None:
    the counter as it renders, for an unknown model and for a profile, which holds the rule
    it was fitted under)."""
    from ctxbench.counting.profile import PREFIX

    if reasoning:
        return reasoning
    if counter_spec.startswith(PREFIX):
        return None
    choice = choose(model)
    if trace is not None:
        billed = billed_for(trace, model or "", counter_spec, trace_hash)
        if billed is not None and billed.from_usage:
            return billed.rule
    if choice.family == "unknown":
        return None
    return choice.reasoning


def billed_for(
    trace: Trace, model: str, counter_spec: str, trace_hash: str = ""
) -> BilledRule | None:
    """The rule the billed usage of ``model``'s calls in ``trace`` supports, counted with
    ``counter_spec`` (None for a framework estimator or a profile: they hold no provider
    rule). A pure function of the trace, computed once per process."""
    from ctxbench.counting import counter_kind
    from ctxbench.counting.billing import trace_rule
    from ctxbench.counting.profile import PREFIX

    if counter_spec.startswith(PREFIX) or counter_kind(counter_spec) == "estimator":
        return None
    choice = choose(model or None)
    return trace_rule(
        trace,
        trace_hash or trace.content_hash,
        counter_spec,
        _served_by(trace, model),
        choice.reasoning,
        fit_scale=stand_in(choice, counter_spec),
    )


def stand_in(choice: Choice, counter_spec: str) -> bool:
    """Whether ``counter_spec`` only stands in for the model's tokenizer (a fit needs a scale)."""
    return not (choice.exact and counter_spec == choice.counter)


def _served_by(trace: Trace, model: str) -> str:
    """``model`` when some call of ``trace`` is attributed to it, else the trace's first call
    model (a trace whose meta.model differs from every call's)."""
    models = call_models(trace)
    return model if model in models else models[0]


def trace_model(trace: Trace) -> str | None:
    """The model a trace records in ``meta.model`` (``None`` when absent)."""
    model = trace.meta.get("model")
    return str(model) if model else None


def call_model(trace: Trace, index: int) -> str:
    """The model that served the call writing message ``index``: its ``usage.model`` where
    the importer recorded one (a session mixing models), else the trace's (``""``: none)."""
    usage = trace.messages[index].usage
    if usage is not None and usage.model:
        return usage.model
    return trace_model(trace) or ""


def call_models(trace: Trace) -> list[str]:
    """The distinct models of a trace's calls with recorded usage, in first-seen order (the
    trace's model when no call records usage)."""
    models = [
        call_model(trace, i)
        for i, m in enumerate(trace.messages)
        if m.role == "assistant" and m.usage is not None
    ]
    return list(dict.fromkeys(models)) or [trace_model(trace) or ""]


def choose_for(traces: Iterable[Trace]) -> dict[str, Choice]:
    """One choice per distinct model, per call where calls record one, in first-seen order
    (``""`` = no model)."""
    out: dict[str, Choice] = {}
    for trace in traces:
        for model in call_models(trace):
            if model not in out:
                out[model] = choose(model)
    return out


def pooling_warning(choices: dict[str, Choice]) -> str | None:
    """A warning when one run pools traces of different models (one number hides several)."""
    if len(choices) <= 1:
        return None
    names = ", ".join(m or "(none)" for m in choices)
    return (
        f"these traces come from {len(choices)} models ({names}); counts pool them, "
        "so split the run per model (calibrate --by-model) to read each one"
    )
