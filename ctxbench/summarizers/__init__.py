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


def build_summarizer(name: str, params: Mapping[str, Any] | None = None) -> Summarizer:
    """A summarizer instance from its registry name (or ``module:Class``) and parameters."""
    factory = SUMMARIZERS.load(name)
    try:
        summarizer = factory(**dict(params or {}))
    except TypeError as exc:
        raise ConfigError(
            f"bad parameters for summarizer {name!r}: {exc}", key="summarizer_params"
        ) from None
    if not hasattr(summarizer, "summarize"):
        raise ConfigError(f"{name!r} is not a summarizer: it has no summarize()")
    result: Summarizer = summarizer
    return result


__all__ = ["SUMMARIZERS", "Summarizer", "SummaryRequest", "build_summarizer"]
