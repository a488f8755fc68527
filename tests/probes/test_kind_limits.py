"""The per-kind limits of the gate, parsed once: ``KIND=SHARE`` on the command line, tables in
a sweep file; a bad value is an error naming it, the option or key, and the known kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxbench.errors import ConfigError
from ctxbench.probes.kind_limits import KindLimits, from_options, limits_table, parse_option
from ctxbench.sweep.spec import load_sweep


def test_options_parse_to_typed_tables() -> None:
    limits = from_options(["safety=1.0", "preference=90%"], ["constraint=0"])
    assert limits.min_retention == {"safety": 1.0, "preference": 0.9}
    assert limits.max_drop == {"constraint": 0.0}
    assert limits.kinds() == ["constraint", "preference", "safety"] and limits
    assert not KindLimits()


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("safty=1", "'safty=1': unknown probe kind 'safty'"),
        ("safety", "'safety' is not KIND=VALUE"),
        ("safety=", "'safety=' is not KIND=VALUE"),
        ("safety=high", "'safety=high': 'high' is not a number"),
        ("safety=1.5", "'safety=1.5': the retention of safety must be a share from 0 to 1"),
        ("safety=nan", "must be a share from 0 to 1, not nan"),
    ],
)
def test_a_bad_option_names_itself_and_the_fix(given: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_option([given], "min_kind_retention")
    assert says in caught.value.message and caught.value.key == "--min-kind"
    if "unknown" in says:
        assert "known kinds: recall, artifact" in str(caught.value.hint)
        assert "safety, preference" in str(caught.value.hint)


def test_a_sweep_file_table_names_the_file_and_its_key() -> None:
    assert limits_table({"max_kind_drop": {"constraint": 0}}).max_drop == {"constraint": 0.0}
    with pytest.raises(ConfigError) as caught:
        limits_table({"max_kind_drop": {"constraint": -0.1}}, source="gate.toml")
    assert str(caught.value).startswith("gate.toml: max_kind_drop.constraint: the drop of")
    assert "max_kind_drop = { constraint = 0 }" in str(caught.value.hint)
    with pytest.raises(ConfigError, match="must be a table of probe kind = share"):
        limits_table({"min_kind_retention": 1.0}, source="gate.toml")


def test_the_command_line_wins_over_the_sweep_file_per_kind() -> None:
    file = KindLimits({"safety": 1.0, "task": 0.5}, {"constraint": 0.1})
    both = file.over(KindLimits({"task": 0.8}, {}))
    assert both.min_retention == {"safety": 1.0, "task": 0.8}
    assert both.max_drop == {"constraint": 0.1}
    assert both.describe() == "safety >= 1, task >= 0.8, constraint drop <= 0.1"


def test_a_sweep_file_with_a_bad_kind_limit_fails_when_loaded(tmp_path: Path) -> None:
    path = tmp_path / "gate.toml"
    text = 'windows = [32768]\n{}\n[[traces]]\nscenario = "coding_agent"\n[[strategies]]\nname = "none"\n'
    path.write_text(text.format("max_kind_drop = { constraint = 0 }"), "utf-8")
    assert load_sweep(path).to_dict()["max_kind_drop"] == {"constraint": 0}
    path.write_text(text.format("min_kind_retention = { safty = 1.0 }"), "utf-8")
    with pytest.raises(ConfigError) as caught:
        load_sweep(path)
    assert str(caught.value).startswith(f"{path}: min_kind_retention.safty: unknown probe kind")
    path.write_text(text.format(""), "utf-8")
    assert "min_kind_retention" not in load_sweep(path).to_dict()  # sweep.json as before
