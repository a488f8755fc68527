"""``ctxbench calibrate --cache``: the prompt-cache model's error against the cache reads the
providers recorded (kept apart from the token-count calibration it follows)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import click

from ctxbench.cli.output import print_table
from ctxbench.cost.calibration import CacheAccuracy, cache_calibration
from ctxbench.trace import Trace


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2%}"


def cache_rows(results: Sequence[CacheAccuracy]) -> list[dict[str, str]]:
    return [
        {
            "provider": r.provider,
            "traces": str(r.traces),
            "calls": str(r.calls),
            "hit_calls": str(r.hit_calls),
            "read_median_abs": _pct(r.median_abs_rel_error),
            "read_p90_abs": _pct(r.p90_abs_rel_error),
            "read_sum_ratio": "-" if r.read_ratio is None else f"{r.read_ratio:.4f}",
            "hit_agreement": _pct(r.hit_agreement),
            "write_median_abs": _pct(r.write_median_abs_rel_error),
        }
        for r in results
    ]


def report_cache(traces: Sequence[Trace], counter: str | None, *, as_json: bool) -> None:
    """Print the cache model's accuracy per provider (one JSON line under ``as_json``)."""
    results = cache_calibration(traces, counter)
    if as_json:
        click.echo(json.dumps({"cache": [r.to_dict() for r in results]}))
        return
    if not results:
        click.echo("\ncache: no trace records cache usage")
        return
    click.echo(
        "\ncache model vs recorded cache reads (replayed with `none`; errors are |simulated - "
        "recorded| / recorded over the calls with a recorded hit):"
    )
    rows = cache_rows(results)
    print_table(rows, rows[0].keys())
