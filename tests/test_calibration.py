"""Token accuracy against recorded usage: the figures, the per-trace constant, framing fits."""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxbench.calibration import CallSample, Errors, calibrate, fit_framing, quantile, samples
from ctxbench.counting import get_counter
from ctxbench.formats.importing import import_file
from ctxbench.trace import Message, ToolCall, Trace, Usage

TARGET_MEDIAN, TARGET_P90 = 0.01, 0.03


def hand_trace(trace_id: str, hidden: int) -> Trace:
    """A trace whose provider counted exactly chars4's count plus ``hidden`` tokens on every call
    (chars4: len // 4 of content, call name and arguments; no framing)."""
    chars4 = get_counter("chars4")
    msgs: list[Message] = [Message("system", "s" * 40), Message("user", "u" * 80)]
    for i in range(3):
        prompt = chars4.count_prompt(msgs)
        call = ToolCall(f"{trace_id}{i}", "ls", "{}")
        msgs.append(
            Message("assistant", "a" * 16, tool_calls=(call,), usage=Usage(prompt + hidden, 5))
        )
        msgs.append(Message("tool", "r" * (36 + 40 * i), tool_call_id=call.id))
    msgs.append(Message("assistant", "done"))  # no usage recorded: not a sample
    return Trace(trace_id, tuple(msgs))


def test_samples_are_the_calls_with_recorded_prompt_tokens() -> None:
    trace = hand_trace("t", 250)
    got = samples(trace, get_counter("chars4"))
    assert [s.call for s in got] == [0, 1, 2]
    assert [s.counted for s in got] == [30, 44, 68]  # 10 + 20; + (16+2+2)/4 + 36/4; + 5 + 76/4
    assert [s.recorded - s.counted for s in got] == [250, 250, 250]
    assert [(s.messages, s.tool_calls) for s in got] == [(2, 0), (4, 1), (6, 2)]


def test_a_hidden_constant_is_fitted_per_trace_and_removes_the_error() -> None:
    result = calibrate([hand_trace("a", 250), hand_trace("b", 10)], get_counter("chars4"))
    assert [(t.trace_id, t.constant) for t in result.per_trace] == [("a", 250), ("b", 10)]
    fitted = result.counter.with_constant
    assert (fitted.median_abs_rel_error, fitted.p90_abs_rel_error, fitted.bias) == (0.0, 0.0, 0.0)
    raw = [-s.difference / s.recorded for s in result.samples]
    assert result.counter.raw.bias == pytest.approx(statistics.fmean(raw))
    assert result.counter.raw.median_abs_rel_error == pytest.approx(
        statistics.median(abs(r) for r in raw)
    )
    assert result.counter.raw.bias < 0  # undercounts: the constant is what the trace hides


def test_baselines_are_measured_on_the_same_calls() -> None:
    result = calibrate(
        [hand_trace("a", 250)], get_counter("chars4"), {"hermes": get_counter("hermes")}
    )
    assert result.baselines["hermes"].raw.calls == result.calls == 3
    assert result.to_dict()["baselines"]["hermes"]["name"] == "hermes"


def test_json_shape_has_the_documented_keys() -> None:
    data = calibrate(
        [hand_trace("a", 250)], get_counter("chars4"), {"hermes": get_counter("hermes")}
    ).to_dict()
    assert set(data) == {"calls", "counter", "baselines", "per_trace"}
    keys = {"name", "median_abs_rel_error", "p90_abs_rel_error", "bias"}
    assert keys <= set(data["counter"]) and keys <= set(data["baselines"]["hermes"])
    assert data["per_trace"][0]["constant"] == 250


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=30), st.floats(0, 1))
def test_quantile_matches_numpy_linear_interpolation(values: list[float], q: float) -> None:
    assert quantile(values, q) == pytest.approx(float(np.percentile(values, q * 100)), abs=1e-6)


def test_no_calls_give_undefined_figures_not_zero() -> None:
    errors = Errors.of([])
    assert errors.calls == 0 and errors.to_dict()["median_abs_rel_error"] is None


# -- framing fits --------------------------------------------------------------------------------


def planted(
    per_message: int, per_call: int, constant: int, shapes: list[tuple[int, int]]
) -> list[CallSample]:
    return [
        CallSample(
            "t", i, 1000 + 50 * i + per_message * m + per_call * c + constant, 1000 + 50 * i, m, c
        )
        for i, (m, c) in enumerate(shapes)
    ]


def test_fit_recovers_a_planted_framing() -> None:
    shapes = [(2, 0), (3, 0), (4, 1), (6, 3), (7, 3), (9, 6), (12, 6), (13, 9)]
    framing = fit_framing(planted(3, 11, 400, shapes))
    assert (framing.per_message, framing.per_tool_call, framing.constant) == (3, 11, 400)
    assert framing.errors.median_abs_rel_error == framing.errors.p90_abs_rel_error == 0.0


def test_collinear_framing_is_fitted_with_the_smallest_corrections() -> None:
    shapes = [
        (2 + 2 * k, k) for k in range(10)
    ]  # every call brings one assistant and one tool message
    framing = fit_framing(planted(3, 11, 400, shapes))
    assert framing.per_message == 0 and framing.per_tool_call == 2 * 3 + 11
    assert framing.errors.p90_abs_rel_error == 0.0


def test_fit_needs_calls() -> None:
    with pytest.raises(ValueError):
        fit_framing([])


# -- real recorded usage ---------------------------------------------------------------------------


def test_tau2_gpt4o_with_o200k_is_within_target_after_the_constant(shared_traces: Path) -> None:
    traces, _ = import_file(next(shared_traces.glob("tau2-bench/*.json")))
    result = calibrate(traces, get_counter("tiktoken:o200k_base"))
    assert result.calls == 217
    fitted = result.counter.with_constant
    assert fitted.median_abs_rel_error <= TARGET_MEDIAN and fitted.p90_abs_rel_error <= TARGET_P90
    # the file stores no tool schemas: every trace hides a similar, positive amount
    constants = [t.constant for t in result.per_trace]
    assert min(constants) > 0 and max(constants) - min(constants) < 0.1 * min(constants)


def test_exact_counting_tracks_growth_better_than_chars4_on_tau2(shared_traces: Path) -> None:
    traces, _ = import_file(next(shared_traces.glob("tau2-bench/*.json")))
    result = calibrate(
        traces, get_counter("tiktoken:o200k_base"), {"chars4": get_counter("chars4")}
    )
    assert (
        result.counter.with_constant.p90_abs_rel_error
        < result.baselines["chars4"].with_constant.p90_abs_rel_error
    )


def test_a_fit_outside_the_search_range_says_so() -> None:
    far = fit_framing(planted(0, 500, 10, [(2, 0), (3, 1), (5, 2), (8, 5)]))
    near = fit_framing(planted(0, 5, 10, [(2, 0), (3, 1), (5, 2), (8, 5)]))
    assert far.at_range_edge and not near.at_range_edge
