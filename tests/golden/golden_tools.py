"""What the golden generators (``make_events_golden.py``, ``make_structure_golden.py``) and
their tests share: digests, the command line run in a folder, and a generator loaded and
compared with the golden file it wrote."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

GOLDEN_DIR = Path(__file__).resolve().parent
REPO = GOLDEN_DIR.parents[1]
#: row columns that hold wall-clock time: left out of every digest
TIMING_COLUMNS = ("replay_seconds",)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def ctxbench(cwd: Path, *args: str) -> tuple[int, str, str]:
    """Run the command line in ``cwd``; (exit code, stdout, stderr)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "ctxbench", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def generator(name: str) -> ModuleType:
    """The generator script ``tests/golden/NAME.py``, loaded as a module."""
    spec = importlib.util.spec_from_file_location(name, GOLDEN_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def golden(name: str) -> dict[str, Any]:
    """The golden file ``tests/golden/NAME`` as written by its generator."""
    data: dict[str, Any] = json.loads((GOLDEN_DIR / name).read_text("utf-8"))
    return data


def same(section: str, got: dict[str, Any], want: dict[str, Any]) -> None:
    """Compare key by key (into nested objects), so a failure names the part that changed."""
    assert sorted(got) == sorted(want), section
    for key in sorted(want):
        if isinstance(want[key], dict) and isinstance(got[key], dict):
            same(f"{section}.{key}", got[key], want[key])
        else:
            assert got[key] == want[key], f"{section}.{key} differs from the golden"


def shared_traces() -> Path | None:
    """The shared recorded traces (``CTXBENCH_TRACES``), None when the folder is absent."""
    path = Path(os.environ.get("CTXBENCH_TRACES", REPO.parent / "shared" / "traces"))
    return path if path.is_dir() else None


def write_golden(path: Path, generate: Callable[[Path | None], dict[str, Any]]) -> None:
    """What a generator does when run: ``generate`` over the shared traces, written to
    ``path`` (reviewed as a diff and committed)."""
    traces = shared_traces()
    if traces is None:
        raise SystemExit("set CTXBENCH_TRACES to the shared traces folder")
    document = generate(traces)
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path} ({path.stat().st_size} bytes)")
