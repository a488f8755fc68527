"""``ctxbench init --strategy NAME``: a compactor plug-in, its probes, a pytest test through the
plugin and a CI workflow; the compactor passes its own test, and a compactor that drops the
user's rules fails it with each probe lost and its call."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.errors import ConfigError
from ctxbench.gate.scaffold import KINDS, scaffold_files, write_scaffold
from ctxbench.probes.probe_file import load_probes
from tests.test_pytest_plugin import run_pytest


def test_init_strategy_writes_the_plugin_its_probes_a_test_and_a_workflow(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["init", "--strategy", "acme_compact", "--dir", str(tmp_path)])
    assert out.exit_code == 0, out.output
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == [
        ".github/workflows/ctxbench.yml",
        "acme_compact.py",
        "ctxbench/probes.jsonl",
        "tests/test_acme_compact.py",
    ]
    (probes,) = load_probes(tmp_path / "ctxbench" / "probes.jsonl").values()
    assert {p.kind for p in probes} == set(KINDS)
    workflow = yaml.safe_load((tmp_path / ".github/workflows/ctxbench.yml").read_text("utf-8"))
    steps = workflow["jobs"]["retention"]["steps"]
    assert steps[-1]["run"].endswith("pytest -q tests/test_acme_compact.py")


def test_the_scaffold_passes_its_test_and_a_compactor_dropping_rules_fails_it(
    tmp_path: Path,
) -> None:
    write_scaffold("acme_compact", tmp_path)
    done = run_pytest(tmp_path, "tests/test_acme_compact.py")
    assert done.returncode == 0, done.stdout + done.stderr
    plugin = tmp_path / "acme_compact.py"
    plugin.write_text(
        plugin.read_text("utf-8").replace('in ("system", "user")', '== "system"'), "utf-8"
    )
    done = run_pytest(tmp_path, "tests/test_acme_compact.py")
    assert done.returncode == 1
    assert "safety-1 (safety, lost): 'rm -rf build/cache' missing at call" in done.stdout
    assert "lost at call" in done.stdout


def test_a_bad_name_or_an_existing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a module name"):
        scaffold_files("my-compactor")
    write_scaffold("acme", tmp_path)
    with pytest.raises(ConfigError, match="already exists") as caught:
        write_scaffold("acme", tmp_path)
    assert "--force" in str(caught.value.hint)
    assert write_scaffold("acme", tmp_path, force=True)
    trace = tmp_path / "acme.py"  # any existing file stands for a trace here
    out = CliRunner().invoke(cli, ["init", str(trace), "--strategy", "acme"])
    assert out.exit_code == 2 and "give no TRACES" in out.output
