"""What several benchmarks share: a measurement run in a fresh process, one paced replay of
a cell's parts, and the support-agent sweep the sweep benchmarks time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: three windows x (none, sliding_window, four DB-GPT thresholds) over ``seeds`` support-agent
#: traces: 18 cells a seed (``.format(name=..., seeds=[...])``)
SUPPORT_SWEEP = """
name = "{name}"
windows = [8192, 16384, 32768]
reserved = [2048]
counters = ["tiktoken:o200k_base"]

[[traces]]
scenario = "support_agent"
seeds = {seeds}

[[strategies]]
name = "none"

[[strategies]]
name = "sliding_window"
params = {{ keep_rounds = [6] }}

[[strategies]]
name = "dbgpt"
params = {{ warning_threshold = [0.5, 0.6, 0.7, 0.8] }}
"""


def in_child(module: str, *args: str) -> dict[str, Any]:
    """Run ``python -m module ARGS`` from the repository root in a fresh process (cold caches,
    its own peak RSS) and return the JSON object its last line prints."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{module} {args} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def paced_replay(trace: Any, parts: Any, *, file_contents: bool = True) -> Any:
    """One replay of ``trace`` with a cell's built parts, the collector paced as a sweep runs
    (``file_contents=False``: as for a caller that keeps no file)."""
    from ctxbench.collector import paced
    from ctxbench.engine.replay import replay

    with paced():
        return replay(
            trace,
            parts.strategy,
            parts.provider,
            true_counter=parts.true_counter,
            estimator=parts.estimator,
            summarizer=parts.summarizer,
            file_contents=file_contents,
        )
