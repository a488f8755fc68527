"""Factories for counters that are built from other counters."""

from __future__ import annotations

from ctxbench.counting.estimators import DbgptCounter


def dbgpt() -> DbgptCounter:
    """DB-GPT's estimator: content only, with tiktoken ``cl100k_base`` (its default encoding)."""
    from ctxbench.counting import get_counter
    from ctxbench.errors import TokenizerNotFoundError

    try:
        encoding = get_counter("tiktoken:cl100k_base")
    except TokenizerNotFoundError:
        return DbgptCounter(None)
    return DbgptCounter(encoding)
