"""``python -m benchmarks``: issue 43's table, every row measured cold, each figure with its goal.

Each row is a benchmark module run as ``python -m benchmarks.MODULE [--quick]`` in a fresh
process (and each module measures the two sides of its ratios in fresh processes of their own,
side by side: no count, memo or prompt is shared between them). A module prints one JSON
object; every object in it holding a numeric ``goal`` is a figure: its value is the first
number under a key naming a ratio (``*_vs_*``, ``*ratio*``, ``*per_*``), ``met`` is the
module's own or ``value <= goal``. The figures are printed first, then each module's whole
result.

``python -m benchmarks [--quick] [ROW ...]`` runs the rows named (all by default: see
:data:`TABLE`); ``python -m benchmarks --modules [--quick] [NAME ...]`` runs the older
``bench_*.py`` modules' ``run()`` in this process, as before (warm figures, not issue 43's).
The command exits 1 when a module fails or calls its own figures invalid (a replay measured
under its floor: the two sides shared a cache).
"""

from __future__ import annotations

import importlib
import json
import numbers
import os
import pkgutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Row:
    """A row of the table: the module that measures it, the arguments it takes, who owns it."""

    name: str
    module: str
    args: tuple[str, ...] = ()
    owner: str = ""


#: Issue 43's table, in its order. The rows of issue 43a (replay / floor, DB-GPT scaling, text
#: sent to tokenizers) name the modules 43a writes; a row whose module is not there is
#: reported as missing (the lead fills these names in at merge).
TABLE: tuple[Row, ...] = (
    Row("replay_vs_floor", "bench_strategy_floor", owner="43a"),
    Row("dbgpt_scaling", "bench_dbgpt_scaling", owner="43a"),
    Row("sweep_vs_replay", "bench_sweep_cold", ("dbgpt_0.8.2", "dbgpt_design"), owner="43b"),
    Row("sweep_memory_per_cell", "bench_sweep_cold", ("memory",), owner="43b"),
    Row("workers_cpu_2_vs_1", "bench_sweep_cold", ("workers",), owner="43b"),
)

#: keys a figure's value may stand under (the first that holds a number, in the object's order)
RATIO_MARKS = ("_vs_", "ratio", "per_")


def figures(result: Any, path: str = "") -> list[dict[str, Any]]:
    """Every figure of a module's result: objects holding a numeric ``goal`` (see the module
    docstring), with the path of keys that leads to each."""
    out: list[dict[str, Any]] = []
    if isinstance(result, dict):
        goal = result.get("goal")
        if isinstance(goal, numbers.Real) and not isinstance(goal, bool):
            for key, value in result.items():
                if (
                    any(mark in key for mark in RATIO_MARKS)
                    and isinstance(value, numbers.Real)
                    and not isinstance(value, bool)
                ):
                    met = result.get("met")
                    out.append(
                        {
                            "name": f"{path}.{key}".lstrip("."),
                            "value": value,
                            "goal": goal,
                            "met": bool(met) if isinstance(met, bool) else value <= goal,
                        }
                    )
                    break
        for key, value in result.items():
            out += figures(value, f"{path}.{key}")
    elif isinstance(result, list):
        for i, value in enumerate(result):
            out += figures(value, f"{path}[{i}]")
    return out


def run_row(row: Row, quick: bool) -> dict[str, Any]:
    """The row's module in a fresh process: its result, figures and seconds."""
    if not (HERE / f"{row.module}.py").is_file():
        return {"missing": f"benchmarks/{row.module}.py (issue {row.owner})", "figures": []}
    root = HERE.parent
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    args = [sys.executable, "-m", f"benchmarks.{row.module}", *row.args]
    started = time.perf_counter()
    done = subprocess.run(
        args + (["--quick"] if quick else []),
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    seconds = round(time.perf_counter() - started, 1)
    try:
        result = json.loads(done.stdout[done.stdout.index("{") :])
    except ValueError:
        return {"failed": f"exit {done.returncode}, no JSON", "seconds": seconds, "figures": []}
    return {
        "exit": done.returncode,
        "seconds": seconds,
        "figures": figures(result),
        "result": result,
    }


def table(argv: list[str]) -> int:
    quick = "--quick" in argv
    wanted = [a for a in argv if not a.startswith("-")]
    unknown = sorted(set(wanted) - {r.name for r in TABLE})
    if unknown:
        names = ", ".join(r.name for r in TABLE)
        print(f"benchmarks: no row {', '.join(unknown)} (rows: {names})", file=sys.stderr)
        return 2
    rows: dict[str, dict[str, Any]] = {}
    for row in TABLE:
        if wanted and row.name not in wanted:
            continue
        print(f"running {row.name} ({row.module}) ...", file=sys.stderr, flush=True)
        rows[row.name] = run_row(row, quick)
        print(f"  {rows[row.name].get('seconds', 0)} s", file=sys.stderr, flush=True)
    summary = [
        {"row": name, **figure} for name, got in rows.items() for figure in got.get("figures", [])
    ]
    missing = {name: got["missing"] for name, got in rows.items() if "missing" in got}
    print(json.dumps({"figures": summary, "missing": missing, "rows": rows}, indent=2))
    failed = any(got.get("exit", 0) != 0 or "failed" in got for got in rows.values())
    return 1 if failed else 0


#: The older modules' headline figures, by plain name: (module, path of keys in its result).
HEADLINES: dict[str, tuple[str, tuple[str, ...]]] = {
    "exact_vs_chars4_ratio": (
        "counting",
        ("counters", "tiktoken:o200k_base", "exact_vs_chars4_ratio"),
    ),
    "counting_cache_overhead_ratio": (
        "counting",
        ("counters", "tiktoken:o200k_base", "cache_overhead_ratio"),
    ),
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
    "disk_kb_per_cell_keep_files_none": ("keep_files", ("disk_kb_per_cell", "none")),
    "disk_kb_per_cell_keep_files_cited": ("keep_files", ("disk_kb_per_cell", "cited")),
    "view_10000_rounds_s": ("view", ("view_s",)),
    "view_10000_rounds_vs_replay_ratio": ("view", ("view_vs_replay_ratio",)),
    "view_10000_rounds_call_load_kb_max": ("view", ("call_load_kb_max",)),
    "report_10000_rounds_s": ("view", ("report_s",)),
}


def headlines(results: dict[str, object]) -> dict[str, object]:
    """The older modules' figures the issues name, lifted to the top level (absent when not
    run)."""
    out: dict[str, object] = {}
    for name, (module, path) in HEADLINES.items():
        value: object = results.get(module)
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            out[name] = value
    return out


def modules(argv: list[str]) -> int:
    """Every ``bench_*.py`` module's ``run(quick)`` in this process (the older figures)."""
    quick = "--quick" in argv
    wanted = [a for a in argv if not a.startswith("-")]
    names = sorted(m.name for m in pkgutil.iter_modules([str(HERE)]) if m.name.startswith("bench_"))
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


def main(argv: list[str]) -> int:
    if "--modules" in argv:
        return modules([a for a in argv if a != "--modules"])
    return table(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
