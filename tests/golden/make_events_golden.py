"""Generate ``events_golden.json``: the bytes of the events and rows the command line writes,
and of what its readers (report, baseline, check, recommend, diff, view, calibrate) print,
so moving events to typed classes and rows to ``RunResult`` can prove no byte changed.

Everything goes through the command line (``python -m ctxbench``) inside a scratch folder with
relative paths (the rows' ``spec`` column does not depend on where it ran). Stored compactly:
a SHA-256 per run's event lines, per row (canonical JSON without ``replay_seconds``) and per
output file, and the count of each event type (so a reviewer sees what the golden covers).

- ``sweep``: the quickstart's six scenarios x seven strategies (DB-GPT as released, whose
  Layer 3 fails with ``strategy.error``, and as designed; Hermes; AgentScope; Claude Code,
  with ``strategy.decision``), one window, the model-like summarizer;
- ``recorded``: shared recorded traces (``CTXBENCH_TRACES``): mini-swe-agent at 16k (failed
  calls, probes lost after the failure), tau2 (provider usage), and the Claude Code session
  excerpt (a recorded compaction, the recorded summarizer).

Run from the repository root, review the diff, commit the JSON::

    CTXBENCH_TRACES=/work/shared/traces .venv/bin/python tests/golden/make_events_golden.py

``tests/test_events_golden.py`` re-derives the same document and compares.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # run as a script: ``python tests/golden/<this file>``

from tests.golden.golden_tools import TIMING_COLUMNS, canonical, ctxbench, sha, write_golden  # noqa: E402

GOLDEN = Path(__file__).with_name("events_golden.json")
SESSION = REPO / "tests" / "golden" / "sessions" / "claude_code_session.jsonl"

SWEEP_TOML = """\
name = "events-golden"
description = "The quickstart's scenarios x seven strategies, one window, one counter"
windows = [32768]
reserved = [4096]
counters = ["tiktoken:o200k_base"]
estimators = [""]
summarizer = "model_like"
keep_files = "cited"

[[traces]]
scenario = "coding_agent"

[[traces]]
scenario = "sql_agent"

[[traces]]
scenario = "support_agent"

[[traces]]
scenario = "research_agent"

[[traces]]
scenario = "cjk_agent"

[[traces]]
scenario = "long_horizon"

[[strategies]]
name = "none"

[[strategies]]
name = "sliding_window"
params = { keep_rounds = [4] }

[[strategies]]
name = "dbgpt"
params = { release = "0.8.2" }

[[strategies]]
name = "dbgpt"
params = { release = "design" }

[[strategies]]
name = "hermes"

[[strategies]]
name = "agentscope"

[[strategies]]
name = "claude_code"

