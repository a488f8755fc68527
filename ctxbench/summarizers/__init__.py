"""Summarizers strategies call for LLM summaries: deterministic offline ones by default, an
OpenAI-compatible HTTP client with an on-disk cache, and a fault-injecting one for tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxbench.errors import ConfigError
from ctxbench.registry import Registry
from ctxbench.summarizers.base import Summarizer, SummaryRequest

SUMMARIZERS = Registry("summarizer")
SUMMARIZERS.add(
    "extractive",
    "ctxbench.summarizers.extractive:ExtractiveSummarizer",
    "Deterministic, offline: keeps paths, ids, numbers, errors, decisions, next steps.",
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


def build_summarizer(name: str, params: Mapping[str, Any] | None = None) -> Summarizer:
    """A summarizer instance from its registry name (or ``module:Class``) and parameters."""
    factory = SUMMARIZERS.load(name)
    if not callable(factory):
        raise ConfigError(
            f"{name!r} is not a summarizer: {type(factory).__name__} is not a class",
            hint="give a Summarizer subclass as module:Class",
        )
    try:
        summarizer = factory(**dict(params or {}))
    except TypeError as exc:
        raise ConfigError(
            f"bad parameters for summarizer {name!r}: {exc}", key="summarizer_params"
        ) from None
    if not callable(getattr(summarizer, "summarize", None)):
        raise ConfigError(
            f"{name!r} is not a summarizer: it has no summarize(request, counter)",
            hint="subclass ctxbench.summarizers.base.Summarizer",
        )
    result: Summarizer = summarizer
    return result


__all__ = ["SUMMARIZERS", "Summarizer", "SummaryRequest", "build_summarizer"]
