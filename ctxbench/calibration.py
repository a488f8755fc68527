"""Token accuracy: a counter's prompt counts against the usage providers recorded.

For every assistant message that recorded ``usage.prompt_tokens`` (a model call), the prompt
is the messages before it (after a recorded compaction: its summary and the messages since,
what the agent really sent) plus the trace's tools; the counter counts it (chat framing, tool
schemas, replay fields) and the difference from the provider's figure is the error.

A trace cannot show everything the provider counted: tool schemas that were not stored,
hidden system framing. Those are the same on every call of a trace, so a per-trace constant
(the median difference) is fitted and errors are reported with and without it. The constant is
fitted on the calls it is scored on, so "with constant" measures how well the counter tracks
the *growth* of the prompt, which is what compaction decisions depend on; it is reported only
where it lowers p90 (:attr:`Accuracy.constant_helps`). :func:`cross_validate` scores fitted
framings (profiles) on calls their fit never saw.

Pure: no I/O. ``ctxbench calibrate`` reads traces and prints these figures.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxbench.bootstrap import quantile
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


def samples(trace: Trace, counter: TokenCounter, model: str | None = None) -> list[CallSample]:
    """The calls of ``trace`` with recorded prompt tokens, counted with ``counter`` (only the
    calls ``model`` served, when given: :func:`ctxbench.counting.auto.call_model`). The
    prompt is what the recorded agent sent (:func:`ctxbench.trace.recorded_prompt`: after a
    recorded compaction, its summary and the messages since)."""
    from ctxbench.counting.auto import call_model

    out: list[CallSample] = []
    call = -1
    for i, msg in enumerate(trace.messages):
        if msg.role != "assistant":
            continue
        call += 1
        usage = msg.usage
        if usage is None or not usage.prompt_tokens:
            continue
        if model is not None and call_model(trace, i) != model:
            continue
        prompt = recorded_prompt(trace, i)
        counted = counter.count_prompt(prompt, trace.tools)
        tool_calls = sum(len(m.tool_calls) for m in prompt)
        out.append(
            CallSample(trace.id, call, usage.prompt_tokens, counted, len(prompt), tool_calls)
        )
    return out


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

    @property
    def constant_helps(self) -> bool:
        """The per-trace constant lowers p90: only then is it worth reporting. A constant
        cannot fix an error that grows with the prompt, and then it makes p90 worse."""
        return self.with_constant.p90_abs_rel_error < self.raw.p90_abs_rel_error

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            **self.raw.to_dict(),
            "constant_helps": self.constant_helps,
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
    *,
    on_trace: Callable[[int, int], None] | None = None,
    model: str | None = None,
) -> Calibration:
    """Measure ``counter`` (and each baseline) on every call with recorded prompt tokens (the
    calls of ``model`` only, when given); ``on_trace(done, total)`` is told after each trace
    (a progress bar)."""
    traces = list(traces)
    calls: list[CallSample] = []
    others: dict[str, list[CallSample]] = {name: [] for name in baselines or {}}
    for done, trace in enumerate(traces, 1):
        calls.extend(samples(trace, counter, model))
        for name, base in (baselines or {}).items():
            others[name].extend(samples(trace, base, model))
        if on_trace is not None:
            on_trace(done, len(traces))
    per_trace = []
    for tid in dict.fromkeys(s.trace_id for s in calls):
        mine = [s for s in calls if s.trace_id == tid]
        per_trace.append(TraceAccuracy(tid, trace_constants(mine)[tid], Accuracy.of(tid, mine)))
    measured = {name: Accuracy.of(name, found) for name, found in others.items()}
    return Calibration(Accuracy.of(counter.name, calls), measured, tuple(per_trace), tuple(calls))


# -- fitting a framing profile ------------------------------------------------------------------

#: Integer search ranges for the fitted framing (tokens per message / per tool call).
PER_MESSAGE_RANGE = range(-8, 17)
PER_TOOL_CALL_RANGE = range(-16, 129)
#: Scales tried when the base tokenizer only stands in for the provider's: a coarse pass, then
#: a fine one around the best coarse value.
COARSE_SCALES = tuple(round(0.80 + 0.01 * i, 2) for i in range(81))
FINE_STEP = 0.001


@dataclass(frozen=True)
class Framing:
    """Fitted framing on top of a base counter: per message, per tool call, per request, and
    the scale of the base count (1 for the provider's own tokenizer)."""

    per_message: int
    per_tool_call: int
    constant: int
    errors: Errors
    scale: float = 1.0

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
        counted = s.counted if self.scale == 1.0 else round(self.scale * s.counted)
        return (
            counted
            + self.per_message * s.messages
            + self.per_tool_call * s.tool_calls
            + self.constant
        )

    def relative_errors(self, calls: Iterable[CallSample]) -> list[float]:
        return [(self.predict(s) - s.recorded) / s.recorded for s in calls]


def _best_at_scale(
    calls: Sequence[CallSample], scale: float
) -> tuple[float, int, int, int, int, int]:
    """(loss, |per_message|, |per_call|, per_message, per_call, constant) of the best integer
    framing at ``scale``: a vectorised grid search over both ranges."""
    import numpy as np

    recorded = np.array([s.recorded for s in calls], dtype=np.float64)
    counted = np.array([s.counted for s in calls], dtype=np.float64)
    if scale != 1.0:
        counted = np.round(scale * counted)
    messages = np.array([s.messages for s in calls], dtype=np.float64)
    tool_calls = np.array([s.tool_calls for s in calls], dtype=np.float64)
    pm, pc = np.meshgrid(PER_MESSAGE_RANGE, PER_TOOL_CALL_RANGE, indexing="ij")
    left = (recorded - counted) - pm[..., None] * messages - pc[..., None] * tool_calls
    constant = np.round(np.median(left, axis=2))
    loss: Any = np.round(np.mean(np.abs(left - constant[..., None]) / recorded, axis=2), 12)
    # the smallest loss, then the smallest corrections, then the smallest values (deterministic)
    keys = (pc.ravel(), pm.ravel(), np.abs(pc).ravel(), np.abs(pm).ravel(), loss.ravel())
    best = int(np.lexsort(keys)[0])
    i, j = divmod(best, pc.shape[1])
    return (
        float(loss[i, j]),
        abs(int(pm[i, j])),
        abs(int(pc[i, j])),
        int(pm[i, j]),
        int(pc[i, j]),
        int(constant[i, j]),
    )


def fit_framing(calls: Sequence[CallSample], *, fit_scale: bool = False) -> Framing:
    """The framing that minimises the mean absolute relative error over ``calls``.

    A grid search, not least squares: in many agents every tool call comes with one assistant
    and one tool message, so per-message and per-call framing are collinear; among equally good
    fits the one with the smallest corrections wins, which keeps the profile readable.
    The constant is the median remaining difference (tool schemas, hidden system framing).
    ``fit_scale`` also searches the scale of the base count (a stand-in tokenizer).
    """
    if not calls:
        raise ValueError("no calls with recorded usage to fit")
    scale = 1.0
    *_, per_message, per_call, constant = _best_at_scale(calls, scale)
    if fit_scale:
        # coordinate descent: the scale with the framing held, then the framing at that scale
        for grid in (COARSE_SCALES, None):
            if grid is None:
                grid = tuple(round(scale + FINE_STEP * k, 3) for k in range(-10, 11))
            scale = min(grid, key=lambda sc: (_loss_at(calls, sc, per_message, per_call), sc))
            *_, per_message, per_call, constant = _best_at_scale(calls, scale)
    unscored = Framing(per_message, per_call, constant, Errors.of([]), scale)
    return Framing(
        per_message, per_call, constant, Errors.of(unscored.relative_errors(calls)), scale
    )


def _loss_at(calls: Sequence[CallSample], scale: float, per_message: int, per_call: int) -> float:
    """The fit loss at ``scale`` with the framing held (the constant refitted)."""
    left = [
        s.recorded - round(scale * s.counted) - per_message * s.messages - per_call * s.tool_calls
        for s in calls
    ]
    constant = round(statistics.median(left))
    return round(statistics.fmean(abs(r - constant) / s.recorded for r, s in zip(left, calls)), 12)


# -- cross-validation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CrossValidation:
    """Errors of framings fitted on K-1 folds and scored on the held-back fold, pooled.

    Folds hold whole traces when there are at least K traces; with fewer (one long run),
    each trace is cut into K contiguous blocks of calls, so a fold is scored on calls its fit
    never saw (``by``: ``trace`` or ``call block``)."""

    k: int
    by: str
    errors: Errors
    folds: tuple[Framing, ...]
    held_back: tuple[tuple[tuple[str, int], ...], ...] = field(repr=False, default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "folds_by": self.by,
            "calls": self.errors.calls,
            **self.errors.to_dict(),
            "fold_framings": [
                {
                    "per_message": f.per_message,
                    "per_tool_call": f.per_tool_call,
                    "constant": f.constant,
                    "scale": f.scale,
                }
                for f in self.folds
            ],
        }


def folds(calls: Sequence[CallSample], k: int) -> tuple[str, list[int]]:
    """The fold of each call: by trace (round robin in first-seen order) when there are at
    least ``k`` traces, else by contiguous block of calls within each trace."""
    traces = list(dict.fromkeys(s.trace_id for s in calls))
    if len(traces) >= k:
        index = {tid: i % k for i, tid in enumerate(traces)}
        return "trace", [index[s.trace_id] for s in calls]
    sizes = {tid: sum(1 for s in calls if s.trace_id == tid) for tid in traces}
    seen: dict[str, int] = {}
    out = []
    for s in calls:
        pos = seen.get(s.trace_id, 0)
        seen[s.trace_id] = pos + 1
        out.append(pos * k // sizes[s.trace_id])
    return "call block", out


def cross_validate(
    calls: Sequence[CallSample], k: int, *, fit_scale: bool = False
) -> CrossValidation:
    """Fit on every fold but one and score on that one, for each fold (``k >= 2``)."""
    if k < 2:
        raise ValueError("cross-validation needs k >= 2")
    by, assignment = folds(calls, k)
    relative: list[float] = []
    fitted: list[Framing] = []
    held: list[tuple[tuple[str, int], ...]] = []
    for fold in range(k):
        train = [s for s, f in zip(calls, assignment) if f != fold]
        test = [s for s, f in zip(calls, assignment) if f == fold]
        if not train or not test:
            continue
        framing = fit_framing(train, fit_scale=fit_scale)
        fitted.append(framing)
        held.append(tuple((s.trace_id, s.call) for s in test))
        relative.extend(framing.relative_errors(test))
    return CrossValidation(k, by, Errors.of(relative), tuple(fitted), tuple(held))
