"""Thinning series for charts: indices kept, shape kept."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxbench.report.downsample import lttb, stride


def test_stride_spreads_the_limit_evenly_including_both_ends() -> None:
    assert stride(11, 3) == [0, 5, 10]
    assert stride(5, 2) == [0, 4]


def test_stride_keeps_everything_under_the_limit() -> None:
    assert stride(4, 10) == [0, 1, 2, 3]
    assert stride(0, 10) == []
    assert stride(5, 0) == []


def test_lttb_keeps_a_one_point_spike_that_a_stride_would_miss() -> None:
    ys = [0.0] * 1000
    ys[503] = 5.0
    xs = [float(i) for i in range(1000)]
    assert 503 not in stride(1000, 20)
    assert 503 in lttb(xs, ys, 20)


def test_lttb_returns_everything_when_the_series_is_short() -> None:
    assert lttb([0.0, 1.0, 2.0], [1.0, 2.0, 3.0], 10) == [0, 1, 2]


def test_lttb_rejects_series_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        lttb([0.0, 1.0], [1.0], 5)


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3, max_size=400),
    st.integers(3, 60),
)
def test_lttb_keeps_exactly_limit_increasing_indices_with_both_ends(
    ys: list[float], limit: int
) -> None:
    xs = [float(i) for i in range(len(ys))]
    kept = lttb(xs, ys, limit)
    assert kept == sorted(set(kept))
    assert kept[0] == 0 and kept[-1] == len(ys) - 1
    assert len(kept) == min(limit, len(ys))
