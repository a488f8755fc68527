"""Run every ``benchmarks/bench_*.py`` module's ``run()`` and print one JSON object.

Each module's ``run(quick: bool) -> dict`` returns figures measured side by side in one run
(ratios, not absolute timings, are what to compare across machines).
``python -m benchmarks [NAME ...] [--quick]`` runs a subset.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from pathlib import Path

#: The headline figures, by plain name: (module, path of keys inside its result).
HEADLINES: dict[str, tuple[str, tuple[str, ...]]] = {
    "exact_vs_chars4_ratio": (
        "counting",
        ("counters", "tiktoken:o200k_base", "exact_vs_chars4_ratio"),
    ),
    "counting_cache_overhead_ratio": (
        "counting",
        ("counters", "tiktoken:o200k_base", "cache_overhead_ratio"),
    ),
    "replay_vs_floor_ratio": ("replay", ("replay_vs_floor_ratio",)),
    "naive_speedup": ("replay", ("naive_speedup",)),
    "length_scaling": ("replay", ("length_scaling_ms_per_round",)),
    "length_scaling_ratio_1000_vs_100_none": ("replay", ("length_scaling_ratio_1000_vs_100_none",)),
    "length_scaling_ratio_1000_vs_100_dbgpt": (
        "replay",
        ("length_scaling_ratio_1000_vs_100_dbgpt_8k",),
    ),
    "parallel_efficiency_2w": ("sweep", ("parallel_efficiency_2w",)),
    "dask_overhead_ratio": ("sweep", ("dask_overhead_ratio",)),
    "memory_growth_ratio": ("sweep", ("memory_growth_ratio",)),
    "big_message_50mb_peak_rss_mb": ("limits", ("big_message_50mb_peak_rss_mb",)),
    "big_message_50mb_replay_seconds": ("limits", ("big_message_50mb_replay_seconds",)),
    "rounds_10000_peak_rss_mb": ("limits", ("rounds_10000_peak_rss_mb",)),
    "rounds_10000_replay_seconds": ("limits", ("rounds_10000_replay_seconds",)),
    "report_vs_sweep_ratio": ("report", ("report_vs_sweep_ratio",)),
    "report_vs_sweep_ratio_recorded": ("report", ("recorded", "report_vs_sweep_ratio")),
    "dbgpt_50_configs_vs_replay_ratio": ("keep_files", ("sweep_vs_replay_ratio",)),
    "dbgpt_50_configs_vs_replay_cpu_ratio": ("keep_files", ("sweep_vs_replay_cpu_ratio",)),
    "disk_kb_per_cell_keep_files_none": ("keep_files", ("disk_kb_per_cell", "none")),
    "disk_kb_per_cell_keep_files_cited": ("keep_files", ("disk_kb_per_cell", "cited")),
    "view_10000_rounds_s": ("view", ("view_s",)),
    "view_10000_rounds_vs_replay_ratio": ("view", ("view_vs_replay_ratio",)),
    "view_10000_rounds_call_load_kb_max": ("view", ("call_load_kb_max",)),
    "report_10000_rounds_s": ("view", ("report_s",)),
}


def headlines(results: dict[str, object]) -> dict[str, object]:
    """The figures the issues name, lifted to the top level (absent when not run)."""
    out: dict[str, object] = {}
    for name, (module, path) in HEADLINES.items():
        value: object = results.get(module)
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            out[name] = value
    return out


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    wanted = [a for a in argv if not a.startswith("-")]
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    out: dict[str, object] = {}
    for name in names:
        short = name.removeprefix("bench_")
        if wanted and short not in wanted:
            continue
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"running {short} ...", file=sys.stderr, flush=True)
        out[short] = module.run(quick=quick)
    print(json.dumps({"summary": headlines(out), **out}, indent=2, sort_keys=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
