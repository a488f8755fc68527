"""Thinning dense series before they are drawn: a chart of 5,000 calls has ~700 pixels.

Both functions return the *indices* to keep, so several series measured at the same points
(true and estimated ratio per call) are thinned together and stay aligned.
"""

from __future__ import annotations

from collections.abc import Sequence


def stride(n: int, limit: int) -> list[int]:
    """``limit`` evenly spaced indices of ``range(n)``, first and last included."""
    if limit <= 0 or n <= 0:
        return []
    if n <= limit:
        return list(range(n))
    if limit == 1:
        return [0]
    step = (n - 1) / (limit - 1)
    return sorted({round(i * step) for i in range(limit)})


def lttb(xs: Sequence[float], ys: Sequence[float], limit: int) -> list[int]:
    """Largest-Triangle-Three-Buckets: ``limit`` indices that keep the series' visual shape.

    Unlike a stride it keeps spikes (an overflow at one call) and drops flat stretches. The
    first and last points are always kept; ``xs`` must be increasing.
    """
    n = len(xs)
    if len(ys) != n:
        raise ValueError(f"xs and ys differ in length ({n} != {len(ys)})")
    if limit >= n or n <= 2:
        return list(range(n))
    if limit < 3:
        return stride(n, limit)
    kept = [0]
    bucket = (n - 2) / (limit - 2)
    previous = 0
    for b in range(limit - 2):
        start = int(b * bucket) + 1
        end = int((b + 1) * bucket) + 1
        next_start, next_end = end, min(int((b + 2) * bucket) + 1, n)
        if next_start >= n - 1:
            avg_x, avg_y = xs[n - 1], ys[n - 1]
        else:
            span = range(next_start, next_end)
            avg_x = sum(xs[i] for i in span) / len(span)
            avg_y = sum(ys[i] for i in span) / len(span)
        ax, ay = xs[previous], ys[previous]
        best, best_area = start, -1.0
        for i in range(start, min(end, n - 1)):
            area = abs((ax - avg_x) * (ys[i] - ay) - (ax - xs[i]) * (avg_y - ay))
            if area > best_area:
                best, best_area = i, area
        kept.append(best)
        previous = best
    kept.append(n - 1)
    return kept
