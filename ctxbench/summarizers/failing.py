"""``failing``: a fault-injecting summarizer for breaker, fallback and abort tests.

It raises :class:`SummarizerError` of a chosen ``kind`` for its first ``fail_times`` calls (or
on every call when ``fail_times`` is negative), then answers like ``extractive``. The count is
per instance, and the engine builds one summarizer per replay, so a replay is deterministic.
Kinds strategies react to: ``timeout``, ``http``, ``empty``, ``malformed``, ``auth`` and
``connection`` (Hermes aborts on the last two instead of writing its fallback summary).
"""

from __future__ import annotations

from ctxbench.counting.base import TokenCounter
from ctxbench.errors import ConfigError, SummarizerError
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.summarizers.extractive import ExtractiveSummarizer

KINDS: tuple[str, ...] = ("timeout", "http", "empty", "malformed", "auth", "connection")


class FailingSummarizer(ExtractiveSummarizer):
    """Fails ``fail_times`` times (every time when negative) with ``kind``, then succeeds."""

    name = "failing"

    def __init__(self, fail_times: int = -1, kind: str = "http") -> None:
        if kind not in KINDS:
            raise ConfigError(
                f"unknown failure kind {kind!r}", key="kind", hint=f"use one of {', '.join(KINDS)}"
            )
        self.fail_times = fail_times
        self.kind = kind
        self.calls = 0
        self.failures = 0

    def params(self) -> dict[str, object]:
        return {"fail_times": self.fail_times, "kind": self.kind}

    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        self.calls += 1
        if self.fail_times < 0 or self.failures < self.fail_times:
            self.failures += 1
            raise SummarizerError(
                f"injected {self.kind} failure {self.failures} ({request.layer})", kind=self.kind
            )
        return super().summarize(request, counter)


__all__ = ["KINDS", "FailingSummarizer"]
