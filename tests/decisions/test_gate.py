"""The gate compares a change with what it replaced: --match-by pairs a changed knob with its
old value, a strategy that forgets its task fails, improvements and failed-call changes are
reported, the baseline's own failures are warned about, and `diff` takes two results dirs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.decisions.matching import match_leftovers, parse_match_by, parse_renames, renamed
from ctxbench.engine.context import ReplayContext
from ctxbench.errors import ConfigError
from ctxbench.gate.baseline import Baseline, BaselineCell, make_baseline
from ctxbench.gate.check import Tolerances, check, compare_cell, improvements_of
from ctxbench.results import ResultsDir
from ctxbench.strategies.base import Strategy
from ctxbench.testing import run_sweep

MATCH_ALL = ("trace", "strategy", "window", "counter")


class ForgetsTask(Strategy):
    """A code change gone wrong: it drops the first user message (the task) once."""

    name: ClassVar[str] = "forgets_task"
    summary: ClassVar[str] = "drops the task"
    source: ClassVar[str] = "tests/decisions/test_gate.py"

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.dropped = False

    def before_call(self, ctx: ReplayContext) -> None:
        messages = ctx.view.messages
        first = next((i for i, m in enumerate(messages) if m.role == "user"), None)
        if not self.dropped and first is not None:
            self.dropped = True
            ctx.apply("forget", [m for i, m in enumerate(messages) if i != first])


def sweep_file(path: Path, strategies: str, window: int = 16384) -> Path:
    path.write_text(
        f"""name = "gate"
windows = [{window}]
reserved = [2048]
counters = ["tiktoken:o200k_base"]
estimators = [""]
summarizer = "extractive"

