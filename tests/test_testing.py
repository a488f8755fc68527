"""``ctxbench.testing`` without a sweep file or a baseline: replay a compactor (a plain function,
a Strategy, a registered name) over scenarios or traces and assert per-kind retention; the
failure lists each probe lost with the call where it was lost and the answer missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxbench.synth import generate, load_scenario
from ctxbench.testing import (
    assert_no_regression,
    assert_retention,
    replay_retention,
    write_baseline,
)
from tests import REPO

TRACE = next(generate(load_scenario("coding_agent"), 1))
SAFETY = next(p for p in TRACE.probes if p.kind == "safety")


def keep_last(
    messages: list[dict[str, Any]], budget: int, *, keep: int = 12
) -> list[dict[str, Any]]:
    """System prompt + the last ``keep`` messages (never starting at a tool result)."""
    tail = [m for m in messages if m["role"] != "system"][-keep:]
    while tail and tail[0]["role"] == "tool":
        tail = tail[1:]
    return [m for m in messages if m["role"] == "system"] + tail


def test_a_keep_last_function_fails_on_the_safety_rule_naming_the_probe_and_call() -> None:
    with pytest.raises(AssertionError) as caught:
        assert_retention(keep_last, [TRACE], window=1_000_000, min_kind={"safety": 1.0})
    message = str(caught.value)
    retention = replay_retention(keep_last, [TRACE], window=1_000_000)
    (lost,) = retention.lost("safety")
    assert lost.probe_id == SAFETY.id and lost.missing == SAFETY.answers
    assert message.splitlines()[:2] == [
        "ctxbench retention",
        f"safety: retention {retention.by_kind()['safety']:g} < 1",
    ]
    assert f"{SAFETY.id} (safety, lost): {SAFETY.answers[0]!r} missing" in message
    assert f"lost at call {lost.lost_at} (after compaction {lost.compaction})" in message


def test_knobs_are_passed_and_a_registered_strategy_passes_when_it_keeps_everything() -> None:
    kept = assert_retention("none", scenarios=["coding_agent"], seeds=[1], window=1_000_000)
    assert kept.by_kind()["safety"] == 1.0 and not kept.lost("safety")
    wide = replay_retention(keep_last, [TRACE], window=1_000_000, params={"keep": 10_000})
    assert wide.by_kind()["safety"] == 1.0


def test_a_probe_file_replaces_a_traces_probes(tmp_path: Path) -> None:
    path = tmp_path / "probes.jsonl"
    line = {"trace_id": TRACE.id, "probes": [SAFETY.to_dict()]}
    path.write_text(json.dumps(line) + "\n", "utf-8")
    retention = replay_retention(keep_last, [TRACE], window=1_000_000, probes=path)
    assert retention.by_kind() == {"safety": 0.0}
    assert "safety-1" in retention.report()


def test_something_that_is_not_a_strategy_is_named() -> None:
    with pytest.raises(TypeError, match="is not a strategy"):
        replay_retention(42, [TRACE])
    with pytest.raises(ValueError, match="give traces or scenarios"):
        replay_retention("none")


GATE = """
windows = [1000000]
[[traces]]
scenario = "coding_agent"
seeds = [1]
[[strategies]]
name = "acme_compact:compact"
"""
KEEPS_ALL = "def compact(messages, budget, *, keep=12):\n    return messages\n"
KEEPS_LAST = """
def compact(messages, budget, *, keep=12):
    tail = [m for m in messages if m["role"] != "system"][-keep:]
    while tail and tail[0]["role"] == "tool":
        tail = tail[1:]
    return [m for m in messages if m["role"] == "system"] + tail
"""


def sweep(folder: Path, out: str) -> Path:
    """The gate sweep in a fresh process (the plug-in is imported anew)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(folder)])}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctxbench",
            "sweep",
            "gate.toml",
            "-o",
            out,
            "-q",
            "--allow-plugins",
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return folder / out


def test_a_regression_names_the_probes_the_baseline_kept_and_real_diff_paths(
    tmp_path: Path,
) -> None:
    (tmp_path / "gate.toml").write_text(GATE, "utf-8")
    (tmp_path / "acme_compact.py").write_text(KEEPS_ALL, "utf-8")
    baseline = write_baseline(sweep(tmp_path, "before"), tmp_path / "baseline.json")
    (tmp_path / "acme_compact.py").write_text(KEEPS_LAST, "utf-8")  # a new version drops rules
    with pytest.raises(AssertionError) as caught:
        assert_no_regression(sweep(tmp_path, "after"), baseline)
    message = str(caught.value)
    assert f"{SAFETY.id} (safety, lost): {SAFETY.answers[0]!r} missing at call" in message
    assert "lost at call" in message
    assert "BASELINE_RESULTS" not in message and " RESULTS " not in message
    assert f"ctxbench diff {tmp_path / 'baseline.events.jsonl.gz'} {tmp_path / 'after'}" in message


def first_lines(
    messages: list[dict[str, Any]], budget: int, *, keep: int = 8, every: int = 10
) -> list[dict[str, Any]]:
    """Every ``every`` messages, the old ones "summarised" to their first lines (the summary
    too, the next time): the kit's second compactor."""
    system = [m for m in messages if m["role"] == "system"]
    rest = [m for m in messages if m["role"] != "system"]
    if len(rest) <= keep + every:
        return messages
    cut = len(rest) - keep
    while cut < len(rest) and rest[cut]["role"] == "tool":
        cut += 1
    lines = [(m.get("content") or "").split("\n")[0][:300] for m in rest[:cut]]
    summary = {"role": "user", "content": "Summary:\n" + "\n".join(lines)}
    return [*system, summary, *rest[cut:]]


def test_a_fact_kept_by_a_summary_is_lost_where_the_summary_was_summarised() -> None:
    retention = replay_retention(first_lines, [TRACE], window=1_000_000)
    (task,) = retention.lost("task")
    assert task.how == "seen"  # watched call by call: the replay ran again for it
    assert task.compaction == 2, "the task line survived the first summary, not the second"
