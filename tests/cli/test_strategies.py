"""``ctxbench strategies``: every registered strategy with one line, its source and its knobs."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.config import describe_fields
from ctxbench.strategies import STRATEGIES, strategy_class


def test_json_lists_every_registered_strategy_with_summary_source_and_knobs() -> None:
    result = CliRunner().invoke(cli, ["strategies", "--json"])
    assert result.exit_code == 0, result.output
    listing = json.loads(result.output)
    assert [item["name"] for item in listing] == STRATEGIES.names()
    for item in listing:
        assert set(item) == {"name", "summary", "source", "knobs", "releases"}
        assert item["summary"] and item["source"], item["name"]
        assert item["knobs"] == describe_fields(strategy_class(item["name"]).Config)


def test_the_reproductions_list_their_release_values_default_first() -> None:
    listing = {
        i["name"]: i for i in json.loads(CliRunner().invoke(cli, ["strategies", "--json"]).output)
    }
    for name, values in {
        "dbgpt": ["0.8.2", "design"],
        "agentscope": ["2.0.11", "design"],
        "hermes": ["0.19.0", "0000416b"],
    }.items():
        assert list(listing[name]["releases"]) == values, name
        knob = next(k for k in listing[name]["knobs"] if k["name"] == "release")
        assert knob["default"] == values[0]
    text = CliRunner().invoke(cli, ["strategies"]).output
    assert "    0.8.2: the dbgpt==0.8.2 wheel: Layer 3 always fails" in text


def test_json_knobs_carry_name_type_default_and_help() -> None:
    listing = {
        i["name"]: i for i in json.loads(CliRunner().invoke(cli, ["strategies", "--json"]).output)
    }
    knobs = {k["name"]: k for k in listing["agentscope"]["knobs"]}
    assert knobs["trigger_ratio"] == {
        "name": "trigger_ratio",
        "type": "float",
        "default": 0.8,
        "help": "compress at this fraction of context_size (0 < r <= 0.9)",
    }
    hermes = {k["name"]: k for k in listing["hermes"]["knobs"]}
    assert (
        hermes["model_thresholds"]["type"] == "dict[str, float]"
        and hermes["model_thresholds"]["default"] == {}
    )
    assert hermes["threshold_tokens_cap"]["default"] is None


def test_text_listing_has_one_line_per_strategy_then_its_source_and_knobs() -> None:
    result = CliRunner().invoke(cli, ["strategies"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    # the strategies, then the summarizers they may use (extractive: the verbatim upper bound)
    trailer = lines.index("summarizers (--summarizer NAME, for the strategies that summarise):")
    assert any(ln.startswith("  extractive: The verbatim upper bound") for ln in lines)
    assert any(ln.startswith("  model_like (default): ") for ln in lines)
    heads = [line for line in lines[:trailer] if line and not line.startswith(" ")]
    assert [h.split(":", 1)[0] for h in heads] == STRATEGIES.names()
    at = lines.index(next(h for h in heads if h.startswith("hermes:")))
    assert lines[at + 1] == "  source: NousResearch/hermes-agent agent/context_compressor.py"
    assert lines[at + 2] == "  releases (--set release=VALUE; the first is the default):"
    assert lines[at + 3].startswith("    0.19.0: the hermes-agent==0.19.0 wheel")
    assert lines[at + 5] == "  knobs:"
    assert (
        "    threshold_percent (float, default 0.5): compress at this share of the effective window"
        in lines
    )


def test_the_output_is_deterministic() -> None:
    first = CliRunner().invoke(cli, ["strategies", "--json"]).output
    assert first == CliRunner().invoke(cli, ["strategies", "--json"]).output


def test_help_gives_an_example() -> None:
    result = CliRunner().invoke(cli, ["strategies", "--help"])
    assert "ctxbench strategies --json" in result.output


def test_the_shipped_strategies_follow_with_where_a_release_differs() -> None:
    from ctxbench.strategies import SHIPPED_STRATEGIES

    lines = CliRunner().invoke(cli, ["strategies"]).output.splitlines()
    start = lines.index(
        "released framework code (shipped:*; `ctxbench shipped list` shows what is installed):"
    )
    heads = [ln.split(":", 2) for ln in lines[start + 1 :] if ln and not ln.startswith(" ")]
    assert [f"{h[0]}:{h[1]}" for h in heads] == SHIPPED_STRATEGIES.names()
    at = lines.index(next(ln for ln in lines if ln.startswith("shipped:gemini_cli@0.61.0: ")))
    assert lines[at + 1].startswith("  source: npm @google/gemini-cli-core@0.61.0 ")
    assert lines[at + 2].startswith("  differs: unlike claude_code, the trigger is the previous")
