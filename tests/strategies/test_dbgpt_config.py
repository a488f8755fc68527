"""DB-GPT's configuration: the ``agent_context`` TOML section, unknown keys, the defaults, tool
pairs on native traces."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from ctxbench.cli import cli
from ctxbench.formats.canonical import write_traces
from ctxbench.pairing import pairing_violations
from ctxbench.strategies.dbgpt import DbgptStrategy
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from tests.factories import tool_trace
from tests.strategies.dbgpt_cases import (
    compactions,
    final_view,
    react,
    run,
)

# -- configuration -------------------------------------------------------------------------------------


def _run_dbgpt(trace: Path, *args: str) -> Result:
    """``ctxbench run TRACE -s dbgpt --counter chars4 ARGS...`` through the CLI."""
    return CliRunner().invoke(cli, ["run", str(trace), "-s", "dbgpt", "--counter", "chars4", *args])


def test_the_agent_context_toml_section_is_accepted_by_run_config(tmp_path: Path) -> None:
    (tmp_path / "dbgpt.toml").write_text(
        "[service.web.agent_context]\nmax_context_tokens = 120000\nreserved_tokens = 4096\nwarning_threshold = 0.70\n"
        "error_threshold = 0.90\ncritical_threshold = 0.95\nmin_keep_recent_rounds = 3\nmax_observation_age_rounds = 5\n"
        "truncated_observation_max_chars = 200\nmin_keep_tokens = 10000\nmax_compact_failures = 3\n",
        "utf-8",
    )
    write_traces(tmp_path / "t.jsonl", [react(3)])
    result = _run_dbgpt(
        tmp_path / "t.jsonl",
        "--config",
        str(tmp_path / "dbgpt.toml"),
        "-w",
        "32000",
        "--estimator",
        "chars4",
        "--json",
        "--files-dir",
        str(tmp_path / "files"),
    )
    assert result.exit_code == 0, result.output
    row = json.loads(result.output.splitlines()[0])
    assert json.loads(row["params"])["max_context_tokens"] == 120000
    # 0.8.2 (the default) names snapshots {conv_id}/step_NNN_<action>.json
    assert (tmp_path / "files" / row["run_id"] / "r" / "step_001_sql_query.json").exists()


def test_unknown_set_key_lists_valid_keys_with_types_and_defaults(tmp_path: Path) -> None:
    write_traces(tmp_path / "t.jsonl", [react(1)])
    result = _run_dbgpt(tmp_path / "t.jsonl", "-w", "8000", "--set", "warn_threshold=0.5")
    assert result.exit_code != 0
    text = str(result.exception) + result.output
    assert "warn_threshold" in text and "warning_threshold (float, default 0.7)" in text


def test_defaults_match_the_agent_context_section() -> None:
    cfg = DbgptStrategy().cfg
    assert (cfg.warning_threshold, cfg.error_threshold, cfg.critical_threshold) == (
        0.70,
        0.90,
        0.95,
    )
    assert (
        cfg.min_keep_recent_rounds,
        cfg.max_observation_age_rounds,
        cfg.observation_max_chars,
    ) == (3, 5, 200)
    assert cfg.release == "0.8.2", "the default is the latest release"
    assert (cfg.min_keep_tokens, cfg.max_compact_failures) == (10_000, 3)
    assert DbgptStrategy.default_estimator == "dbgpt"


def test_dbgpt_keeps_tool_pairs_on_native_traces() -> None:
    out = run(tool_trace(40, calls=3, output="o" * 500), 6000, summarizer=ExtractiveSummarizer())
    assert compactions(out) and out.result.pairing_violations == 0
    assert pairing_violations(final_view(out)) == 0
