"""Generate ``structure_golden.json``: what the command line produces on a part of the quickstart
and on one trace of every shared recorded source, so a refactoring can prove it changed nothing.

Everything goes through the command line (``python -m ctxbench``), run inside a scratch folder
with relative paths, so the rows' ``spec`` column does not depend on where it ran. Recorded:

- per command, its exit code (and, for expected errors, the first line of stderr);
- per result row, its canonical JSON without the wall-clock columns (``replay_seconds``);
- per run id, the SHA-256 of its event lines, and of the whole ``events.jsonl``;
- the SHA-256 of the report's bytes (the report is deterministic: checked by writing it twice).

Run from the repository root, review the diff, commit the JSON::

    CTXBENCH_TRACES=/work/shared/traces .venv/bin/python tests/golden/make_structure_golden.py

``tests/test_structure_golden.py`` re-derives the same document and compares.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # run as a script: ``python tests/golden/<this file>``

from tests.golden.golden_tools import TIMING_COLUMNS, ctxbench, sha, write_golden  # noqa: E402

GOLDEN = Path(__file__).with_name("structure_golden.json")

#: The quickstart's axes, cut to what runs in well under a minute on one core.
SWEEP_TOML = """\
name = "structure-golden"
description = "A part of the quickstart: 3 scenarios x 5 strategies x 2 windows x 2 counters"
windows = [32768, 65536]
reserved = [4096]
counters = ["tiktoken:o200k_base", "hf:qwen2.5"]
estimators = [""]
summarizer = "extractive"

[[traces]]
scenario = "coding_agent"

[[traces]]
scenario = "sql_agent"

[[traces]]
scenario = "cjk_agent"

[[strategies]]
name = "none"

[[strategies]]
name = "sliding_window"
params = { keep_rounds = [4, 12] }

[[strategies]]
name = "dbgpt"
params = { warning_threshold = [0.6, 0.7] }

[[strategies]]
name = "hermes"

[[strategies]]
name = "agentscope"

[prices."tiktoken:o200k_base"]
input_per_mtok = 2.5
cached_input_per_mtok = 1.25
output_per_mtok = 10.0

[prices."hf:qwen2.5"]
input_per_mtok = 0.4
cached_input_per_mtok = 0.1
output_per_mtok = 1.2
"""

#: One recorded file per shared source (the first trace with >= 4 model calls is replayed).
SOURCES: tuple[str, ...] = (
    "tau2-bench/2025-08-10T02-44-06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json",
    "tau-bench/gpt-4o-airline.json",
    "mini-swe-agent/astropy__astropy-12907.traj.json",
    "openhands-benchmarks/output.critic_attempt_1.jsonl",
    "swe-agent/trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling__install-1/marshmallow-code__marshmallow-1867.traj",
)
#: The replays of each recorded trace: (strategy, window).
REPLAYS: tuple[tuple[str, int], ...] = (("dbgpt", 8192), ("hermes", 8192), ("none", 8192))


def row_of(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sorted(row.items()) if k not in TIMING_COLUMNS}


def events_by_run(lines: list[str]) -> dict[str, str]:
    """run id -> SHA-256 of its event lines (in file order)."""
    out: dict[str, list[str]] = {}
    for line in lines:
        out.setdefault(json.loads(line)["run_id"], []).append(line)
    return {rid: sha("\n".join(ls).encode("utf-8")) for rid, ls in sorted(out.items())}


def parquet_rows(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return [row_of(r) for r in pq.read_table(path).to_pylist()]


def sweep_part(work: Path) -> dict[str, Any]:
    (work / "sweep.toml").write_text(SWEEP_TOML, "utf-8")
    exits: dict[str, int] = {}
    exits["sweep"], _, err = ctxbench(work, "sweep", "sweep.toml", "-o", "results", "--csv")
    if exits["sweep"] != 0:
        raise SystemExit(f"sweep failed: {err}")
    exits["report"], _, _ = ctxbench(work, "report", "results", "-o", "report.html", "-q")
    first = (work / "report.html").read_bytes()
    ctxbench(work, "report", "results", "-o", "report2.html", "-q")
    deterministic = first == (work / "report2.html").read_bytes()
    exits["baseline"], _, _ = ctxbench(work, "baseline", "results", "-o", "baseline.json")
    exits["check"], _, _ = ctxbench(work, "check", "results", "--baseline", "baseline.json")
    rows = parquet_rows(work / "results" / "results.parquet")
    run_ids = [r["run_id"] for r in rows]
    exits["rerun_row"], _, _ = ctxbench(
        work, "run", "--from-row", "results", "--run-id", run_ids[0], "--json"
    )
    exits["diff"], diff_out, _ = ctxbench(
        work, "diff", run_ids[0], run_ids[1], "--results", "results"
    )
    events = (work / "results" / "events.jsonl").read_text("utf-8").splitlines()
    return {
        "exit_codes": exits,
        "rows": rows,
        "events_sha256": sha((work / "results" / "events.jsonl").read_bytes()),
        "events_by_run": events_by_run(events),
        "report_deterministic": deterministic,
        "report_sha256": sha(first) if deterministic else None,
        "diff_stdout_sha256": sha(diff_out.encode("utf-8")),
    }


def replay_part(work: Path, traces: Path) -> dict[str, Any]:
    from ctxbench.formats.canonical import read_traces, write_traces

    out: dict[str, Any] = {}
    for n, source in enumerate(SOURCES):
        entry: dict[str, Any] = {}
        imported = f"imported{n}.jsonl"
        entry["import_exit"], _, _ = ctxbench(work, "import", str(traces / source), "-o", imported)
        chosen = next(t for t in read_traces(work / imported) if len(t.call_indices) >= 4)
        one = f"trace{n}.jsonl"
        write_traces(work / one, [chosen])
        entry["trace_id"] = chosen.id
        for strategy, window in REPLAYS:
            key = f"{strategy}@{window}"
            events, rows = f"ev{n}-{strategy}.jsonl", f"rows{n}-{strategy}.jsonl"
            code, _, _ = ctxbench(
                work, "run", one, "-s", strategy, "-w", str(window), "--reserved", "1024",
                "--events", events, "--out", rows, "--json",
            )  # fmt: skip
            lines = (work / rows).read_text("utf-8").splitlines()
            entry[key] = {
                "exit": code,
                "rows": [row_of(json.loads(line)) for line in lines],
                "events_sha256": sha((work / events).read_bytes()),
            }
        out[source.split("/")[0]] = entry
    return out


def error_part(work: Path) -> dict[str, Any]:
    """Exit codes (and first stderr line) of commands given bad input."""
    cases = {
        "report_not_results": ("report", "nowhere", "-o", "r.html"),
        "run_unknown_strategy": ("run", "trace0.jsonl", "-s", "dbgtp", "-w", "8192"),
        "run_no_window": ("run", "trace0.jsonl", "-s", "dbgpt"),
        "sweep_missing_file": ("sweep", "missing.toml", "-o", "x"),
    }
    out: dict[str, Any] = {}
    for name, args in cases.items():
        code, _, err = ctxbench(work, *args)
        out[name] = {"exit": code, "stderr": err.strip().splitlines()[:1]}
    return out


def generate(traces: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ctxbench-golden-") as tmp:
        work = Path(tmp)
        doc: dict[str, Any] = {"sweep": sweep_part(work)}
        if traces is not None:
            doc["recorded"] = replay_part(work, traces)
            doc["errors"] = error_part(work)
        return doc


if __name__ == "__main__":
    write_golden(GOLDEN, generate)
