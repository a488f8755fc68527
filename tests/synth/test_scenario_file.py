"""Scenario files: embedded ones load, names resolve, and every bad key or value is an error that
names the key, the file and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxbench.errors import ConfigError
from ctxbench.probes.model import PROBE_KINDS
from ctxbench.synth import load_scenario, scenario_names
from ctxbench.synth.content import CONTENT_CLASSES
from ctxbench.synth.scenario import BANK_KINDS
from ctxbench.synth.scenario_file import scenario_dir

REQUIRED = (
    "coding_agent",
    "sql_agent",
    "support_agent",
    "research_agent",
    "cjk_agent",
    "long_horizon",
)

MINIMAL = """\
schema = "ctxbench.scenario/1"
name = "mini"
rounds = 6
domain = "software"
{extra}
[output.logs]
weight = 1
median_chars = 400

[[tools]]
name = "bash"
produces = ["logs"]
parameters = {{ type = "object", properties = {{ command = {{ type = "string" }} }} }}
{tail}
"""


def write(tmp_path: Path, extra: str = "", tail: str = "") -> Path:
    path = tmp_path / "mini.toml"
    path.write_text(MINIMAL.format(extra=extra, tail=tail), "utf-8")
    return path


def test_the_six_required_scenarios_are_embedded() -> None:
    assert set(REQUIRED) <= set(scenario_names())


@pytest.mark.parametrize("name", REQUIRED)
def test_embedded_scenarios_load_and_describe_themselves(name: str) -> None:
    spec = load_scenario(name)
    described = spec.describe()
    assert described["name"] == name
    assert set(described["content_mix"]) <= set(CONTENT_CLASSES)
    assert abs(sum(described["content_mix"].values()) - 1) < 0.01
    planted = set(PROBE_KINDS) - {"needed"}  # needed facts are found, not counted in advance
    assert set(described["probes"]) == planted
    assert all(described["probes"][k] >= 1 for k in planted), (
        "every scenario plants every probe kind"
    )


def test_scenario_formats_cover_native_and_text_react() -> None:
    formats = {load_scenario(n).format for n in REQUIRED}
    assert formats == {"tool_calls", "react_text"}
    assert load_scenario("sql_agent").format == "react_text"
    assert load_scenario("cjk_agent").language == "zh"
    assert load_scenario("long_horizon").rounds >= 300


def test_a_bare_name_and_its_path_load_the_same_spec() -> None:
    by_name = load_scenario("coding_agent")
    by_path = load_scenario(scenario_dir() / "coding_agent.toml")
    assert by_name == by_path


def test_unknown_embedded_name_suggests_the_closest() -> None:
    with pytest.raises(ConfigError) as err:
        load_scenario("coding_agnet")
    assert "coding_agent" in str(err.value)


def test_a_minimal_user_scenario_loads(tmp_path: Path) -> None:
    spec = load_scenario(write(tmp_path))
    assert spec.name == "mini" and spec.rounds == 6
    assert spec.format == "tool_calls"
    assert spec.system_prompt == spec.domain.system_prompt  # the domain's default


@pytest.mark.parametrize(
    ("extra", "tail", "key"),
    [
        ('colour = "red"', "", "colour"),
        ("[parallel]\nprobablity = 0.5", "", "parallel.probablity"),
        ("[output.yaml]\nweight = 1", "", "output.yaml"),
        ("[probes]\nrecal = 1", "", "probes.recal"),
        (
            "",
            "[[facts]]\nkind = 'recall'\nquestion = 'q'\nvalue = 'v{d3}'\ntext = 'x {value}'\nwhere_ = 'tool'",
            "facts[0].where_",
        ),
    ],
)
def test_an_unknown_key_names_the_key_the_file_and_the_valid_keys(
    tmp_path: Path, extra: str, tail: str, key: str
) -> None:
    path = write(tmp_path, extra, tail)
    with pytest.raises(ConfigError) as err:
        load_scenario(path)
    message = str(err.value)
    assert str(path) in message
    assert key in message
    assert "valid keys" in message


def test_an_unknown_tool_key_names_its_index(tmp_path: Path) -> None:
    path = write(tmp_path, tail='[[tools]]\nname = "grep"\ndescripton = "x"')
    with pytest.raises(ConfigError) as err:
        load_scenario(path)
    assert "tools[1].descripton" in str(err.value)
    assert "description" in str(err.value)


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ('format = "xml"', "format"),
        ('language = "fr"', "language"),
        ("[parallel]\nprobability = 1.5", "parallel"),
        ("[probes]\nrecall = 99", "probes.recall"),
        (
            'format = "react_text"\n[parallel]\nprobability = 0.5\nmax_calls = 2',
            "parallel.probability",
        ),
        ("[images]\nprobability = 0.5\ntools = ['fetch']", "images.tools"),
        ("[output.code]\nweight = 1\nmedian_chars = 10\nmin_chars = 100", "output.code"),
    ],
)
def test_bad_values_are_config_errors_naming_the_key(
    tmp_path: Path, extra: str, fragment: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load_scenario(write(tmp_path, extra))
    assert fragment in str(err.value)


def test_rounds_is_required(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text(write(tmp_path).read_text("utf-8").replace("rounds = 6\n", ""), "utf-8")
    with pytest.raises(ConfigError, match="rounds"):
        load_scenario(path)


def test_an_unknown_domain_lists_the_embedded_ones(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text(write(tmp_path).read_text("utf-8").replace('"software"', '"finance"'), "utf-8")
    with pytest.raises(ConfigError) as err:
        load_scenario(path)
    assert "software" in str(err.value) and "domain" in str(err.value)


def test_a_sweep_file_is_not_taken_for_a_scenario(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text('schema = "ctxbench.sweep/1"\n', "utf-8")
    with pytest.raises(ConfigError, match="schema"):
        load_scenario(path)


def test_every_domain_fact_is_a_valid_template() -> None:
    for name in REQUIRED:
        spec = load_scenario(name)
        kinds = {f.kind for f in spec.domain.facts}
        assert kinds == set(BANK_KINDS), f"domain {spec.domain.name} lacks some probe kind"
        for kind in BANK_KINDS:
            assert len(spec.domain.bank(kind)) >= spec.probes.count(kind)


def test_the_documented_scenarios_path_works_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_scenario("scenarios/coding_agent.toml") == load_scenario("coding_agent")
    with pytest.raises(ConfigError, match="no such scenario file"):
        load_scenario("elsewhere/coding_agent.toml")
