"""The per-kind gate: ``check --min-kind safety=1.0 --max-kind-drop constraint=0`` (or the sweep
file's tables). A keep-last-N compactor loses a safety rule the user gave mid-run, and the gate
fails on it naming the probe, the answer missing and the call where it was lost; the Markdown
and JUnit outputs compare each limited kind over the cells."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli, main
from ctxbench.errors import ConfigError
from ctxbench.gate.baseline import Baseline, BaselineCell, load_baseline, make_baseline
from ctxbench.gate.check import Tolerances, check
from ctxbench.gate.check_report import junit_report, markdown_report, text_report
from ctxbench.gate.loss_table import ResultsLosses
from ctxbench.probes.kind_limits import KindLimits
from ctxbench.probes.losses import Loss, losses
from ctxbench.results import ResultsDir
from ctxbench.synth import generate, load_scenario
from ctxbench.synth.scenario_file import scenario_names
from ctxbench.testing import run_sweep
from tests.replaying import run as replay_run


def keep_last(
    messages: list[dict[str, Any]], budget: int, *, keep: int = 12
) -> list[dict[str, Any]]:
    """A keep-last-N compactor (the system prompt pinned), the plug-in users write first; it
    starts its tail at a message that is not a tool result, so no call loses its results."""
    system = [m for m in messages if m["role"] == "system"]
    tail = [m for m in messages if m["role"] != "system"][-keep:]
    while tail and tail[0]["role"] == "tool":
        tail = tail[1:]
    return system + tail


KEEP_LAST = f"{__name__}:keep_last"
SWEEP = f"""
windows = [1000000]  # `none` never overflows: it keeps every rule
min_kind_retention = {{ safety = 1.0 }}
[[traces]]
scenario = "coding_agent"
seeds = [1]  # its safety rule is asked at the end (seed 0 asks it the call after it is given)
[[strategies]]
name = "none"
[[strategies]]
name = "{KEEP_LAST}"
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("kinds")
    (folder / "gate.toml").write_text(SWEEP, "utf-8")
    return run_sweep(folder / "gate.toml", folder / "results")


def strategy_cell(doc: Baseline, strategy: str) -> BaselineCell:
    return next(c for c in doc.cells if c.strategy == strategy)


def test_a_keep_last_compactor_loses_a_mid_run_safety_rule_and_the_gate_names_it(
    results: Path,
) -> None:
    rows = ResultsDir(results).results()
    tol = Tolerances(kinds=KindLimits({"safety": 1.0}))
    report = check(rows, make_baseline(rows), tol, losses=ResultsLosses(results, rows))
    assert report.failed
    ((cell, finding),) = report.kind_failures  # `none` keeps every rule: only keep_last fails
    assert cell.current is not None and cell.current.strategy == KEEP_LAST
    assert finding.kind == "safety"
    assert finding.current < 1.0 and "under the floor 1" in finding.detail
    (lost,) = [x for x in finding.lost if x.probe_id == "safety-1"]
    assert lost.stated and lost.stated[0] > 1, "stated in a user message mid-run"
    assert lost.how == "dropped" and lost.stated_call is not None and lost.lost_at is not None
    assert lost.stated_call < lost.lost_at <= lost.asked_at
    text = text_report(report)
    assert f"safety-1 (safety, lost): {lost.missing[0]!r} missing at call {lost.asked_at}" in text
    assert f"lost at call {lost.lost_at} (after compaction {lost.compaction})" in text
    assert text.endswith("RESULT: REGRESSION")


def test_markdown_and_junit_compare_each_limited_kind(results: Path) -> None:
    rows = ResultsDir(results).results()
    tol = Tolerances(kinds=KindLimits({"safety": 1.0}, {"constraint": 0.0}))
    report = check(rows, make_baseline(rows), tol, losses=ResultsLosses(results, rows))
    md = markdown_report(report)
    assert "### Retention by probe kind" in md and "### Probes lost" in md
    safety_row = next(line for line in md.splitlines() if line.startswith("| safety |"))
    assert safety_row.endswith("| \\>\\= 1 | 1 |")  # the limit, and one cell failed it
    assert "safety\\-1 \\(safety\\, lost\\)" in md
    root = ET.fromstring(junit_report(report).split("\n", 1)[1])
    kinds = {
        c.get("name"): c for c in root.iter("testcase") if c.get("classname") == "ctxbench.kind"
    }
    assert set(kinds) == {"constraint", "safety"}
    assert kinds["constraint"].find("failure") is None  # same results: nothing dropped
    failure = kinds["safety"].find("failure")
    assert failure is not None and "safety-1 (safety, lost)" in str(failure.text)
    assert root.get("tests") == str(len(report.cells) + 2 + 1)


