"""The light core: ``pip install ctxbench`` (no extras) runs the first-result commands, and a
command that needs an extra says which one to install.

Each test runs the CLI in a fresh interpreter whose import system refuses the heavy packages
(a meta-path finder that raises ``ModuleNotFoundError`` for them, as an interpreter without
them would), so an eager import of one of them anywhere on the path of a light command
fails here, in CI, before a user's core install does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxbench.errors import CtxbenchError
from ctxbench.extras import EXTRAS, MissingExtraError, require

REPO = Path(__file__).resolve().parents[1]
SWEEP = """
windows = [16384]
[[traces]]
scenario = "support_agent"
[[strategies]]
name = "none"
[[strategies]]
name = "sliding_window"
"""
#: What a core install does not have.
HEAVY = ("pyarrow", "pandas", "datasets", "transformers", "dask", "distributed", "playwright")

BLOCKER = """
import importlib.abc, sys
HEAVY = {heavy!r}
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HEAVY:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Refuse())
"""
CLI = """
from ctxbench.cli import main
try:
    code = main(sys.argv[1:])
finally:
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in HEAVY)
    assert not loaded, loaded
sys.exit(code)
"""


def core_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``ctxbench ARGS`` in an interpreter without the heavy packages."""
    return core_python(CLI, *args, cwd=cwd)


