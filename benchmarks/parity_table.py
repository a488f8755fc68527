"""The parity table: each reproduction against its release, on every embedded scenario, every
message shape (``ctxbench.synth.shapes``: text actions with user observations, consecutive
user messages, a first user message that is not the task, reasoning fields with empty
content) and every shared recorded trace, at 8k, 16k, 32k and 64k windows.

``python -m benchmarks.parity_table [--pairs dbgpt,hermes] [--windows 8192,16384]
[--reserved 4096] [--per-source N] [--sources mini-swe-agent,shape] [--out parity.json]``
(``make parity``) prints one JSON object, per pair and window the overall agreement
(``ctxbench.parity.overall``) and per trace source, then the same as a markdown table;
``--markdown FILE`` prints the table of a previous ``--out``. A release whose environment is
not installed is reported as such. Recorded traces are every file under each directory of
``CTXBENCH_TRACES`` (files that are not traces are skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxbench import parity
from ctxbench.cell.traces import open_traces
from ctxbench.errors import CtxbenchError
from ctxbench.shipped import environment
from ctxbench.shipped.releases import (
    AGENTSCOPE,
    AUTOGEN_HEAD_TAIL,
    AUTOGEN_TOKEN_LIMITED,
    DBGPT,
    HERMES,
    LANGCHAIN_CORE,
    Release,
)
from ctxbench.strategies import SHIPPED_STRATEGIES
from ctxbench.synth import generate, load_scenario, scenario_names
from ctxbench.synth.shapes import shape_names, shape_trace
from ctxbench.trace import Trace

PAIRS: dict[str, tuple[str, Release]] = {
    "dbgpt": ("shipped:dbgpt@0.8.2", DBGPT),
    "agentscope": ("shipped:agentscope@2.0.11", AGENTSCOPE),
    "hermes": ("shipped:hermes@0.19.0", HERMES),
    "langchain_trim": ("shipped:langchain_trim@1.8.3", LANGCHAIN_CORE),
    "autogen_token_limited": ("shipped:autogen_token_limited@0.7.5", AUTOGEN_TOKEN_LIMITED),
    "autogen_head_tail": ("shipped:autogen_head_tail@0.7.5", AUTOGEN_HEAD_TAIL),
}
WINDOWS = (8_192, 16_384, 32_768, 65_536)
#: output tokens reserved (the CLI's default is 4096; a smaller reservation leaves the
#: frameworks' own limits, not the provider's, to decide more calls)
RESERVED = 1024


def traces(per_source: int | None, sources: Sequence[str] = ()) -> list[tuple[str, Trace]]:
    """(source, trace) for every embedded scenario, every message shape and every recorded
    trace of every source (a directory of ``CTXBENCH_TRACES``); with ``sources``, only the
    sources whose name starts with one of them (``scenario``, ``shape``, ``swe-agent``)."""

    def wanted(source: str) -> bool:
        return not sources or source.startswith(tuple(sources))

    out = [
        (f"scenario:{name}", next(generate(load_scenario(name), 0))) for name in scenario_names()
    ]
    out += [(f"shape:{name}", shape_trace(name)) for name in shape_names()]
    out = [(source, trace) for source, trace in out if wanted(source)]
    root = Path(os.environ.get("CTXBENCH_TRACES", Path(__file__).parents[2] / "shared" / "traces"))
    for source in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else ():
        if not wanted(source.name):
            continue
        found: list[Trace] = []
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            try:
                found += [t for t in open_traces(path).traces() if t.call_indices]
            except CtxbenchError:  # a licence or notice file next to the traces
                continue
        out += [(source.name, t) for t in found[:per_source]]
    return out


def table(
    pairs: list[str],
    windows: list[int],
    per_source: int | None,
    out: Path | None = None,
    reserved: int = RESERVED,
    sources: Sequence[str] = (),
) -> dict[str, Any]:
    """The table; with ``out``, the file is rewritten after every (pair, window) done."""
    loaded = traces(per_source, sources)
    result: dict[str, Any] = {"traces": len(loaded), "reserved": reserved, "pairs": {}}
    for pair in pairs:
        shipped, release = PAIRS[pair]
        if shipped not in SHIPPED_STRATEGIES:
            result["pairs"][pair] = {"error": f"{shipped} has no driver yet"}
            continue
        if environment.installed(release) is None:
            result["pairs"][pair] = {"error": f"not installed: {release.install_command}"}
            continue
        per_window: dict[str, Any] = {}
        for window in windows:
            started = time.perf_counter()
            rows = []
            by_source: dict[str, list[parity.TraceParity]] = {}
            for source, trace in loaded:
                row = parity.parity([trace], pair, shipped, window=window, reserved=reserved)[0]
                rows.append(row)
                by_source.setdefault(source, []).append(row)
            per_window[str(window)] = {
                "overall": parity.overall(rows),
                "by_source": {s: parity.overall(r) for s, r in by_source.items()},
                "seconds": round(time.perf_counter() - started, 1),
            }
            print(json.dumps({pair: {window: per_window[str(window)]["overall"]}}), file=sys.stderr)
            result["pairs"][pair] = per_window
            if out is not None:
                out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def markdown(result: dict[str, Any]) -> str:
    """Pair x window rows: agreement and its four criteria, the traces whose first compaction
    is the same call, the failed calls of each side, identical traces."""
    lines = [
        "| pair | window | traces | calls | agree | compacted | kept | tokens | failed "
        "| first compaction | failed calls (repro/shipped) | identical |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for pair, per_window in result["pairs"].items():
        if "error" in per_window:
            lines.append(f"| {pair} | - | {per_window['error']} |||||||||")
            continue
        for window, cell in per_window.items():
            o = cell["overall"]
            lines.append(
                f"| {pair} | {window} | {o['traces']} | {o['calls']} | {o['agreement']} | "
                f"{o['same_compacted']} | {o['same_kept']} | {o['tokens_within']} | "
                f"{o['same_failed']} | {o['same_first_compaction']} | "
                f"{o['failed_calls'][0]}/{o['failed_calls'][1]} | {o['identical_traces']} |"
            )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.parity_table")
    parser.add_argument("--pairs", default=",".join(PAIRS))
    parser.add_argument("--windows", default=",".join(map(str, WINDOWS)))
    parser.add_argument("--per-source", type=int, default=None, help="traces per source (all)")
    parser.add_argument("--reserved", type=int, default=RESERVED, help="output reservation")
    parser.add_argument(
        "--sources",
        default="",
        help="only these sources, by name prefix (e.g. shape,mini-swe-agent,swe-agent; all)",
    )
    parser.add_argument("--out", default=None)
    parser.add_argument("--markdown", default=None, help="a table file from a previous --out")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text(encoding="utf-8"))))
        return 0
    out = Path(args.out) if args.out else None
    result = table(
        args.pairs.split(","),
        [int(w) for w in args.windows.split(",")],
        args.per_source,
        out,
        args.reserved,
        [s for s in args.sources.split(",") if s],
    )
    print(json.dumps(result, indent=2))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