[prices."tiktoken:o200k_base"]
input_per_mtok = 2.5
cached_input_per_mtok = 1.25
output_per_mtok = 10.0
"""

#: (shared traces file, strategy, window, extra arguments of ``run``)
RECORDED: tuple[tuple[str, str, int, tuple[str, ...]], ...] = (
    ("mini-swe-agent/astropy__astropy-12907.traj.json", "none", 16384, ()),
    ("mini-swe-agent/astropy__astropy-12907.traj.json", "claude_code", 16384, ()),
    ("mini-swe-agent/astropy__astropy-12907.traj.json", "hermes", 16384, ()),
    (
        "tau2-bench/2025-08-10T02-44-06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json",
        "dbgpt",
        8192,
        (),
    ),
    ("tau-bench/gpt-4o-airline.json", "agentscope", 8192, ()),
)


def row_sha(row: dict[str, Any]) -> str:
    return sha(canonical({k: v for k, v in row.items() if k not in TIMING_COLUMNS}).encode())


def events_digest(lines: list[str]) -> tuple[dict[str, str], dict[str, int]]:
    """(run id -> SHA-256 of its event lines in file order, count of each event type)."""
    runs: dict[str, list[str]] = {}
    types: Counter[str] = Counter()
    for line in lines:
        event = json.loads(line)
        runs.setdefault(str(event.get("run_id", "")), []).append(line)
        types[event["type"]] += 1
    by_run = {rid: sha("\n".join(ls).encode("utf-8")) for rid, ls in sorted(runs.items())}
    return by_run, dict(sorted(types.items()))


def tree_sha(root: Path) -> str:
    """One SHA-256 over every file under ``root`` (relative path and bytes, sorted)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def sweep_part(work: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    (work / "sweep.toml").write_text(SWEEP_TOML, "utf-8")
    code, _, err = ctxbench(work, "sweep", "sweep.toml", "-o", "results")
    if code != 0:
        raise SystemExit(f"sweep failed: {err}")
    rows = pq.read_table(work / "results" / "results.parquet").to_pylist()
    lines = (work / "results" / "events.jsonl").read_text("utf-8").splitlines()
    by_run, types = events_digest(lines)
    out: dict[str, Any] = {
        "rows": {r["run_id"]: row_sha(r) for r in rows},
        "events": by_run,
        "event_types": types,
    }
    exits: dict[str, int] = {}
    outputs: dict[str, str] = {}
    exits["report"], _, _ = ctxbench(work, "report", "results", "-o", "report.html", "-q")
    outputs["report.html"] = sha((work / "report.html").read_bytes())
    exits["baseline"], _, _ = ctxbench(work, "baseline", "results", "-o", "baseline.json")
    outputs["baseline.json"] = sha((work / "baseline.json").read_bytes())
    exits["check"], check_out, _ = ctxbench(
        work, "check", "results", "--baseline", "baseline.json",
        "--junit", "junit.xml", "--markdown", "summary.md",
    )  # fmt: skip
    outputs["check.stdout"] = sha(check_out.encode())
    outputs["summary.md"] = sha((work / "summary.md").read_bytes())
    outputs["junit.xml"] = sha((work / "junit.xml").read_bytes())
    exits["recommend"], rec_out, _ = ctxbench(work, "recommend", "results", "--json")
    outputs["recommend.json"] = sha(rec_out.encode())
    exits["recommend_text"], rec_text, _ = ctxbench(work, "recommend", "results")
    outputs["recommend.txt"] = sha(rec_text.encode())
    run_ids = sorted(out["rows"])
    exits["diff"], diff_out, _ = ctxbench(
        work, "diff", run_ids[0], run_ids[1], "--results", "results"
    )
    outputs["diff.stdout"] = sha(diff_out.encode())
    out["exit_codes"] = exits
    out["outputs"] = outputs
    return out


def recorded_part(work: Path, traces: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    imported: dict[str, str] = {}
    sources = [(str(traces / s), s, strat, w, x) for s, strat, w, x in RECORDED]
    sources.append((str(SESSION), "claude_code_session", "claude_code", 8192, ()))
    sources.append(
        (str(SESSION), "claude_code_session", "claude_code", 8192, ("--summarizer", "recorded"))
    )
    for path, source, strategy, window, extra in sources:
        if source not in imported:
            imported[source] = f"imported{len(imported)}.jsonl"
            code, _, err = ctxbench(work, "import", path, "-o", imported[source])
            if code != 0:
                raise SystemExit(f"import of {source} failed: {err}")
        key = f"{source.split('/')[0]}:{strategy}@{window}{''.join(extra)}"
        events, rows = f"ev{len(out)}.jsonl", f"rows{len(out)}.jsonl"
        code, _, _ = ctxbench(
            work, "run", imported[source], "-s", strategy, "-w", str(window),
            "--reserved", "1024", "--events", events, "--out", rows, *extra,
        )  # fmt: skip
        lines = (work / events).read_text("utf-8").splitlines()
        by_run, types = events_digest(lines)
        row_lines = (work / rows).read_text("utf-8").splitlines()
        out[key] = {
            "exit": code,
            "events": by_run,
            "events_file": sha((work / events).read_bytes()),
            "event_types": types,
            "rows": [row_sha(json.loads(line)) for line in row_lines],
        }
    code, cal_out, _ = ctxbench(
        work, "calibrate", imported[RECORDED[0][0]], "--counter", "tiktoken:o200k_base"
    )
    out["calibrate"] = {"exit": code, "stdout": sha(cal_out.encode())}
    return out


def generate(traces: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ctxbench-events-golden-") as tmp:
        work = Path(tmp)
        doc: dict[str, Any] = {"sweep": sweep_part(work)}
        if traces is not None:
            doc["recorded"] = recorded_part(work, traces)
        return doc


if __name__ == "__main__":
    write_golden(GOLDEN, generate)
