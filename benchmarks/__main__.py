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
    print(json.dumps(out, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
