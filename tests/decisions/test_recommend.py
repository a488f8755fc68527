"""The recommendation: it picks a planted best config, reports ties, flags inert knobs and the
fact kinds no config keeps, honours its constraints, and runs on a real sweep."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.decisions.outcomes import Constraints, KindWeights, RunOutcome
from ctxbench.decisions.recommend import GroupVerdict, recommend
from ctxbench.report.leaderboard import ConfigKey

KINDS = ("recall", "artifact", "decision", "finished_task", "task")
TRACES = 30
PROBES = 15


def config(strategy: str, **params: float) -> ConfigKey:
    return ConfigKey(
        strategy, json.dumps(params, sort_keys=True, separators=(",", ":")), "c", "", "x", 0
    )


def sweep(
    keep: dict[ConfigKey, float],
    *,
    seed: int = 0,
    shared: dict[ConfigKey, ConfigKey] | None = None,
    failed: dict[ConfigKey, int] | None = None,
    cost: dict[ConfigKey, float] | None = None,
    independent: bool = False,
) -> list[RunOutcome]:
    """A synthetic sweep: on every trace, config c keeps each probe with probability keep[c]
    (on a shared uniform draw per probe, as configs on the same trace see the same facts);
    finished_task probes are never kept; ``shared`` makes a config copy another's outcomes;
    ``independent`` gives every config its own draws (two equal configs then differ by noise)."""
    rng = np.random.default_rng(seed)
    runs = []
    for t in range(TRACES):
        u = rng.random(PROBES)
        difficulty = rng.uniform(-0.15, 0.15)
        for key in keep:
            source = (shared or {}).get(key, key)
            if independent:
                u = rng.random(PROBES)
            probes = tuple(
                (
                    f"p{i:02d}",
                    KINDS[i % len(KINDS)],
                    "in_context"
                    if KINDS[i % len(KINDS)] != "finished_task" and u[i] < keep[source] + difficulty
                    else "lost",
                )
                for i in range(PROBES)
            )
            runs.append(
                RunOutcome(
                    run_id=f"{key.strategy}{key.params}-{t}",
                    trace_id=f"t{t:02d}",
                    config=key,
                    window=32768,
                    counter="c",
                    probes=probes,
                    input_tokens=int((cost or {}).get(source, 1000.0) * (1 + t / 10)),
                    summary_tokens=0,
                    rejected_tokens=0,
                    failed_calls=(failed or {}).get(key, 0) if t == 0 else 0,
                    overflow_errors=0,
                    error=None,
                )
            )
    return runs


def only(runs: list[RunOutcome], **kw: object) -> GroupVerdict:
    (group,) = recommend(runs, resamples=1000, **kw).groups  # type: ignore[arg-type]
    return group


BEST, GOOD, ALSO, CRASHY = (
    config("dbgpt", warning_threshold=0.6, min_keep_recent_rounds=1.0),
    config("dbgpt", warning_threshold=0.8, min_keep_recent_rounds=1.0),
    config("dbgpt", warning_threshold=0.8, min_keep_recent_rounds=5.0),
    config("none"),
)


def test_the_planted_best_config_is_picked_and_a_crashing_better_one_is_excluded() -> None:
    runs = sweep({BEST: 0.75, GOOD: 0.45, ALSO: 0.45, CRASHY: 0.95}, failed={CRASHY: 3})
    group = only(runs)
    assert group.pick is not None and group.pick.key == BEST
    assert not group.ties  # 0.3 apart on 30 traces: every paired interval excludes 0
    crashy = next(s for s in group.configs if s.key == CRASHY)
    assert crashy.excluded == "3 failed call(s)"
    relaxed = only(runs, constraints=Constraints(max_failed_calls=3))
    assert relaxed.pick is not None and relaxed.pick.key == CRASHY


def test_two_equal_configs_are_reported_as_a_tie_with_the_traces_that_would_separate_them() -> None:
    a, b = config("sliding_window", keep_rounds=4.0), config("sliding_window", keep_rounds=8.0)
    group = only(sweep({a: 0.6, b: 0.6}, seed=3, independent=True))
    assert group.pick is not None
    (tie,) = group.ties
    assert not tie.retention_diff.excludes_zero and not tie.identical
    assert tie.traces_needed is None or tie.traces_needed > TRACES


def test_an_inert_knob_is_flagged_and_a_knob_that_mattered_is_named() -> None:
    runs = sweep({BEST: 0.75, GOOD: 0.45, ALSO: 0.45}, shared={ALSO: GOOD})
    group = only(runs)
    verdicts = {k.knob: k for k in group.knobs}
    assert verdicts["min_keep_recent_rounds"].verdict == "inert"
    assert verdicts["warning_threshold"].verdict == "mattered"
    assert "retention" in verdicts["warning_threshold"].detail
    ties = {t.name: t for t in group.ties}
    assert not ties  # GOOD and ALSO are tied with each other, not with the pick


def test_without_probes_a_knob_without_effect_names_its_largest_cost_change() -> None:
    a, b = config("sliding_window", keep_rounds=4.0), config("sliding_window", keep_rounds=8.0)
    runs = [
        replace(r, probes=(), input_tokens=r.input_tokens + (37 * (i % 7) - 100) * (i % 2))
        for i, r in enumerate(sweep({a: 0.5, b: 0.5}, cost={a: 1000.0, b: 1000.0}))
    ]
    (knob,) = only(runs).knobs
    assert knob.verdict == "no detectable effect"
    assert "nan" not in knob.detail and "no probes" in knob.detail and "cost" in knob.detail


def test_identical_configs_tied_with_the_pick_say_more_traces_would_not_help() -> None:
    runs = sweep({GOOD: 0.45, ALSO: 0.45}, shared={ALSO: GOOD})
    (tie,) = only(runs).ties
    assert tie.identical and tie.traces_needed is None


def test_fact_kinds_no_config_keeps_and_per_kind_retention() -> None:
    group = only(sweep({BEST: 0.75, GOOD: 0.45}))
    assert group.unkept_kinds == ("finished_task",)
    assert group.pick is not None and group.pick.by_kind["finished_task"] == (0.0, TRACES * 3)
    assert set(group.pick.by_kind) == set(KINDS)


def test_a_token_budget_excludes_the_expensive_config() -> None:
    runs = sweep({BEST: 0.75, GOOD: 0.45}, cost={BEST: 5000.0, GOOD: 1000.0})
    group = only(runs, constraints=Constraints(max_tokens=3000))
    assert group.pick is not None and group.pick.key == GOOD
    assert "budget" in next(s for s in group.configs if s.key == BEST).excluded


def test_kind_weights_move_retention() -> None:
    runs = sweep({BEST: 0.75})
    plain = only(runs).pick
    heavy = only(runs, weights=KindWeights({"finished_task": 5.0})).pick
    assert plain is not None and heavy is not None
    assert heavy.retention.point < plain.retention.point


def test_the_same_runs_give_the_same_recommendation() -> None:
    runs = sweep({BEST: 0.75, GOOD: 0.45, ALSO: 0.5})
    assert recommend(runs, resamples=500) == recommend(list(reversed(runs)), resamples=500)


def test_unknown_kind_weights_are_refused() -> None:
    from ctxbench.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown probe kind"):
        KindWeights({"trivia": 1.0})


def test_recommend_on_a_real_sweep_flags_a_knob_that_never_acts(tmp_path: Path) -> None:
    """At a window the traces never fill, DB-GPT never compacts: min_keep_recent_rounds is
    inert (as on the recorded traces of the issue), and the recommendation says so."""
    (tmp_path / "s.toml").write_text(
        """name = "inert"
