"""Windows by model name (issue 40): a table of documented windows with sources, the same
forms wherever a window is taken, and a warning for a ``k`` size near a decimal window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.config import tomllib
from ctxbench.errors import ConfigError
from ctxbench.sweep.reference import rows
from ctxbench.sweep.spec import load_sweep
from ctxbench.windows import MODEL_WINDOWS, model_window, parse_window, window_warning


@pytest.mark.parametrize(
    ("written", "tokens"),
    [
        (32768, 32_768),
        ("32k", 32_768),
        ("200k", 204_800),  # k stays 1,024
        ("200000", 200_000),
        ("claude-sonnet-4-5", 200_000),
        ("anthropic/claude-haiku-4-5-20251001", 200_000),
        ("litellm_proxy/deepseek/deepseek-chat", 131_072),
        ("gpt-4o", 128_000),
        ("gpt-4o-2024-08-06", 128_000),
        ("Qwen/Qwen2.5-32B-Instruct", 32_768),
    ],
)
def test_a_window_is_a_size_or_a_model_name(written: int | str, tokens: int) -> None:
    assert parse_window(written) == tokens


def test_an_unknown_name_is_an_error_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match="did you mean 'gpt-4o'") as err:
        parse_window("gtp-4o")
    assert "ctxbench windows" in (err.value.hint or "")


def test_a_k_size_near_a_decimal_window_warns_and_an_exact_one_does_not() -> None:
    claude = window_warning("200k")
    assert claude is not None and "204,800" in claude and "claude-sonnet-4-5" in claude
    assert "+2.4%" in claude
    gpt = window_warning("128k")
    assert gpt is not None and "128,000" in gpt and "gpt-4o" in gpt
    assert window_warning("32k") is None and window_warning("96k") is None
    assert window_warning("200000") is None and window_warning(131072) is None


def test_every_entry_names_its_source_and_the_date_it_was_read() -> None:
    assert all(w.source.startswith("https://") and w.read for w in MODEL_WINDOWS)
    assert model_window("claude-opus-4-6") is not None and model_window("nonesuch") is None
    listed = json.loads(CliRunner().invoke(cli, ["windows", "--json"]).stdout)
    assert [r["model"] for r in listed] == [w.model for w in MODEL_WINDOWS]


def test_run_and_recorded_take_the_same_forms(shared_traces: Path) -> None:
    tau2 = str(next(shared_traces.glob("tau2-bench/*.json")))
    result = CliRunner().invoke(cli, ["run", tau2, "-s", "none", "-w", "128k", "--json", "-q"])
    assert result.exit_code == 0, result.output
    assert "warning: 128k is 131,072 tokens" in result.stderr
    rows_ = [json.loads(line) for line in result.stdout.splitlines()]
    assert {r["window"] for r in rows_} == {131_072}
    named = CliRunner().invoke(cli, ["run", tau2, "-s", "none", "-w", "gpt-4o", "--json", "-q"])
    assert {json.loads(line)["window"] for line in named.stdout.splitlines()} == {128_000}
    session = str(next(shared_traces.glob("marot+spotter/test/fixtures/transcripts/*.jsonl")))
    recorded = CliRunner().invoke(cli, ["recorded", session, "-w", "200k", "--json"])
    assert recorded.exit_code == 0, recorded.output  # was rejected: -w took only an int


def test_sweep_files_take_quoted_sizes_and_model_names(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        'windows = [32768, "64k", "deepseek-chat"]\n'
        '[[traces]]\nscenario = "coding_agent"\n[[strategies]]\nname = "none"\n',
        "utf-8",
    )
    assert load_sweep(path).windows == (32_768, 65_536, 131_072)
    path.write_text(path.read_text("utf-8").replace("deepseek-chat", "deepsek-chat"), "utf-8")
    with pytest.raises(ConfigError, match="deepseek-chat"):
        load_sweep(path)


def test_every_example_of_the_sweep_reference_is_valid_toml() -> None:
    for table, key, _, _, example, _ in rows():
        if table == "top level":
            tomllib.loads(f"{key} = {example}")  # the README's `[32768, 128k]` was not
