"""Limits: a 50 MB single message and a 10,000-round trace, end to end, memory measured.

Each step runs the command a user would type (``ctxbench validate``, ``ctxbench count``,
``ctxbench run``) in a fresh Python process, so its peak RSS (``ru_maxrss``) is its own:

- ``validate`` and ``count`` (``chars4`` and the exact ``tiktoken:o200k_base``);
- ``run`` with ``none``, ``sliding_window`` and ``dbgpt`` at a 128k window, with the true
  counter and the estimator both ``tiktoken:o200k_base``, then both ``chars4``.

Figures, per input (``big_message_50mb``: one tool result of 50 MB of log lines;
``rounds_10000``: 10,000 tool rounds of about 1 KB each):
``{input}_{step}_seconds`` and ``{input}_{step}_peak_rss_mb`` (``VmHWM``) per step, ``{input}_peak_rss_mb``
(the largest), ``{input}_replay_seconds`` (the slowest replay), ``{input}_file_mb`` and
``import_rss_mb`` (a process that only imported ctxbench). ``quick`` uses a 5 MB message and
1,000 rounds.

``python -m benchmarks.bench_limits step ARGS...`` is the child process of one step.
"""

from __future__ import annotations

import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.shared import in_child

ROOT = Path(__file__).resolve().parents[1]
WINDOW = "131072"
STRATEGIES = ("none", "sliding_window", "dbgpt")
COUNTERS = ("tiktoken:o200k_base", "chars4")


def log_lines(chars: int, seed: int = 0) -> str:
    """``chars`` characters of varied application log lines (deterministic)."""
    rng = random.Random(seed)
    lines: list[str] = []
    size = i = 0
    while size < chars:
        line = (
            f"2024-05-{1 + i % 28:02d}T12:{i % 60:02d}:{i * 7 % 60:02d}.{i % 1000:03d}Z "
            f"{rng.choice(['INFO', 'DEBUG', 'WARN', 'ERROR'])} worker-{i % 17} "
            f"request_id=req-{i:08x} path=/api/v1/items/{i % 997} "
            f"status={rng.choice([200, 200, 201, 404, 500])} latency_ms={rng.randint(1, 900)} "
            f'msg="processed batch {i}"'
        )
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines)[:chars]


def big_message_trace(chars: int) -> Any:
    """One tool call whose result is ``chars`` characters of log lines."""
    from ctxbench.trace import Message, ToolCall, Trace

    return Trace(
        "big-message",
        (
            Message("system", "You are an SRE agent."),
            Message("user", "Why did the batch job fail last night?"),
            Message(
                "assistant", "", tool_calls=(ToolCall("c1", "bash", '{"cmd": "cat app.log"}'),)
            ),
            Message("tool", log_lines(chars), tool_call_id="c1", name="bash"),
            Message("assistant", "The job failed on request req-0000002a."),
        ),
    )


def many_rounds_trace(rounds: int) -> Any:
    from benchmarks.bench_replay import synthetic_trace

    return synthetic_trace(rounds, obs_chars=1000)


def steps() -> list[tuple[str, list[str]]]:
    """(figure name, ``ctxbench`` arguments after the trace file) of every step."""
    out = [("validate", ["validate"]), ("count_chars4", ["count", "--counter", "chars4"])]
    out.append(("count_o200k", ["count", "--counter", "tiktoken:o200k_base"]))
    for strategy in STRATEGIES:
        for counter in COUNTERS:
            short = "o200k" if counter.startswith("tiktoken") else counter
            args = ["run", "-s", strategy, "-w", WINDOW, "-c", counter, "-e", counter]
            out.append((f"replay_{strategy}_{short}", args))
    return out


def _measure(args: list[str]) -> dict[str, float]:
    """Run one step in a fresh process: its seconds and peak RSS."""
    return in_child("benchmarks.bench_limits", "step", *args)


def _measure_input(label: str, trace: Any, folder: Path) -> dict[str, Any]:
    from ctxbench.formats.canonical import write_traces

    path = folder / f"{label}.jsonl"
    write_traces(path, [trace])
    out: dict[str, Any] = {f"{label}_file_mb": round(path.stat().st_size / 2**20, 1)}
    for name, args in steps():
        command = [args[0], str(path), *args[1:]]
        figures = _measure(command)
        out[f"{label}_{name}_seconds"] = figures["seconds"]
        out[f"{label}_{name}_peak_rss_mb"] = figures["peak_rss_mb"]
    out[f"{label}_peak_rss_mb"] = max(v for k, v in out.items() if k.endswith("_peak_rss_mb"))
    out[f"{label}_replay_seconds"] = max(
        v for k, v in out.items() if k.startswith(f"{label}_replay") and k.endswith("_seconds")
    )
    return out


def run(quick: bool = False) -> dict[str, Any]:
    message_mb, rounds = (5, 1_000) if quick else (50, 10_000)
    out: dict[str, Any] = {"import_rss_mb": _measure(["--import-only"])["peak_rss_mb"]}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        out |= _measure_input(
            f"big_message_{message_mb}mb", big_message_trace(message_mb * 1_000_000), folder
        )
        out |= _measure_input(f"rounds_{rounds}", many_rounds_trace(rounds), folder)
    return out


def _child(argv: list[str]) -> None:
    """One step: ``ctxbench ARGV`` in this process, then its seconds and peak RSS as JSON."""
    import contextlib
    import io

    from ctxbench.cli import main

    started = time.perf_counter()
    if argv != ["--import-only"]:
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                main(argv)
            except SystemExit as exc:
                if exc.code not in (0, None, 1):  # validate exits 1 when it finds problems
                    raise
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": round(seconds, 2), "peak_rss_mb": round(peak_rss_kb() / 1024, 1)}))


def peak_rss_kb() -> int:
    """This process's peak resident memory in KiB: ``VmHWM`` on Linux. (``ru_maxrss`` is not
    used there: Linux carries it over ``exec`` from the parent, so every child would report at
    least its parent's peak.)"""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


if __name__ == "__main__":
    if sys.argv[1:2] == ["step"]:
        _child(sys.argv[2:])
    else:
        print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