def test_a_kind_dropped_from_its_baseline_fails_beyond_the_allowed_drop(results: Path) -> None:
    rows = ResultsDir(results).results()
    doc = make_baseline(rows)
    cell = strategy_cell(doc, KEEP_LAST)
    assert cell.retention_by_kind is not None
    now = cell.retention_by_kind["constraint"]
    assert now < 1.0, "keep-last loses a constraint given mid-run"
    kept = replace(cell, retention_by_kind={**cell.retention_by_kind, "constraint": 1.0})
    better = replace(doc, cells=tuple(kept if c is cell else c for c in doc.cells))
    strict = check(rows, better, Tolerances(kinds=KindLimits({}, {"constraint": 0.0})))
    (finding,) = [f for c in strict.regressed for f in c.findings if f.kind]
    assert (finding.baseline, finding.current) == (1.0, now)
    assert finding.detail == f"dropped {1.0 - now:.4f} (max 0)"
    loose = check(rows, better, Tolerances(kinds=KindLimits({}, {"constraint": 1.0})))
    assert not loose.failed


def test_a_new_cell_under_a_floor_fails_without_a_baseline(results: Path) -> None:
    rows = ResultsDir(results).results()
    doc = make_baseline([r for r in rows if r.strategy == "none"])
    report = check(rows, doc, Tolerances(kinds=KindLimits({"safety": 1.0})))
    (failed,) = report.regressed
    assert failed.current is not None and failed.current.strategy == KEEP_LAST
    assert failed.baseline is None
    assert "ctxbench diff" not in text_report(report)  # no baseline run to diff against
    assert not check(rows, doc, Tolerances()).failed  # without the floor a new cell is news


def test_a_baseline_without_kinds_cannot_gate_a_drop(results: Path) -> None:
    rows = ResultsDir(results).results()
    doc = make_baseline(rows)
    doc = replace(doc, cells=tuple(replace(c, retention_by_kind=None) for c in doc.cells))
    with pytest.raises(ConfigError, match="records no retention by probe kind") as caught:
        check(rows, doc, Tolerances(kinds=KindLimits({}, {"constraint": 0.0})))
    assert "ctxbench baseline" in str(caught.value.hint)


def test_the_command_line_gate_reads_the_sweep_file_limits_and_exits_1(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = CliRunner()
    baseline = tmp_path / "b.json"
    assert runner.invoke(cli, ["baseline", str(results), "-o", str(baseline)]).exit_code == 0
    stored = load_baseline(baseline)
    assert all(c.retention_by_kind is not None for c in stored.cells)
    # the sweep file says min_kind_retention = { safety = 1.0 }: no option needed
    out = runner.invoke(cli, ["check", str(results), "--baseline", str(baseline)])
    assert out.exit_code == 1, out.output
    assert "safety-1 (safety, lost)" in out.output and "lost at call" in out.output
    # the command line wins per kind
    out = runner.invoke(
        cli, ["check", str(results), "--baseline", str(baseline), "--min-kind", "safety=0"]
    )
    assert out.exit_code == 0, out.output
    with pytest.raises(SystemExit) as info:
        main(["check", str(results), "--baseline", str(baseline), "--max-kind-drop", "safty=0"])
    assert info.value.code == 2
    said = capsys.readouterr().err
    assert "--max-kind-drop: 'safty=0': unknown probe kind 'safty'" in said
    assert "known kinds: recall, artifact" in said


@pytest.mark.parametrize("name", scenario_names())
def test_on_every_embedded_scenario_a_pinned_sliding_window_loses_a_rule_given_mid_run(
    name: str,
) -> None:
    """Constraints no longer come free: each scenario gives some in user messages mid-run, so
    ``sliding_window`` at its defaults (system prompt pinned) keeps under all of them, and the
    per-kind gate fails naming a constraint it lost and the call."""
    trace = next(generate(load_scenario(name), 0))
    out = replay_run(trace, "sliding_window", 10**6)
    row = out.result
    assert row.system_kept
    assert json.loads(row.retention_by_kind)["constraint"] < 1.0
    events = list(out.events)

    def lost(run_id: str) -> list[Loss]:
        return losses(events, trace.probes, trace.call_indices)

    tol = Tolerances(kinds=KindLimits({"constraint": 1.0}))
    report = check([row], make_baseline([row]), tol, losses=lost)
    ((_, finding),) = report.kind_failures
    named = [x for x in finding.lost if x.lost_at is not None]
    assert named and all(x.kind == "constraint" for x in finding.lost)
    system = {i for i, m in enumerate(trace.messages) if m.role == "system"}
    assert any(not set(x.stated) <= system for x in named), "a rule given outside the system prompt"
    assert f"lost at call {named[0].lost_at}" in text_report(report)
