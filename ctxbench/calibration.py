"""Token accuracy: a counter's prompt counts against the usage providers recorded.

For every assistant message that recorded ``usage.prompt_tokens`` (a model call), the prompt
is the messages before it (after a recorded compaction: its summary and the messages since,
what the agent really sent) plus the trace's tools; the counter counts it (chat framing, tool
schemas, replay fields) and the difference from the provider's figure is the error.

A trace cannot show everything the provider counted: tool schemas that were not stored,
hidden system framing. Those are the same on every call of a trace, so a per-trace constant
(the median difference) is fitted and errors are reported with and without it. The constant is
fitted on the calls it is scored on, so "with constant" measures how well the counter tracks
the *growth* of the prompt, which is what compaction decisions depend on.

Pure: no I/O. ``ctxbench calibrate`` reads traces and prints these figures.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxbench.counting.base import TokenCounter
from ctxbench.trace import Trace, recorded_prompt

#: The estimators frameworks use, measured next to the counter on the same calls.
BASELINES: tuple[str, ...] = ("chars4", "dbgpt", "agentscope", "hermes")


@dataclass(frozen=True)
class CallSample:
    """One recorded model call: the provider's prompt tokens and a counter's count."""

    trace_id: str
    call: int
    recorded: int
    counted: int
    messages: int
    tool_calls: int

    @property
    def difference(self) -> int:
        """Provider minus counter: what the counter missed (positive = undercount)."""
        return self.recorded - self.counted


def samples(trace: Trace, counter: TokenCounter) -> list[CallSample]:
    """The calls of ``trace`` with recorded prompt tokens, counted with ``counter``."""
    out: list[CallSample] = []
    tool_calls = 0
    call = -1
    for i, msg in enumerate(trace.messages):
        if msg.role == "assistant":
            call += 1
            usage = msg.usage
            if usage is not None and usage.prompt_tokens:
                counted = counter.count_prompt(recorded_prompt(trace, i), trace.tools)
                out.append(CallSample(trace.id, call, usage.prompt_tokens, counted, i, tool_calls))
        tool_calls += len(msg.tool_calls)
    return out


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default), of a non-empty sequence."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(frozen=True)
class Errors:
    """Relative errors (counted - recorded) / recorded over a set of calls."""

    calls: int
    median_abs_rel_error: float
    p90_abs_rel_error: float
    bias: float

    @classmethod
    def of(cls, relative: Sequence[float]) -> Errors:
        if not relative:
            return cls(0, math.nan, math.nan, math.nan)
        absolute = [abs(r) for r in relative]
        return cls(
            len(relative),
            quantile(absolute, 0.5),
            quantile(absolute, 0.9),
            statistics.fmean(relative),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "median_abs_rel_error": _round(self.median_abs_rel_error),
            "p90_abs_rel_error": _round(self.p90_abs_rel_error),
            "bias": _round(self.bias),
        }


def _round(value: float) -> float | None:
    """Six decimals keep outputs byte-stable across platforms; NaN (no calls) becomes null."""
    return None if math.isnan(value) else round(value, 6)


def trace_constants(calls: Iterable[CallSample]) -> dict[str, int]:
    """Per trace, the median of recorded - counted, rounded to whole tokens."""
    by_trace: dict[str, list[int]] = {}
    for s in calls:
        by_trace.setdefault(s.trace_id, []).append(s.difference)
    return {tid: round(statistics.median(diffs)) for tid, diffs in by_trace.items()}


@dataclass(frozen=True)
class Accuracy:
    """A counter's errors on a set of calls, raw and after the per-trace constant."""

    name: str
    raw: Errors
    with_constant: Errors

    @classmethod
    def of(cls, name: str, calls: Sequence[CallSample]) -> Accuracy:
        constants = trace_constants(calls)
        raw = [-s.difference / s.recorded for s in calls]
        fitted = [(constants[s.trace_id] - s.difference) / s.recorded for s in calls]
        return cls(name, Errors.of(raw), Errors.of(fitted))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            **self.raw.to_dict(),
            "with_constant": self.with_constant.to_dict(),
        }