windows = [131072]
reserved = [4096]
counters = ["tiktoken:o200k_base"]
estimators = [""]
summarizer = "extractive"

[[traces]]
scenario = "support_agent"
seeds = [0, 1]

[[strategies]]
name = "dbgpt"
params = { min_keep_recent_rounds = [1, 5] }
""",
        "utf-8",
    )
    results = tmp_path / "out"
    swept = CliRunner().invoke(
        cli, ["sweep", str(tmp_path / "s.toml"), "-o", str(results), "-j", "1", "-q"]
    )
    assert swept.exit_code == 0, swept.output
    closing = swept.stdout.splitlines()
    assert closing[-3].startswith("recommendation (no failed calls")
    assert closing[-2].startswith(
        "  w=131,072 tiktoken:o200k_base: dbgpt@0.8.2 (min_keep_recent_rounds=1)"
    )
    assert closing[-1] == f"  details: ctxbench recommend {results}"
    out = CliRunner().invoke(cli, ["recommend", str(results)])
    assert out.exit_code == 0, out.output
    assert "dbgpt.min_keep_recent_rounds (1, 5): inert" in out.output
    assert "deploy: dbgpt" in out.output and "retention by kind:" in out.output
    assert "task 1.00" in out.output
    assert "identical to the pick on every probe and cost" in out.output
    as_json = CliRunner().invoke(cli, ["recommend", str(results), "--json", "-s", "dbgpt"])
    assert as_json.exit_code == 0, as_json.output
    (group,) = json.loads(as_json.output)["groups"]
    assert group["pick"]["strategy"] == "dbgpt" and group["pick"]["name"] in out.output
    other = CliRunner().invoke(cli, ["recommend", str(results), "--strategy", "none"])
    assert other.exit_code != 0 and "--strategy" in str(other.exception)
    narrow = CliRunner().invoke(cli, ["recommend", str(results), "--window", "1"])
    assert narrow.exit_code != 0
    bad = CliRunner().invoke(cli, ["recommend", str(results), "--weight", "task"])
    assert bad.exit_code != 0


def test_the_verdict_strip_escapes_names_and_shows_pick_ties_and_inert_knobs() -> None:
    from ctxbench.decisions.verdict import render_verdict

    odd = config("<script>x</script>", min_keep_recent_rounds=1.0)
    twin = config("<script>x</script>", min_keep_recent_rounds=5.0)
    runs = sweep({BEST: 0.75, odd: 0.7, twin: 0.7}, shared={twin: odd})
    html = render_verdict(recommend(runs, resamples=500))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "dbgpt" in html and "deploy" in html and "retention" in html
    assert "inert knobs: &lt;script&gt;x&lt;/script&gt;.min_keep_recent_rounds" in html
    assert "no config keeps: finished_task" in html


# -- warnings, --strategy and --json ------------------------------------------------------------


def test_a_pick_at_the_edge_of_the_swept_range_is_warned_about() -> None:
    low, mid, high = config("s", keep=2), config("s", keep=4), config("s", keep=8)
    (group,) = recommend(sweep({low: 0.5, mid: 0.6, high: 0.9})).groups
    assert group.pick is not None and group.pick.key == high
    assert any(
        "keep=8 is the largest value swept (2 to 8): the best may lie beyond it" in w
        for w in group.warnings
    )
    (inside,) = recommend(sweep({low: 0.5, mid: 0.9, high: 0.6})).groups
    assert not any("value swept" in w for w in inside.warnings)


def test_a_pick_that_keeps_few_facts_is_warned_about() -> None:
    (group,) = recommend(sweep({config("a"): 0.1, config("b"): 0.05})).groups
    assert group.pick is not None and group.pick.retention.point < 0.5
    assert any(
        w.startswith("the pick keeps ") and "of the probed facts" in w for w in group.warnings
    )
    (good,) = recommend(sweep({config("a"): 0.9})).groups
    assert not any("probed facts" in w for w in good.warnings)


def test_an_excluded_config_that_would_win_with_a_few_more_failed_calls_is_named() -> None:
    best, safe = config("best"), config("safe")
    runs = sweep({best: 0.9, safe: 0.6}, failed={best: 2})
    (group,) = recommend(runs).groups
    assert group.pick is not None and group.pick.key == safe
    (hint,) = [w for w in group.warnings if "--max-failed-calls" in w]
    assert hint.startswith("best keeps more") and hint.endswith("with --max-failed-calls 2")
    (far,) = recommend(sweep({best: 0.9, safe: 0.6}, failed={best: 500})).groups
    assert not any("--max-failed-calls" in w for w in far.warnings)


def test_strategy_limits_the_recommendation_to_the_configs_asked_for() -> None:
    runs = sweep({config("mine"): 0.5, config("theirs"): 0.9})
    (group,) = recommend(runs, strategies={"mine"}).groups
    assert [s.key.strategy for s in group.configs] == ["mine"]


def test_json_holds_the_same_content_as_the_text() -> None:
    from ctxbench.decisions.text import recommendation_json, recommendation_text

    rec = recommend(sweep({config("s", keep=2): 0.5, config("s", keep=8): 0.9}))
    doc = recommendation_json(rec)
    text = recommendation_text(rec)
    (group,) = doc["groups"]
    assert group["pick"]["name"] in text and f"deploy: {group['pick']['name']}" in text
    assert group["pick"]["params"] == {"keep": 8} and len(group["pick"]["run_ids"]) == TRACES
    assert all(w in text for w in group["warnings"]) and group["warnings"]
    assert [c["name"] for c in group["configs"]] == [s.name for s in rec.groups[0].configs]
    assert json.loads(json.dumps(doc)) == doc  # plain JSON: no NaN, no objects
    # the text lists a few run ids, not all 30 on one line
    (runs_line,) = [line for line in text.splitlines() if line.strip().startswith("runs:")]
    assert "and 27 more (all in --json)" in runs_line
