"""Replay helpers shared by the strategy tests: run one registered strategy on a trace and read
its compactions, summaries and final prompt."""

from __future__ import annotations

from typing import Any

from ctxbench.counting import get_counter
from ctxbench.counting.base import TokenCounter
from ctxbench.engine import events as ev
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.errors import SummarizerError
from ctxbench.strategies import build_strategy
from ctxbench.summarizers.base import Summarizer, SummaryRequest
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.trace import Trace

CHARS4 = get_counter("chars4")


class Recording(ExtractiveSummarizer):
    """The extractive summarizer, remembering every request it was given."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        self.requests.append(request)
        return super().summarize(request, counter)


class Failing(Summarizer):
    """A summarizer that always fails, like an endpoint that is down."""

    name = "failing"

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        self.calls += 1
        raise SummarizerError("HTTP 503", kind="http")


def run(
    trace: Trace,
    strategy: str,
    window: int,
    *,
    reserved: int = 0,
    summarizer: Summarizer | None = None,
    estimator: TokenCounter = CHARS4,
    counter: TokenCounter = CHARS4,
    style: str = "openai",
    **params: Any,
) -> ReplayOutput:
    return replay(
        trace,
        build_strategy(strategy, params),
        SimulatedProvider(window, reserved, style),
        true_counter=counter,
        estimator=estimator,
        summarizer=summarizer,
    )


def compactions(out: ReplayOutput, layer: str | None = None) -> list[dict[str, Any]]:
    return [
        e.to_dict()
        for e in out.events
        if e.type == ev.COMPACTION and (layer is None or e["layer"] == layer)
    ]


def summaries(out: ReplayOutput) -> list[dict[str, Any]]:
    return [e.to_dict() for e in out.events if e.type == ev.SUMMARY]


def failed_calls(out: ReplayOutput) -> int:
    return sum(1 for e in out.events if e.type == ev.CALL_FAILED)