[[traces]]
scenario = "support_agent"
seeds = [0]
{strategies}
""",
        "utf-8",
    )
    return path


def dbgpt(thresholds: str) -> str:
    return f'\n[[strategies]]\nname = "dbgpt"\nparams = {{ warning_threshold = {thresholds} }}\n'


@pytest.fixture(scope="module")
def knob_sweeps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("knob")
    old = run_sweep(sweep_file(root / "old.toml", dbgpt("[0.6, 0.7]")), root / "old")
    new = run_sweep(sweep_file(root / "new.toml", dbgpt("[0.6, 0.8]")), root / "new")
    return old, new


def test_a_changed_knob_is_compared_with_its_old_value_under_match_by(
    knob_sweeps: tuple[Path, Path],
) -> None:
    old, new = knob_sweeps
    baseline = make_baseline(ResultsDir(old).results(), str(old))
    rows = ResultsDir(new).results()
    plain = check(rows, baseline, Tolerances())
    assert len(plain.missing) == 1 and len(plain.new) == 1 and plain.failed
    paired = check(rows, baseline, Tolerances(), MATCH_ALL)
    assert not paired.missing and not paired.new
    (changed,) = [c for c in paired.cells if c.matched_by == ",".join(MATCH_ALL)]
    assert changed.baseline is not None and changed.current is not None
    assert json.loads(changed.baseline.params or "")["warning_threshold"] == 0.7
    assert json.loads(changed.current.params or "")["warning_threshold"] == 0.8
    assert changed.status in ("ok", "improved", "regressed")
    out = CliRunner().invoke(
        cli,
        [
            "check",
            str(new),
            "--baseline",
            _save(baseline, old / "b.json"),
            "--match-by",
            "trace,strategy,window,counter",
        ],
    )
    assert "warning_threshold 0.7 -> 0.8" in out.output
    assert "dbgpt@0.8.2 (warning_threshold=0.8) | support_agent-s0-0 | w=16384" in out.output
    assert "0 missing, 0 new" in out.output


def test_diff_takes_a_baseline_results_directory_and_a_current_one(
    knob_sweeps: tuple[Path, Path],
) -> None:
    old, new = knob_sweeps
    baseline = make_baseline(ResultsDir(old).results(), str(old))
    report = check(ResultsDir(new).results(), baseline, Tolerances(), MATCH_ALL)
    (changed,) = [c for c in report.cells if c.matched_by == ",".join(MATCH_ALL)]
    out = CliRunner().invoke(
        cli,
        ["diff", str(old), str(new), "--run-a", changed.baseline_run_id, "--run-b", changed.run_id],
    )
    assert out.exit_code == 0, out.output
    assert "first divergence at call" in out.output or "identical" in out.output
    same = CliRunner().invoke(cli, ["diff", str(old), str(old), "--run-a", changed.baseline_run_id])
    assert "identical" in same.output
    missing = CliRunner().invoke(cli, ["diff", str(old), str(new)])
    assert missing.exit_code != 0 and "--run-a" in str(missing.exception or missing.output)


def test_a_strategy_that_forgets_its_task_fails_the_gate(tmp_path: Path) -> None:
    none = '\n[[strategies]]\nname = "none"\n'
    forgets = '\n[[strategies]]\nname = "tests.decisions.test_gate:ForgetsTask"\n'
    before = run_sweep(sweep_file(tmp_path / "a.toml", none, 131072), tmp_path / "before")
    after = run_sweep(sweep_file(tmp_path / "b.toml", forgets, 131072), tmp_path / "after")
    baseline = _save(make_baseline(ResultsDir(before).results(), str(before)), tmp_path / "b.json")
    by = ["check", str(after), "--baseline", baseline, "--match-by", "trace,window,counter"]
    # two different strategies are compared only when the user says one replaces the other
    refused = CliRunner().invoke(cli, by)
    assert isinstance(refused.exception, ConfigError)  # `ctxbench` prints it and exits 2
    assert "would compare strategy none with" in str(refused.exception)
    assert "--rename none=tests.decisions.test_gate:ForgetsTask" in str(refused.exception)
    out = CliRunner().invoke(cli, [*by, "--rename", "none=tests.decisions.test_gate:ForgetsTask"])
    assert out.exit_code == 1, out.output
    assert "retention" in out.output and "REGRESSION" in out.output
    command = next(
        line.strip() for line in out.output.splitlines() if line.strip().startswith("ctxbench diff")
    )
    assert str(before) in command and str(after) in command
    diff = CliRunner().invoke(cli, command.split()[1:])
    assert "task-1: in_context -> lost" in diff.output


def test_cost_changes_come_with_the_failed_call_change() -> None:
    base = BaselineCell(
        run_id="a",
        key="k",
        retention=0.5,
        input_tokens_total=1000,
        failed_calls=41,
        overflow_errors=41,
    )
    cur = BaselineCell(
        run_id="b",
        key="k",
        retention=0.5,
        input_tokens_total=2380,
        failed_calls=22,
        overflow_errors=22,
    )
    (finding,) = compare_cell(base, cur, Tolerances())
    assert finding.metric == "input_tokens_total" and "+138.00%" in finding.detail
    assert "failed calls 41 -> 22" in finding.detail and "billed" in finding.detail
    better = improvements_of(base, cur)
    assert [f.metric for f in better] == ["failed_calls"]


def test_improvements_are_reported_beside_regressions(knob_sweeps: tuple[Path, Path]) -> None:
    old, _ = knob_sweeps
    rows = ResultsDir(old).results()
    baseline = make_baseline(rows)
    i, worse = next((i, c) for i, c in enumerate(baseline.cells) if c.retention is not None)
    cells = list(baseline.cells)
    cells[i] = replace(worse, retention=round((worse.retention or 0) - 0.1, 4))
    report = check(rows, replace(baseline, cells=tuple(cells)), Tolerances())
    (improved,) = report.improved
    assert improved.status == "improved" and improved.improvements[0].metric == "retention"
    assert not report.failed


def test_baseline_and_check_warn_when_the_baseline_itself_failed(tmp_path: Path) -> None:
    none = '\n[[strategies]]\nname = "none"\n'
    results = run_sweep(sweep_file(tmp_path / "n.toml", none, 16384), tmp_path / "none")
    out = CliRunner().invoke(cli, ["baseline", str(results), "-o", str(tmp_path / "b.json")])
    assert out.exit_code == 0
    assert "warning: the baseline has" in out.stderr
    check_out = CliRunner().invoke(
        cli, ["check", str(results), "--baseline", str(tmp_path / "b.json")]
    )
    assert (
        check_out.output.startswith("warning: the baseline has")
        and "failed calls of" in check_out.output
    )


def test_match_by_names_are_checked() -> None:
    assert parse_match_by("trace, window") == ("trace", "window")
    with pytest.raises(ConfigError, match="unknown field 'params'"):
        parse_match_by("trace,params")


def _save(doc: Baseline, path: Path) -> str:
    path.write_text(doc.text(), "utf-8")
    return str(path)


def test_match_by_refuses_a_pairing_that_would_be_a_guess() -> None:
    def cell(run_id: str, strategy: str, keep: int) -> BaselineCell:
        return BaselineCell(
            run_id=run_id,
            key=f"t|{strategy}(keep={keep})|w=1",
            trace_id="t",
            strategy=strategy,
            window=1,
            counter="c",
            params=json.dumps({"keep": keep}),
        )

    base = [cell("a", "s", 1), cell("b", "s", 2)]
    current = [cell("c", "s", 3), cell("d", "s", 4)]
    with pytest.raises(ConfigError, match="2 baseline cells and 2 current cells agree"):
        match_leftovers(base, current, MATCH_ALL)
    # one on each side is no guess
    assert match_leftovers(base[:1], current[:1], MATCH_ALL) == [(base[0], current[0])]


def test_rename_compares_a_moved_plug_ins_cells_by_their_key() -> None:
    old = BaselineCell(run_id="a", key="t|old.mod:compact(keep=1)|w=1", strategy="old.mod:compact")
    (moved,) = renamed([old], parse_renames(["old.mod:compact=new.mod:compact"]))
    assert moved.key == "t|new.mod:compact(keep=1)|w=1"
    assert moved.strategy == "new.mod:compact"
    with pytest.raises(ConfigError, match="is not OLD=NEW"):
        parse_renames(["old.mod:compact"])
