"""Bringing one's own traces: a starter sweep (`init`), the sweep-file reference that cannot
drift, 32k windows, suggestions that match substrings, hints that name real commands, `run`
writing files only where told, and sweeps that keep no files when asked."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.counting import COUNTERS
from ctxbench.errors import ConfigError, UnknownNameError
from ctxbench.registry import suggestions
from ctxbench.sizes import parse_tokens
from ctxbench.strategies import STRATEGIES
from ctxbench.summarizers import SUMMARIZERS
from ctxbench.sweep import load_sweep, run_sweep
from ctxbench.sweep.reference import END, START, readme_block, rows
from ctxbench.sweep.spec import SweepSettings
from ctxbench.synth.scenario_file import resolve_scenario_path
from tests.viewing import two_runs

REPO = Path(__file__).resolve().parents[1]


def test_window_shorthand() -> None:
    assert parse_tokens("32k") == 32_768 and parse_tokens("128K") == 131_072
    assert parse_tokens("1m") == 1_048_576 and parse_tokens(32_000) == 32_000
    assert parse_tokens("1.5k") == 1536
    for bad in ("32kb", "k", "0.1k", True):
        with pytest.raises(ConfigError):
            parse_tokens(bad)


def test_run_takes_32k_and_writes_files_only_where_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = two_runs()
    monkeypatch.chdir(tmp_path)
    base = ["run", str(runs.root / "traces.jsonl"), "-s", "dbgpt", "-w", "16k", "--json"]
    result = CliRunner().invoke(cli, base)
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout.splitlines()[0])
    assert row["window"] == 16_384
    assert os.listdir(tmp_path) == []  # nothing written without --files-dir
    assert "not written; add --files-dir DIR" in result.stderr
    result = CliRunner().invoke(cli, [*base, "--files-dir", "kept"])
    assert result.exit_code == 0, result.output
    assert list((tmp_path / "kept" / row["run_id"]).rglob("*.json"))
    bad = CliRunner().invoke(cli, ["run", "x.jsonl", "-s", "dbgpt", "-w", "32kb"])
    assert bad.exit_code == 2 and "not a token count" in bad.output


def test_suggestions_match_substrings_and_hints_name_real_commands() -> None:
    assert "tiktoken:o200k_base" in suggestions("o200k", COUNTERS.names())
    with pytest.raises(UnknownNameError) as counter:
        COUNTERS.load("o200k")
    assert "tiktoken:o200k_base" in str(counter.value)
    with pytest.raises(ConfigError) as scenario:
        resolve_scenario_path("sql")
    assert "'sql_agent'" in str(scenario.value)
    commands = set(cli.list_commands(None))  # type: ignore[arg-type]
    for registry, name in ((STRATEGIES, "nothing_like_it"), (SUMMARIZERS, "zzz_qqq")):
        with pytest.raises(UnknownNameError) as error:
            registry.load(name)
        named = re.findall(r"`ctxbench ([a-z]+)", str(error.value))
        assert all(command in commands for command in named), str(error.value)
        assert "ctxbench summarizers" not in str(error.value)
        assert "ctxbench strategys" not in str(error.value)


def test_the_sweep_reference_covers_every_key_and_the_readme_holds_it() -> None:
    documented = {(table, key) for table, key, *_ in rows()}
    assert {("top level", k) for k in SweepSettings.__dataclass_fields__} <= documented
    assert all(example for *_, example, _ in rows())  # every key has an example
    readme = (REPO / "README.md").read_text("utf-8")
    start, end = readme.index(START), readme.index(END) + len(END)
    assert readme[start:end] == readme_block(), (
        "run python -m ctxbench.sweep.reference --readme README.md"
    )
    help_text = CliRunner().invoke(cli, ["sweep", "--help"]).output
    assert 'keep_files ("all" | "cited" | "none" = "all"; e.g. "cited")' in help_text


def test_init_writes_a_sweep_that_runs_and_keeps_no_files(tmp_path: Path) -> None:
    runs = two_runs()
    out = tmp_path / "sweep.toml"
    result = CliRunner().invoke(cli, ["init", str(runs.root / "traces.jsonl"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text("utf-8")
    assert 'format = "canonical"' in text and 'keep_files = "cited"' in text
    assert text.count("\n#") >= 5  # commented
    spec = load_sweep(out)
    assert len(spec.windows) == 2 and spec.keep_files == "cited"  # below and above the peak
    again = CliRunner().invoke(cli, ["init", "-o", str(out)])
    assert isinstance(again.exception, ConfigError) and "--force" in str(again.exception)
    small = out.with_name("small.toml")
    small.write_text(re.sub(r"(?m)^windows = .*$", 'windows = ["16k"]', text), "utf-8")
    summary = run_sweep(load_sweep(small), tmp_path / "results")
    assert summary.failed == 0 and summary.cells > 0
    assert not (tmp_path / "results" / "files").exists()
