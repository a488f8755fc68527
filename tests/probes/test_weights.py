"""Kind weighting as a sweep knob (issue 19): ``kind_weights`` in the sweep file flows to
``recommend``, the closing lines of ``sweep`` and the report's verdict; equal weights are the
default; per-kind retention is reported whatever the weights."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.decisions.outcomes import read_outcomes
from ctxbench.decisions.recommend import recommend
from ctxbench.decisions.verdict import render_verdict, verdict_of
from ctxbench.errors import ConfigError
from ctxbench.probes.weights import KindWeights, sweep_weights
from ctxbench.report.results import load_results
from ctxbench.sweep import load_sweep

ONLY_TASK = {"task": 1.0, **{k: 0.0 for k in ("recall", "artifact", "decision", "continuation",
             "constraint", "superseded", "finished_task")}}  # fmt: skip


def _sweep(tmp_path: Path, top: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(
        f'windows = [6000]\nreserved = [1000]\ncounters = ["chars4"]\n{top}\n'
        '[[traces]]\nscenario = "support_agent"\nseeds = [0, 1]\n'
        '[[strategies]]\nname = "none"\n'
        '[[strategies]]\nname = "sliding_window"\nparams = { keep_rounds = [2, 6] }\n',
        encoding="utf-8",
    )
    return path


def test_the_default_is_equal_weights_and_is_not_recorded(tmp_path: Path) -> None:
    spec = load_sweep(_sweep(tmp_path, ""))
    assert "kind_weights" not in spec.to_dict()
    assert sweep_weights({"spec": spec.to_dict()}) == KindWeights() and KindWeights().equal
    weighted = load_sweep(_sweep(tmp_path, "kind_weights = { task = 2 }")).to_dict()
    assert sweep_weights({"spec": weighted}) == KindWeights({"task": 2.0})


def test_the_sweep_file_checks_its_weights(tmp_path: Path) -> None:
    spec = load_sweep(_sweep(tmp_path, "kind_weights = { task = 2, recall = 0 }"))
    assert spec.to_dict()["kind_weights"] == {"task": 2, "recall": 0}
    for bad, words in (
        ("kind_weights = { tsak = 2 }", "unknown probe kind"),
        ('kind_weights = { task = "2" }', "probe kind = number"),
        ("kind_weights = { task = -1 }", "finite number >= 0"),
    ):
        with pytest.raises(ConfigError, match=words) as info:
            load_sweep(_sweep(tmp_path, bad))
        assert info.value.key == "kind_weights" and info.value.path == str(tmp_path / "s.toml")


def test_weights_from_the_sweep_flow_to_recommend_and_the_verdict(tmp_path: Path) -> None:
    weights = ", ".join(f"{k} = {w:g}" for k, w in ONLY_TASK.items())
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        ["sweep", str(_sweep(tmp_path, f"kind_weights = {{ {weights} }}")), "-o", str(out),
         "-j", "1", "-q"],
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    runs = read_outcomes(out)
    equal = recommend(runs)
    weighted = recommend(runs, weights=KindWeights(ONLY_TASK))
    # the weighted retention is the task probes' alone: it differs from the equal one
    pairs = [
        (e.retention.point, w.retention.point)
        for e, w in zip(equal.groups[0].configs, weighted.groups[0].configs)
        if math.isfinite(e.retention.point)
    ]
    assert any(a != b for a, b in pairs)
    described = f"retention: {KindWeights(ONLY_TASK).describe()}"
    shown = CliRunner().invoke(cli, ["recommend", str(out)])
    assert described in shown.output
    pick = weighted.groups[0].pick
    assert pick is not None and f"pick: {pick.name}" in shown.output.replace("deploy: ", "pick: ")
    closing = [x for x in result.output.splitlines() if x.startswith("  w=6,000 chars4: ")]
    assert closing and closing[0].split(": ", 1)[1].startswith(pick.name)
    verdict = verdict_of(load_results(out))
    assert verdict.weights == KindWeights(ONLY_TASK)
    assert verdict.groups[0].configs[0].retention.point == pytest.approx(
        weighted.groups[0].configs[0].retention.point
    )
    assert KindWeights(ONLY_TASK).describe() in render_verdict(verdict)
    # per-kind retention is there whatever the weights
    assert verdict.groups[0].configs[0].by_kind == equal.groups[0].configs[0].by_kind
    assert "recall" in verdict.groups[0].configs[0].by_kind
    # --weight replaces the sweep's weights
    replaced = CliRunner().invoke(cli, ["recommend", str(out), "--weight", "recall=2"])
    assert "retention: recall x2" in replaced.output