def core_python(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Python ``code`` in an interpreter without the heavy packages."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(
        [sys.executable, "-c", BLOCKER.format(heavy=HEAVY) + code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's core quickstart, run without the heavy packages: gen, run, baseline."""
    here = tmp_path_factory.mktemp("core")
    ok(core_cli("gen", "sql_agent", "-o", "traces.jsonl", "--seed", "1", cwd=here))
    (here / "res").mkdir()
    run = ("run", "traces.jsonl", "-s", "dbgpt", "-w", "16k", "--counter", "tiktoken:o200k_base")
    ok(core_cli(*run, "--out", "res/results.jsonl", "--events", "res/events.jsonl", cwd=here))
    ok(core_cli("baseline", "res", "-o", "baseline.json", cwd=here))
    return here


def test_the_quickstart_runs_without_the_heavy_packages(quickstart: Path) -> None:
    rows = [json.loads(line) for line in (quickstart / "res/results.jsonl").open()]
    assert len(rows) == 1 and rows[0]["strategy"] == "dbgpt" and rows[0]["calls"] > 0
    assert json.loads((quickstart / "baseline.json").read_text())["cells"]
    out = ok(core_cli("check", "res", "--baseline", "baseline.json", cwd=quickstart))
    assert "RESULT: ok" in out


def test_score_grades_a_saved_compaction_without_the_heavy_packages(quickstart: Path) -> None:
    (quickstart / "summary.txt").write_text("The agent is working on the task.", "utf-8")
    args = ("score", "--compacted", "summary.txt", "--trace", "traces.jsonl", "--json")
    doc = json.loads(ok(core_cli(*args, cwd=quickstart)))
    assert doc["probes"] and doc["history_tokens"] > doc["compacted_tokens"] > 0


def test_diff_and_an_hf_counter_need_no_heavy_package(quickstart: Path) -> None:
    run_id = json.loads((quickstart / "res/results.jsonl").read_text().splitlines()[0])["run_id"]
    out = ok(core_cli("diff", run_id, run_id, "--results", "res", cwd=quickstart))
    assert "identical" in out or "diverge" in out
    hf = ("run", "traces.jsonl", "-s", "none", "-w", "128k", "--counter", "hf:qwen2.5")
    assert "none" in ok(core_cli(*hf, cwd=quickstart))


def test_the_viewer_and_the_report_need_no_heavy_package(quickstart: Path) -> None:
    ok(core_cli("view", "res", "-o", "viewer", cwd=quickstart))
    assert (quickstart / "viewer" / "index.html").is_file()
    ok(core_cli("report", "res", "-o", "report.html", cwd=quickstart))
    assert "<html" in (quickstart / "report.html").read_text("utf-8")[:500].lower()


def test_a_parquet_output_names_the_extra_before_replaying(quickstart: Path) -> None:
    run = ("run", "traces.jsonl", "-s", "dbgpt", "-w", "16k", "--out", "rows.parquet")
    result = core_cli(*run, cwd=quickstart)
    assert result.returncode == 2
    assert "needs pyarrow" in result.stderr
    assert "pip install 'ctxbench[parquet]'" in result.stderr
    assert "Traceback" not in result.stderr
    assert "trace_id" not in result.stdout  # refused before any replay


def test_a_sweep_without_pyarrow_writes_its_table_as_json_lines(tmp_path: Path) -> None:
    """The core sweeps too: its final table is results.jsonl (the same rows parquet holds, a
    note says how to get parquet), which the report, the gate and a resumed sweep read."""
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP, "utf-8")
    result = core_cli("sweep", str(sweep), "-o", "out", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "pip install 'ctxbench[parquet]'" in result.stderr
    assert f"results: {Path('out') / 'results.jsonl'}" in result.stdout
    out = tmp_path / "out"
    assert not (out / "results.parquet").exists()
    rows = [json.loads(line) for line in (out / "results.jsonl").open()]
    assert len(rows) == 2 and sorted(r["run_id"] for r in rows) == [r["run_id"] for r in rows]
    again = core_cli("sweep", str(sweep), "-o", "out", "--resume", "--quiet", cwd=tmp_path)
    assert "2 cells: 0 ran, 2 already done" in ok(again)
    assert [json.loads(line) for line in (out / "results.jsonl").open()] == rows
    ok(core_cli("baseline", "out", "-o", "baseline.json", cwd=tmp_path))
    assert "RESULT: ok" in ok(core_cli("check", "out", "--baseline", "baseline.json", cwd=tmp_path))
    ok(core_cli("report", "out", "-o", "report.html", cwd=tmp_path))
    assert "sliding_window" in (tmp_path / "report.html").read_text("utf-8")


def test_the_json_lines_table_holds_the_rows_the_parquet_table_holds(tmp_path: Path) -> None:
    """The same sweep with and without pyarrow: the same rows, read back by ResultsDir."""
    from dataclasses import replace

    from ctxbench.results import ResultsDir
    from ctxbench.testing import run_sweep

    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP, "utf-8")
    ok(core_cli("sweep", str(sweep), "-o", "core", "--quiet", cwd=tmp_path))
    run_sweep(sweep, tmp_path / "full")
    core, full = ResultsDir(tmp_path / "core"), ResultsDir(tmp_path / "full")
    untimed = [[replace(r, replay_seconds=0.0) for r in d.results()] for d in (core, full)]
    assert untimed[0] == untimed[1] and len(untimed[0]) == 2
    assert core.complete and full.complete
    assert [e for _, e in core.typed_events()] == [e for _, e in full.typed_events()]


def test_require_names_the_extra_of_a_missing_package(tmp_path: Path) -> None:
    code = """
from ctxbench.extras import MissingExtraError, require
for module in ("pyarrow.parquet", "pandas", "datasets", "distributed", "playwright.sync_api"):
    try:
        require(module, what="the feature")
    except MissingExtraError as exc:
        print(str(exc).replace(chr(10), " | "))
"""
    lines = ok(core_python(code, cwd=tmp_path)).splitlines()
    assert lines == [
        f"the feature needs {top}, which this installation does not have | "
        f"  hint: pip install 'ctxbench[{extra}]' (or 'ctxbench[all]')"
        for top, extra in [
            ("pyarrow", "parquet"),
            ("pandas", "pandas"),
            ("datasets", "hf"),
            ("distributed", "dask"),
            ("playwright", "browser"),
        ]
    ]


def test_require_raises_a_missing_submodule_as_it_is() -> None:
    with pytest.raises(ModuleNotFoundError):
        require("pyarrow.no_such_module_at_all", what="this test")


def test_require_refuses_a_package_that_is_no_extra() -> None:
    with pytest.raises(ValueError, match="not an optional package"):
        require("json", what="this test")


def test_every_extra_is_declared_in_pyproject() -> None:
    text = (REPO / "pyproject.toml").read_text()
    for extra in set(EXTRAS.values()):
        assert f"\n{extra} = [" in text, extra
    assert issubclass(MissingExtraError, CtxbenchError)
