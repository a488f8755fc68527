"""User plug-ins: strategies and summarizers loaded by import path, the worked example in
``examples/my_strategy.py``, and clear errors for what is not a plug-in."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli, main
from ctxbench.formats.canonical import write_traces
from tests.conftest import REPO
from tests.factories import tool_trace

EXAMPLE = "examples.my_strategy:KeepRecentRounds"


@pytest.fixture()
def traces(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    write_traces(path, [tool_trace(30, output="build log line " * 40)])
    return path


@pytest.fixture()
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory on sys.path for throwaway plug-in modules (and the repo, for examples/)."""
    monkeypatch.syspath_prepend(str(REPO))
    folder = tmp_path / "plugins"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def fail(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(list(args))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    return err


def test_the_worked_example_runs_through_ctxbench_run(
    traces: Path, plugin_dir: Path, tmp_path: Path
) -> None:
    code, output = run_cli(
        "run",
        str(traces),
        "--strategy",
        EXAMPLE,
        "--window",
        "6000",
        "--reserved",
        "0",
        "--counter",
        "chars4",
        "--set",
        "keep_rounds=3",
        "--json",
        "--files-dir",
        str(tmp_path / "f"),
    )
    assert code == 0, output
    row = json.loads(output.splitlines()[0])
    assert row["strategy"] == EXAMPLE and row["estimator"] == "chars4"
    assert json.loads(row["params"])["keep_rounds"] == 3
    assert json.loads(row["compactions"]).get("keep_recent", 0) > 0 and row["summary_calls"] > 0
    assert row["pairing_violations"] == 0 and row["failed_calls"] == 0 and row["system_kept"]


def test_the_plugin_guide_is_in_one_place_with_exactly_the_worked_example() -> None:
    example = (REPO / "examples" / "my_strategy.py").read_text("utf-8")
    doc = (REPO / "docs" / "plugins.md").read_text("utf-8")
    assert re.findall(r"```python\n(.*?)```", doc, re.S) == [example]
    readme = (REPO / "README.md").read_text("utf-8")
    assert "](docs/plugins.md)" in readme, "README links to the guide"
    assert example not in readme and "### The protocol" not in readme, (
        "README summarises the guide, it does not copy it"
    )


def test_an_unknown_knob_of_a_plugin_is_a_config_error(
    traces: Path, plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = fail(capsys, "run", str(traces), "-s", EXAMPLE, "-w", "6000", "--set", "keep_round=3")
    assert "keep_round" in err and "keep_rounds" in err


def test_a_module_that_cannot_be_imported_is_a_clear_error(
    traces: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = fail(capsys, "run", str(traces), "-s", "nosuchpkg.mod:Strategy", "-w", "6000")
    assert "cannot import module 'nosuchpkg.mod'" in err and "PYTHONPATH" in err


def test_a_module_that_fails_while_importing_is_a_clear_error(
    traces: Path, plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (plugin_dir / "broken_plugin.py").write_text("raise RuntimeError('missing setting')\n")
    err = fail(capsys, "run", str(traces), "-s", "broken_plugin:Anything", "-w", "6000")
    assert "importing module 'broken_plugin'" in err and "RuntimeError: missing setting" in err


def test_a_missing_class_is_a_clear_error(
    traces: Path, plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = fail(capsys, "run", str(traces), "-s", "examples.my_strategy:NoSuchClass", "-w", "6000")
    assert "has no attribute 'NoSuchClass'" in err


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("json:dumps", "a compactor function takes (messages, budget)"),
        ("collections:OrderedDict", "is not a strategy: it has no name"),
        ("bad_config_plugin:NoDataclass", "has no Config dataclass"),
    ],
)
def test_an_object_that_is_not_a_strategy_is_a_clear_error(
    target: str, message: str, traces: Path, plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (plugin_dir / "bad_config_plugin.py").write_text(
        textwrap.dedent(
            """
            from ctxbench.strategies.base import Strategy

            class NoDataclass(Strategy):
                Config = dict
            """
        )
    )
    assert message in fail(capsys, "run", str(traces), "-s", target, "-w", "6000")


def test_a_summarizer_plugin_is_loaded_by_import_path(traces: Path, plugin_dir: Path) -> None:
    (plugin_dir / "my_summarizer.py").write_text(
        textwrap.dedent(
            """
            from ctxbench.summarizers.base import Summarizer

            class Constant(Summarizer):
                name = "constant"

                def summarize(self, request, counter):
                    return "CONSTANT-SUMMARY-42"
            """
        )
    )
    code, output = run_cli(
        "run",
        str(traces),
        "-s",
        "hermes",
        "-w",
        "3000",
        "--reserved",
        "0",
        "--counter",
        "chars4",
        "--summarizer",
        "my_summarizer:Constant",
        "--json",
        "--files-dir",
        str(plugin_dir / "f"),
    )
    assert code == 0, output
    row = json.loads(output.splitlines()[0])
    assert row["summarizer"] == "my_summarizer:Constant" and row["summary_calls"] > 0


@pytest.mark.parametrize(
    ("target", "message"),
    [("json:__name__", "is not a summarizer"), ("collections:OrderedDict", "has no summarize")],
)
def test_an_object_that_is_not_a_summarizer_is_a_clear_error(
    target: str, message: str, traces: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = fail(capsys, "run", str(traces), "-s", "hermes", "-w", "8000", "--summarizer", target)
    assert message in err


def test_a_plug_ins_version_is_the_hash_of_its_packages_source_or_its_declared_version(
    plugin_dir: Path,
) -> None:
    from ctxbench import registry

    package = plugin_dir / "versioned_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("KEEP = 4\n")
    (package / "mod.py").write_text(
        "from versioned_pkg.helpers import KEEP\n\ndef compact(messages, budget):\n"
        "    return messages[-KEEP:]\n\nclass Declared:\n    __version__ = '2.1'\n"
    )
    first = registry.plugin_version("versioned_pkg.mod:compact")
    assert first.startswith("sha256:") and len(first) == len("sha256:") + 16
    assert registry.plugin_version("versioned_pkg.mod:Declared") == "version:2.1"
    # a change to a helper module of the same package is a change of the plug-in
    (package / "helpers.py").write_text("KEEP = 2\n")
    registry._versions.clear()
    second = registry.plugin_version("versioned_pkg.mod:compact")
    assert second.startswith("sha256:") and second != first
    # and the same source gives the same version
    registry._versions.clear()
    assert registry.plugin_version("versioned_pkg.mod:compact") == second


def test_a_cells_id_holds_its_plug_ins_version_and_its_key_does_not(plugin_dir: Path) -> None:
    from ctxbench.cell.runner import resolve_spec
    from ctxbench.cell.spec import RunSpec

    (plugin_dir / "id_plugin.py").write_text(
        "def compact(messages, budget):\n    return messages\n"
    )
    spec = resolve_spec(RunSpec("t", "h", "id_plugin:compact", window=1000))
    assert spec.plugin.startswith("id_plugin:compact@sha256:")
    assert spec.with_(plugin="").run_id != spec.run_id
    assert spec.with_(plugin="").key == spec.key
    # a built-in strategy has no plug-in, and its id is what it always was
    builtin = resolve_spec(RunSpec("t", "h", "none", window=1000))
    assert builtin.plugin == "" and "plugin" not in builtin.identity()
