"""The Node environment kind of ``ctxbench shipped`` (npm releases): the names an npm package
goes by, the one clear error when ``node`` or ``npm`` is missing, and what an installed Node
environment records (its lockfile's packages, hashed) and runs its driver with."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxbench.shipped import environment
from ctxbench.shipped.environment import NodeMissingError
from ctxbench.shipped.releases import GEMINI_CLI, PI, environment_key, find_release
from tests.shipped_cases import needs


def test_an_npm_release_goes_by_its_key_and_npm_spelling() -> None:
    assert GEMINI_CLI.key == "gemini_cli==0.61.0"
    assert GEMINI_CLI.requirements == ("@google/gemini-cli-core@0.61.0",)
    assert GEMINI_CLI.install_command == "ctxbench shipped install gemini_cli==0.61.0"
    for name in ("pi==1.6.0", "@earendil-works/pi-coding-agent@1.6.0",
                 "@earendil-works/pi-coding-agent==1.6.0"):  # fmt: skip
        assert find_release(name) is PI
    # a scope's @ and / never reach the folder name
    assert environment_key(GEMINI_CLI) == "google-gemini-cli-core-0.61.0"
    assert environment_key(PI) == "earendil-works-pi-coding-agent-1.6.0"


def test_without_node_on_path_install_names_what_is_missing_and_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no node, no npm
    with pytest.raises(NodeMissingError) as raised:
        environment.install(PI)
    assert "`npm` on PATH" in raised.value.message and "pi==1.6.0" in raised.value.message
    assert "apt-get install nodejs npm" in str(raised.value.hint)
    assert not (tmp_path / "cache").exists()  # nothing was built
    done = subprocess.run(
        [sys.executable, "-m", "ctxbench", "shipped", "install", "pi==1.6.0"],
        capture_output=True, text=True, check=False, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: ") and "`npm` on PATH" in done.stderr
    assert "hint: install Node.js 20 or newer" in done.stderr


@needs(GEMINI_CLI)
def test_an_installed_node_environment_records_its_lockfile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = environment.require(GEMINI_CLI)
    manifest = env.manifest
    assert manifest.kind == "node" and manifest.python.startswith("node v")
    assert "@google/gemini-cli-core@0.61.0" in manifest.freeze
    assert list(manifest.freeze) == sorted(manifest.freeze)
    digest = hashlib.sha256("\n".join(sorted(manifest.freeze)).encode()).hexdigest()[:16]
    assert manifest.env_hash == digest
    lock = json.loads((env.root / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"]["node_modules/@google/gemini-cli-core"]["version"] == "0.61.0"
    # the driver runs with the machine's node and finds the release through its env
    monkeypatch.setenv("NODE_OPTIONS", "--require /nonexistent.js")
    run_env = env.process_env()
    assert run_env["CTXBENCH_NODE_MODULES"] == str(env.root / "node_modules")
    assert "NODE_OPTIONS" not in run_env
    command = env.command(Path("driver.mjs"))
    assert os.path.basename(command[0]) == "node" and command[1:] == ["driver.mjs"]


@needs(GEMINI_CLI)
def test_a_replay_without_node_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env = environment.require(GEMINI_CLI)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NodeMissingError, match="needs `node` on PATH"):
        env.command(Path("driver.mjs"))


def test_a_half_installed_node_folder_is_removed_and_a_foreign_one_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXBENCH_CACHE", str(tmp_path))
    root = environment.environment_dir(PI)
    root.mkdir(parents=True)
    # npm stopped half way: ctxbench's package.json, no manifest, no lockfile
    (root / "package.json").write_text('{"name": "ctxbench-env", "private": true}\n')
    assert environment.installed(PI) is None
    assert environment.remove(PI) and not root.exists()
    root.mkdir(parents=True)
    (root / "package.json").write_text('{"name": "my-app"}\n')
    with pytest.raises(environment.InstallError, match="not built by ctxbench"):
        environment.remove(PI)
    assert (root / "package.json").exists()
