"""The CI regression gate: baselines, tolerances, new and missing cells, JUnit, Markdown,
exit codes, the example GitHub Actions workflow, and the ctxbench.testing API."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
import yaml
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.gate.baseline import Baseline, BaselineCell, load_baseline, make_baseline
from ctxbench.gate.check import Tolerances, check, compare_cell
from ctxbench.sweep import ResultsDir
from ctxbench.testing import assert_no_regression, run_sweep, write_baseline
from tests import REPO

CI_SWEEP = REPO / "examples" / "ci" / "ci-sweep.toml"
EVENTS = "baseline.events.jsonl.gz"  # the committed example baselines' events files
WORKFLOW = REPO / "examples" / "github-actions" / "ctxbench.yml"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_sweep(CI_SWEEP, tmp_path_factory.mktemp("ci") / "results")


@pytest.fixture()
def baseline(results: Path, tmp_path: Path) -> Baseline:
    return make_baseline(ResultsDir(results).results())


def save(doc: Baseline, path: Path) -> Path:
    path.write_text(doc.text(), "utf-8")
    return path


def edited(doc: Baseline, index: int, **changes: Any) -> Baseline:
    """``doc`` with its cell ``index`` changed (run id, key, a metric...)."""
    cells = list(doc.cells)
    cells[index] = replace(cells[index], **changes)
    return replace(doc, cells=tuple(cells))


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


# -- baseline ------------------------------------------------------------------------------------


def test_baseline_records_every_cell_by_run_id_and_key_with_versions(
    results: Path, tmp_path: Path
) -> None:
    out = invoke("baseline", str(results), "-o", str(tmp_path / "b.json"))
    assert out.exit_code == 0, out.output
    doc = load_baseline(tmp_path / "b.json")
    rows = ResultsDir(results).results()
    assert [c.run_id for c in doc.cells] == sorted(r.run_id for r in rows)
    assert doc.ctxbench_version and doc.result_schema_version == "ctxbench.result/1"
    assert all("|w=" in c.key and c.trace_id and c.trace_id in c.key for c in doc.cells)
    assert len({c.key for c in doc.cells}) == len(doc.cells)
    assert doc.results_dir == str(results) and doc.events == "b.events.jsonl.gz"
    assert (tmp_path / "b.json").read_text("utf-8") == make_baseline(
        rows, str(results), "b.events.jsonl.gz"
    ).text()


def test_a_baseline_file_is_the_same_bytes_as_the_committed_example_recorded_by_ctxbench_baseline(
    results: Path,
) -> None:
    """``examples/ci/baseline.json`` was written by ``ctxbench baseline /tmp/ci-results`` (its
    generator; record it again after an intended change): the same sweep gives its bytes."""
    rows = ResultsDir(results).results()
    doc = make_baseline(rows, "/tmp/ci-results", EVENTS)
    committed = (REPO / "examples" / "ci" / "baseline.json").read_text("utf-8")
    assert doc.text() == committed
    assert load_baseline(REPO / "examples" / "ci" / "baseline.json") == doc


def test_the_committed_example_baseline_matches_this_ctxbench(results: Path) -> None:
    """The example gate passes on an unchanged ctxbench (regenerate it after intended changes)."""
    assert_no_regression(results, REPO / "examples" / "ci" / "baseline.json")


# -- exit codes ----------------------------------------------------------------------------------------


def test_check_exits_0_when_nothing_regressed(
    results: Path, baseline: Baseline, tmp_path: Path
) -> None:
    out = invoke("check", str(results), "--baseline", str(save(baseline, tmp_path / "b.json")))
    assert out.exit_code == 0, out.output
    assert "RESULT: ok" in out.output


def test_check_exits_1_on_a_retention_regression(
    results: Path, baseline: Baseline, tmp_path: Path
) -> None:
    i, cell = next(
        (i, c) for i, c in enumerate(baseline.cells) if c.retention is not None and c.retention < 1
    )
    better = edited(baseline, i, retention=round((cell.retention or 0) + 0.25, 4))
    out = invoke("check", str(results), "--baseline", str(save(better, tmp_path / "b.json")))
    assert out.exit_code == 1
    assert "retention" in out.output and "REGRESSION" in out.output
    assert cell.run_id in out.output and f"--run-a {cell.run_id}" in out.output
    assert cell.key not in out.output  # readable names, not 150-character keys


@pytest.mark.parametrize("args", [["--baseline", "missing.json"], ["--max-retention-drop", "-1"]])
def test_check_exits_2_on_usage_or_input_errors(
    results: Path, baseline: Baseline, tmp_path: Path, args: list[str]
) -> None:
    base = ["--baseline", str(save(baseline, tmp_path / "b.json"))]
    if args[0] == "--baseline":
        base = ["--baseline", str(tmp_path / args[1])]
        args = []
    from ctxbench.cli import main

    with pytest.raises(SystemExit) as info:
        main(["check", str(results), *base, *args])
    assert info.value.code == 2


def test_check_of_a_directory_that_is_not_results_exits_2(
    tmp_path: Path, baseline: Baseline
) -> None:
    from ctxbench.cli import main

    with pytest.raises(SystemExit) as info:
        main(["check", str(tmp_path), "--baseline", str(save(baseline, tmp_path / "b.json"))])
    assert info.value.code == 2


# -- tolerances --------------------------------------------------------------------------------------


def cell(**kw: Any) -> BaselineCell:
    base: dict[str, Any] = {
        "run_id": "r",
        "key": "k",
        "retention": 0.8,
        "cost_usd": 1.0,
        "input_tokens_total": 1000,
        "failed_calls": 0,
        "overflow_errors": 0,
        "pairing_violations": 0,
        "error": None,
    }
    return BaselineCell(**{**base, **kw})


def test_a_retention_drop_equal_to_the_tolerance_passes_and_a_larger_one_fails() -> None:
    tol = Tolerances(max_retention_drop=0.05)
    assert compare_cell(cell(), cell(retention=0.75), tol) == []
    assert [f.metric for f in compare_cell(cell(), cell(retention=0.7499), tol)] == ["retention"]


def test_a_cost_rise_equal_to_the_tolerance_passes_and_a_larger_one_fails() -> None:
    tol = Tolerances(max_cost_increase=0.10)
    assert compare_cell(cell(), cell(cost_usd=1.10), tol) == []
    assert [f.metric for f in compare_cell(cell(), cell(cost_usd=1.1001), tol)] == ["cost_usd"]


def test_cost_falls_back_to_input_tokens_without_prices() -> None:
    tol = Tolerances(max_cost_increase=0.0)
    found = compare_cell(cell(cost_usd=None), cell(cost_usd=None, input_tokens_total=1001), tol)
    assert [f.metric for f in found] == ["input_tokens_total"]


def test_improvements_never_fail() -> None:
    assert (
        compare_cell(cell(), cell(retention=0.9, cost_usd=0.5, input_tokens_total=10), Tolerances())
        == []
    )


def test_new_overflows_fail_only_when_asked() -> None:
    worse = cell(failed_calls=2, overflow_errors=3)
    assert compare_cell(cell(), worse, Tolerances()) == []
    assert {
        f.metric for f in compare_cell(cell(), worse, Tolerances(fail_on_new_overflow=True))
    } == {"failed_calls", "overflow_errors"}


def test_pairing_violations_and_new_errors_always_fail() -> None:
    found = compare_cell(cell(), cell(pairing_violations=1, error="ValueError: x"), Tolerances())
    assert {f.metric for f in found} == {"pairing_violations", "error"}


def test_the_aggregate_fails_when_mean_retention_drops_beyond_tolerance(
    results: Path, baseline: Baseline
) -> None:
    rows = ResultsDir(results).results()
    worse = replace(
        baseline,
        cells=tuple(
            c if c.retention is None else replace(c, retention=min(1.0, c.retention + 0.02))
            for c in baseline.cells
        ),
    )
    report = check(rows, worse, Tolerances(max_retention_drop=0.03))
    assert report.regressed == [] and report.aggregate == []
    report = check(rows, worse, Tolerances(max_retention_drop=0.01))
    assert any(f.metric == "mean retention" for f in report.aggregate)


# -- new, missing and renamed cells ---------------------------------------------------------------------


def test_missing_cells_fail_unless_allowed_and_new_cells_are_reported(
    results: Path, baseline: Baseline, tmp_path: Path
) -> None:
    dropped, kept = baseline.cells[0], baseline.cells[1:]
    ghost = replace(kept[0], run_id="ffffffffffffffff", key="ghost|none()|w=1|r=0|x|y|z")
    path = save(replace(baseline, cells=(*kept, ghost)), tmp_path / "b.json")
    out = invoke("check", str(results), "--baseline", str(path))
    assert out.exit_code == 1
    assert f"(run {dropped.run_id}) has no baseline" in out.output
    assert "(run ffffffffffffffff) is in the baseline but not in the results" in out.output
    out = invoke("check", str(results), "--baseline", str(path), "--allow-missing")
    assert out.exit_code == 0, out.output


def test_a_cell_whose_run_id_changed_still_matches_by_key(
    results: Path, baseline: Baseline
) -> None:
    moved = edited(baseline, 0, run_id="0000000000000000")
    report = check(ResultsDir(results).results(), moved, Tolerances())
    renamed = [c for c in report.cells if c.matched_by == "key"]
    assert len(renamed) == 1 and not report.failed and not report.new and not report.missing


# -- reports ------------------------------------------------------------------------------------------------


def test_junit_has_one_test_case_per_cell_and_parses_back(
    results: Path, baseline: Baseline, tmp_path: Path
) -> None:
    baseline = edited(baseline, 0, retention=1.0, input_tokens_total=1)
    ghost = replace(baseline.cells[1], run_id="ffffffffffffffff", key="ghost")
    baseline = replace(baseline, cells=(*baseline.cells, ghost))
    path = save(baseline, tmp_path / "b.json")
    out = invoke(
        "check",
        str(results),
        "--baseline",
        str(path),
        "--junit",
        str(tmp_path / "j.xml"),
        "--markdown",
        str(tmp_path / "s.md"),
    )
    assert out.exit_code == 1
    suite = ET.parse(tmp_path / "j.xml").getroot()
    cases = suite.findall("testcase")
    rows = ResultsDir(results).results()
    assert len(cases) == len(rows) + 1 + 1  # every cell, the missing ghost, the aggregate
    failed = [c for c in cases if c.find("failure") is not None]
    assert int(suite.get("failures", "0")) == len(failed) >= 2
    report = check(rows, baseline, Tolerances())
    names = {c.run_id: c.name for c in report.cells}
    assert {c.get("name") for c in failed} >= {names[baseline.cells[0].run_id]}
    assert all(" | w=" in str(c.get("name")) for c in failed if c.get("name") != "aggregate")
    md = (tmp_path / "s.md").read_text("utf-8")
    assert md.startswith("## ctxbench check: ❌ regression") and "| cell | runs | metric |" in md
    assert "ctxbench diff" in md


# -- ctxbench.testing and the example workflow -----------------------------------------------------


def test_testing_api_passes_on_the_same_results_and_raises_on_a_regression(
    results: Path, tmp_path: Path
) -> None:
    path = write_baseline(results, tmp_path / "b.json")
    assert not assert_no_regression(results, path).failed
    save(edited(load_baseline(path), 0, cost_usd=0.000001), path)
    with pytest.raises(AssertionError, match="ctxbench regression"):
        assert_no_regression(results, path)


def test_the_example_workflow_commands_run_and_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text("utf-8"))
    steps = workflow["jobs"]["compaction-gate"]["steps"]
    commands = [s["run"] for s in steps if str(s.get("run", "")).startswith("ctxbench ")]
    assert [c.split()[1] for c in commands] == ["sweep", "check", "report"]
    monkeypatch.chdir(REPO)
    out_dir = tmp_path / "ci-results"
    for command in commands:
        argv = [a.replace("ci-results", str(out_dir)) for a in shlex.split(command)[1:]]
        result = CliRunner().invoke(cli, argv)
        assert result.exit_code == 0, f"{command}\n{result.output}"
    assert (out_dir / "report.html").stat().st_size > 10_000
    assert ET.parse(out_dir / "junit.xml").getroot().get("failures") == "0"
    assert "no regression" in (out_dir / "summary.md").read_text("utf-8")


# -- the gate in CI: the baseline's events, plug-in versions -----------------------------------


def test_the_printed_diff_command_works_where_the_baselines_results_are_gone(
    results: Path, tmp_path: Path
) -> None:
    import shutil

    old = tmp_path / "old-results"
    shutil.copytree(results, old)
    out = invoke("baseline", str(old), "-o", str(tmp_path / "b.json"))
    assert out.exit_code == 0, out.output
    assert (tmp_path / "b.events.jsonl.gz").is_file()
    shutil.rmtree(old)  # CI: only the committed baseline and its events are there
    doc = load_baseline(tmp_path / "b.json")
    assert doc.events == "b.events.jsonl.gz"
    save(edited(doc, 0, retention=1.0), tmp_path / "b.json")  # the current cell then dropped
    out = invoke("check", str(results), "--baseline", str(tmp_path / "b.json"))
    assert out.exit_code == 1
    (command,) = [
        line.strip() for line in out.output.splitlines() if line.startswith("  ctxbench diff")
    ]
    args = shlex.split(command)[1:]
    assert args[1] == str(tmp_path / "b.events.jsonl.gz") and "--run-b" in args
    shown = invoke(*args)
    assert shown.exit_code == 0, shown.output
    assert "A (" in shown.output or "identical" in shown.output


def test_check_names_a_plug_in_whose_code_changed() -> None:
    from ctxbench.gate.check import CellCheck, CheckReport
    from ctxbench.gate.check_report import match_notes

    base = cell(run_id="a", key="k", plugin="mypkg.mod:compact@sha256:1111")
    cur = cell(run_id="b", key="k", plugin="mypkg.mod:compact@sha256:2222", retention=0.5)
    matched = CellCheck("k", "b", "regressed", "key", [], base, cur, [], "compact")
    (note,) = match_notes(CheckReport([matched], [], Tolerances()))
    assert note.endswith("plug-in code mypkg.mod:compact sha256:1111 -> sha256:2222")


PLUGIN_REPO = REPO / "examples" / "plugin-repo"
PLUGIN_WORKFLOW = REPO / "examples" / "github-actions" / "plugin-gate.yml"


def plugin_gate_commands() -> list[str]:
    workflow = yaml.safe_load(PLUGIN_WORKFLOW.read_text("utf-8"))
    steps = workflow["jobs"]["compaction-gate"]["steps"]
    return [s["run"] for s in steps if str(s.get("run", "")).startswith("ctxbench ")]


def test_the_plug_in_workflow_gates_the_example_teams_compactor_against_its_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = plugin_gate_commands()
    assert [c.split()[1] for c in commands] == ["sweep", "check", "report"]
    assert all("--allow-plugins" in c for c in commands if c.split()[1] != "check")
    monkeypatch.chdir(PLUGIN_REPO)
    monkeypatch.syspath_prepend(str(PLUGIN_REPO / "src"))  # what `pip install -e .` does
    out_dir = tmp_path / "gate-results"
    for command in commands:
        argv = [a.replace("gate-results", str(out_dir)) for a in shlex.split(command)[1:]]
        result = CliRunner().invoke(cli, argv)
        assert result.exit_code == 0, f"{command}\n{result.output}"
    assert "no regression" in (out_dir / "summary.md").read_text("utf-8")
    # its committed baseline is what `ctxbench baseline /tmp/gate-results` writes, byte for
    # byte, each cell naming the version of the plug-in's code
    doc = make_baseline(ResultsDir(out_dir).results(), "/tmp/gate-results", EVENTS)
    assert doc.text() == (PLUGIN_REPO / "ctxbench" / "baseline.json").read_text("utf-8")
    assert all(c.plugin.startswith("acme_agent.compaction:compact@sha256:") for c in doc.cells)


def test_the_example_teams_v2_that_keeps_fewer_messages_fails_and_its_diff_hint_works(
    tmp_path: Path,
) -> None:
    import os
    import shutil
    import subprocess
    import sys

    repo = tmp_path / "acme"
    shutil.copytree(PLUGIN_REPO, repo)
    code = repo / "src" / "acme_agent" / "compaction.py"
    v1 = code.read_text("utf-8")
    code.write_text(v1.replace("messages[-keep_last:]", "messages[-(keep_last // 2) :]"))
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{repo / 'src'}"}

    def ctxbench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ctxbench", *args],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    swept = ctxbench("sweep", "ctxbench/gate.toml", "-o", "gate-results", "-q", "--allow-plugins")
    assert swept.returncode == 0, swept.stderr
    checked = ctxbench("check", "gate-results", "--baseline", "ctxbench/baseline.json")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "plug-in code acme_agent.compaction:compact sha256:" in checked.stdout
    hint = next(line for line in checked.stdout.splitlines() if line.startswith("  ctxbench diff"))
    args = shlex.split(hint)[1:]
    assert args[1] == "ctxbench/baseline.events.jsonl.gz"  # committed: no old results needed
    shown = ctxbench(*args)
    assert shown.returncode == 0, shown.stderr
    assert (
        shown.stdout.startswith("first divergence at call") and "compaction compact" in shown.stdout
    )