@dataclass(frozen=True)
class TraceAccuracy:
    """One trace's calls: its fitted constant and errors with and without it."""

    trace_id: str
    constant: int
    accuracy: Accuracy

    def to_dict(self) -> dict[str, Any]:
        acc = self.accuracy
        return {
            "trace_id": self.trace_id,
            "calls": acc.raw.calls,
            "constant": self.constant,
            **acc.raw.to_dict(),
            "with_constant": acc.with_constant.to_dict(),
        }


@dataclass(frozen=True)
class Calibration:
    """The counter's accuracy, the baselines' on the same calls, and per-trace figures."""

    counter: Accuracy
    baselines: Mapping[str, Accuracy]
    per_trace: tuple[TraceAccuracy, ...]
    samples: tuple[CallSample, ...] = field(repr=False, default=())

    @property
    def calls(self) -> int:
        return self.counter.raw.calls

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "counter": self.counter.to_dict(),
            "baselines": {name: acc.to_dict() for name, acc in self.baselines.items()},
            "per_trace": [t.to_dict() for t in self.per_trace],
        }


def calibrate(
    traces: Iterable[Trace],
    counter: TokenCounter,
    baselines: Mapping[str, TokenCounter] | None = None,
) -> Calibration:
    """Measure ``counter`` (and each baseline) on every call with recorded prompt tokens."""
    traces = list(traces)
    calls = [s for t in traces for s in samples(t, counter)]
    per_trace = []
    for tid in dict.fromkeys(s.trace_id for s in calls):
        mine = [s for s in calls if s.trace_id == tid]
        per_trace.append(TraceAccuracy(tid, trace_constants(mine)[tid], Accuracy.of(tid, mine)))
    measured = {
        name: Accuracy.of(name, [s for t in traces for s in samples(t, base)])
        for name, base in (baselines or {}).items()
    }
    return Calibration(Accuracy.of(counter.name, calls), measured, tuple(per_trace), tuple(calls))


# -- fitting a framing profile ------------------------------------------------------------------

#: Integer search ranges for the fitted framing (tokens per message / per tool call).
PER_MESSAGE_RANGE = range(-8, 17)
PER_TOOL_CALL_RANGE = range(-16, 65)


@dataclass(frozen=True)
class Framing:
    """Fitted framing on top of a base counter: per message, per tool call, per request."""

    per_message: int
    per_tool_call: int
    constant: int
    errors: Errors

    @property
    def at_range_edge(self) -> bool:
        """The search stopped at a range limit: the base counter is far from the provider."""
        return self.per_message in (
            PER_MESSAGE_RANGE[0],
            PER_MESSAGE_RANGE[-1],
        ) or self.per_tool_call in (
            PER_TOOL_CALL_RANGE[0],
            PER_TOOL_CALL_RANGE[-1],
        )

    def predict(self, s: CallSample) -> int:
        return (
            s.counted
            + self.per_message * s.messages
            + self.per_tool_call * s.tool_calls
            + self.constant
        )


def fit_framing(calls: Sequence[CallSample]) -> Framing:
    """The integer framing that minimises the mean absolute relative error over ``calls``.

    A grid search, not least squares: in many agents every tool call comes with one assistant
    and one tool message, so per-message and per-call framing are collinear; among equally good
    fits the one with the smallest corrections wins, which keeps the profile readable.
    The constant is the median remaining difference (tool schemas, hidden system framing).
    """
    if not calls:
        raise ValueError("no calls with recorded usage to fit")
    candidates = []
    for per_message in PER_MESSAGE_RANGE:
        for per_call in PER_TOOL_CALL_RANGE:
            left = [
                s.difference - per_message * s.messages - per_call * s.tool_calls for s in calls
            ]
            constant = round(statistics.median(left))
            loss = statistics.fmean(abs(r - constant) / s.recorded for r, s in zip(left, calls))
            candidates.append(
                (round(loss, 12), abs(per_message), abs(per_call), per_message, per_call, constant)
            )
    *_, per_message, per_call, constant = min(candidates)
    unscored = Framing(per_message, per_call, constant, Errors.of([]))
    relative = [(unscored.predict(s) - s.recorded) / s.recorded for s in calls]
    return Framing(per_message, per_call, constant, Errors.of(relative))
