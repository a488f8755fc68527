"""``ctxbench shipped install/remove`` when the environment's path is a link, a plain file, a
folder ctxbench did not build, or in a cache it cannot write (issue 38, item 9): one ``error:``
line, exit 2, and nothing deleted that ctxbench did not build. No test here reaches the
package registry: each refusal comes before the first pip command."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxbench.shipped import environment
from ctxbench.shipped.releases import RELEASES
from tests.hardening import run_main

RELEASE = RELEASES[0]


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(environment.CACHE_ENV_VAR, str(root))
    return root


def _place(cache: Path) -> Path:
    path = environment.environment_dir(RELEASE)
    path.parent.mkdir(parents=True)
    return path


def _one_error(argv: list[str], *words: str) -> None:
    code, err = run_main(argv)
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err, err
    for word in words:
        assert word in err.splitlines()[0], err


def test_a_link_as_the_environment_is_refused(cache: Path, tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine", "utf-8")
    _place(cache).symlink_to(precious)
    _one_error(["shipped", "remove", RELEASE.key], "symbolic link")
    _one_error(["shipped", "install", RELEASE.key, "--force"], "symbolic link")
    assert (precious / "keep.txt").read_text("utf-8") == "mine"


def test_a_plain_file_or_a_foreign_folder_is_refused(cache: Path) -> None:
    path = _place(cache)
    path.write_text("not an environment", "utf-8")
    _one_error(["shipped", "remove", RELEASE.key], "not a folder")
    _one_error(["shipped", "install", RELEASE.key], "not a folder")
    assert path.read_text("utf-8") == "not an environment"
    path.unlink()
    path.mkdir()
    (path / "data.txt").write_text("mine", "utf-8")
    _one_error(["shipped", "remove", RELEASE.key], "not built by ctxbench")
    assert (path / "data.txt").read_text("utf-8") == "mine"


def test_an_unwritable_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", "utf-8")
    monkeypatch.setenv(environment.CACHE_ENV_VAR, str(blocker / "cache"))
    _one_error(["shipped", "install", RELEASE.key], "cannot install")


def test_its_own_environment_is_removed(cache: Path) -> None:
    path = _place(cache)
    path.mkdir()
    (path / "pyvenv.cfg").write_text("home = /usr/bin\n", "utf-8")
    code, err = run_main(["shipped", "remove", RELEASE.key])
    assert code == 0, err
    assert not path.exists()
