"""The pytest plugin: registered as a ``pytest11`` entry point, its ``ctxbench_retention``
fixture replays a plain compactor and fails with each probe lost, its call and its missing
answer, without a traceback (a real pytest run in a scratch folder)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from ctxbench import pytest_plugin
from tests import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest`` in ``folder`` with this checkout first on the path; the plugin is
    named with ``-p`` unless the installed ctxbench already registers it."""
    installed = any(e.value == "ctxbench.pytest_plugin" for e in entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "ctxbench.pytest_plugin"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(folder)])}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_pyproject_registers_the_plugin_module_as_a_pytest11_entry_point() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    assert project["entry-points"]["pytest11"] == {"ctxbench": "ctxbench.pytest_plugin"}
    assert callable(pytest_plugin.ctxbench_retention)


FAILING = """
def keep_last(messages, budget, *, keep=12):
    tail = [m for m in messages if m["role"] != "system"][-keep:]
    while tail and tail[0]["role"] == "tool":
        tail = tail[1:]
    return [m for m in messages if m["role"] == "system"] + tail


def test_keep_last_keeps_safety_rules(ctxbench_retention):
    ctxbench_retention(keep_last, scenarios=["coding_agent"], seeds=[1], window=1_000_000,
                       min_kind={"safety": 1.0})
"""


def test_a_failing_retention_lists_each_lost_probe_with_its_call(tmp_path: Path) -> None:
    (tmp_path / "test_keep_last.py").write_text(FAILING, "utf-8")
    done = run_pytest(tmp_path, "test_keep_last.py")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "safety: retention 0 < 1" in out
    assert "coding_agent-s1-0: safety-1 (safety, lost): 'rm -rf build/cache' missing" in out
    assert "lost at call" in out and "(after compaction" in out
    assert "Traceback" not in out and "During handling" not in out
