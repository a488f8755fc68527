"""The bootstrap: intervals cover a known difference at the stated rate, and are deterministic."""

from __future__ import annotations

import numpy as np
import pytest

from ctxbench.bootstrap import (
    Bootstrap,
    Interval,
    expanded_tail,
    t_quantile,
    traces_to_separate,
)

TRUE_EFFECT = 0.1


def paired_traces(
    rng: np.random.Generator, traces: int, probes: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Two configs on the same traces: B keeps each probe with probability p_t + 0.1, A with
    p_t (p_t varies by trace), on the same uniform draw (as a knob change does)."""
    kept, weights = [], []
    for _ in range(traces):
        p = float(np.clip(rng.normal(0.5, 0.15), 0.05, 0.85))
        u = rng.random(probes)
        kept.append(np.stack([(u < p + TRUE_EFFECT), (u < p)], axis=1).astype(float))
        weights.append(np.ones(probes))
    return kept, weights


def coverage(traces: int, probes: int, level: float, two_stage: bool | None) -> float:
    rng = np.random.default_rng(12345)
    hits, repeats = 0, 200
    for r in range(repeats):
        kept, weights = paired_traces(rng, traces, probes)
        boot = Bootstrap([probes] * traces, resamples=500, seed=r, level=level, probes=two_stage)
        point, reps = boot.retention(kept, weights)
        diff = boot.difference(point, reps, 0, 1)
        hits += diff.low <= TRUE_EFFECT <= diff.high
    return hits / repeats


@pytest.mark.parametrize(("traces", "probes"), [(6, 13), (20, 13), (1, 40)])
def test_paired_intervals_cover_a_known_effect_at_the_stated_rate(traces: int, probes: int) -> None:
    """200 synthetic sweeps with a true difference of 0.1: the 90% interval covers it 90% of
    the time (binomial sd of the estimate: 0.021, so +-0.06 is ~3 sd)."""
    assert abs(coverage(traces, probes, 0.9, None) - 0.9) <= 0.06


def test_drawing_probes_inside_traces_too_overcovers_which_is_why_it_is_off() -> None:
    assert coverage(20, 13, 0.9, True) >= 0.97


def test_cost_interval_covers_a_known_mean_difference() -> None:
    rng = np.random.default_rng(7)
    hits = 0
    for r in range(200):
        base = rng.lognormal(12, 0.5, size=12)
        cost = np.stack([base * 1.1 + rng.normal(0, 2000, 12), base], axis=1)
        boot = Bootstrap([0] * 12, resamples=500, seed=r, level=0.9)
        point, reps = boot.mean(cost)
        diff = boot.difference(point, reps, 0, 1)
        # the true mean difference is 0.1 x the population mean of base
        hits += diff.low <= 0.1 * float(np.exp(12 + 0.5**2 / 2)) <= diff.high
    assert 0.8 <= hits / 200 <= 0.97


def test_same_inputs_same_interval_and_adding_a_config_changes_no_other() -> None:
    kept, weights = paired_traces(np.random.default_rng(1), 8, 10)
    first = Bootstrap([10] * 8, seed=3)
    point, reps = first.retention(kept, weights)
    again = Bootstrap([10] * 8, seed=3)
    wider = [np.concatenate([k, k[:, :1] * 0], axis=1) for k in kept]
    point2, reps2 = again.retention(wider, weights)
    assert first.interval(point[0], reps[:, 0]) == again.interval(point2[0], reps2[:, 0])
    other = Bootstrap([10] * 8, seed=4).retention(kept, weights)[1]
    assert not np.array_equal(reps, other)


def test_identical_configs_have_a_zero_width_difference() -> None:
    kept, weights = paired_traces(np.random.default_rng(2), 8, 10)
    same = [np.concatenate([k[:, :1], k[:, :1]], axis=1) for k in kept]
    boot = Bootstrap([10] * 8)
    point, reps = boot.retention(same, weights)
    diff = boot.difference(point, reps, 0, 1)
    assert (diff.point, diff.low, diff.high) == (0.0, 0.0, 0.0)
    assert traces_to_separate(diff, 8) is None


def test_traces_to_separate_scales_with_the_squared_width_ratio() -> None:
    assert traces_to_separate(Interval(0.02, -0.02, 0.06, 0.95), 10) == 40
    assert traces_to_separate(Interval(0.05, 0.01, 0.09, 0.95), 10) == 10


def test_t_quantiles_and_the_expanded_tail() -> None:
    for p, df, table in (
        (0.975, 1, 12.706),
        (0.975, 2, 4.303),
        (0.975, 3, 3.182),
        (0.95, 5, 2.015),
        (0.975, 30, 2.042),
    ):
        assert t_quantile(p, df) == pytest.approx(table, abs=5e-3 if df == 3 else 1e-3)
    assert expanded_tail(0.95, 5) < 0.025 < expanded_tail(0.95, 1000) + 1e-3


def test_weights_change_retention_by_kind() -> None:
    kept = [np.array([[1.0], [0.0], [0.0]])]
    boot = Bootstrap([3])
    assert boot.retention(kept, [np.ones(3)])[0][0] == pytest.approx(1 / 3)
    assert boot.retention(kept, [np.array([2.0, 1.0, 1.0])])[0][0] == pytest.approx(0.5)
