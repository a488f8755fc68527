"""Summarizers strategies call for LLM summaries: deterministic offline ones (``model_like`` by
default, ``extractive`` the verbatim upper bound), the recorded agent's own (``recorded``), an
OpenAI-compatible HTTP client with an on-disk cache, and a fault-injecting one for tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxbench import config as configuration
from ctxbench.errors import ConfigError
from ctxbench.registry import Registry
from ctxbench.summarizers.base import Summarizer, SummaryRequest

SUMMARIZERS = Registry("summarizer")
SUMMARIZERS.add(
    "extractive",
    "ctxbench.summarizers.extractive:ExtractiveSummarizer",
    "The verbatim upper bound: keeps paths, ids, numbers, errors, decisions, next steps"
    " verbatim, up to the strategy's whole summary budget (offline, deterministic).",
)
SUMMARIZERS.add(
    "model_like",
    "ctxbench.summarizers.model_like:ModelLikeSummarizer",
    "Deterministic, offline, written like a model's: user messages, edited files, task ids,"
    " errors, next steps, at the length models write (fitted on recorded summaries).",
)
SUMMARIZERS.add(
    "recorded",
    "ctxbench.summarizers.recorded:RecordedSummarizer",
    "The summary the recorded agent wrote, at the calls it compacted; elsewhere its fallback.",
)
SUMMARIZERS.add(
    "lossy",
    "ctxbench.summarizers.extractive:LossySummarizer",
    "The extractive summary with a seeded drop rate (an imperfect LLM).",
)
SUMMARIZERS.add(
    "openai",
    "ctxbench.summarizers.openai_compat:OpenAISummarizer",
    "Any OpenAI-compatible chat endpoint; key from an env var; responses cached on disk.",
)
SUMMARIZERS.add(
    "failing",
    "ctxbench.summarizers.failing:FailingSummarizer",
    "Raises SummarizerError fail_times times (or always) with a chosen kind, for tests.",
)


def summarizer_params(
    name: str, params: Mapping[str, Any], *, source: str | None = None
) -> dict[str, Any]:
    """``params`` typed by the summarizer's ``Config`` (strings such as ``--summarizer-set``
    values converted by the field types); unknown keys and bad values are ConfigErrors."""
    factory = SUMMARIZERS.load(name)
    config = getattr(factory, "Config", None)
    if config is None:  # a duck-typed plug-in: its constructor is the only check
        return dict(params)
    built = configuration.build(config, params, source=source or f"summarizer {name}")
    return {key: getattr(built, key) for key in params}


def build_summarizer(name: str, params: Mapping[str, Any] | None = None) -> Summarizer:
    """A summarizer instance from its registry name (or ``module:Class``) and parameters."""
    factory = SUMMARIZERS.load(name)
    if not callable(factory):
        raise ConfigError(
            f"{name!r} is not a summarizer: {type(factory).__name__} is not a class",
            hint="give a Summarizer subclass as module:Class",
        )
    typed = summarizer_params(name, params or {})
    try:
        summarizer = factory(**typed)
    except TypeError as exc:
        raise ConfigError(
            f"bad parameters for summarizer {name!r}: {exc}", key="summarizer_params"
        ) from None
    if not callable(getattr(summarizer, "summarize", None)):
        raise ConfigError(
            f"{name!r} is not a summarizer: it has no summarize(request, counter)",
            hint="subclass ctxbench.Summarizer",
        )
    result: Summarizer = summarizer
    return result


__all__ = ["SUMMARIZERS", "Summarizer", "SummaryRequest", "build_summarizer", "summarizer_params"]
