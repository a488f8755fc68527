"""The viewer's output folder (issue 38, items 1, 2 and 10 for ``view``): it writes only into a
folder it created or marked, never through a link nor over a results directory, builds aside
and swaps in, and never deletes a file it did not write."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ctxbench.errors import OutputError
from ctxbench.view import build, capture
from ctxbench.view.folder import MARKER
from tests.hardening import run_main
from tests.viewing import two_runs


def project(root: Path) -> dict[Path, bytes]:
    """A user's project folder: files under data/ and files/ (what the viewer once deleted)."""
    files = {
        root / "data" / "customers.csv": b"id,name\n1,Ada\n",
        root / "files" / "notes.txt": b"do not lose me\n",
    }
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return files


def intact(files: dict[Path, bytes]) -> bool:
    return all(path.read_bytes() == content for path, content in files.items())


def no_leftovers(folder: Path) -> bool:
    return not [p.name for p in folder.iterdir() if ".building-" in p.name or ".old-" in p.name]


def test_a_folder_holding_other_files_is_refused_and_left_as_is(tmp_path: Path) -> None:
    runs = two_runs()
    files = project(tmp_path)
    with pytest.raises(OutputError, match="did not write"):
        build(runs.rows_file, tmp_path)
    assert intact(files)
    assert not (tmp_path / "index.html").exists()
    # the same from the command line, run from the project folder (`-o .`)
    code, err = run_main(["view", str(runs.rows_file), "-o", str(tmp_path)])
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err, err
    assert intact(files)


def test_the_results_directory_itself_is_refused(tmp_path: Path) -> None:
    runs = two_runs()
    results = tmp_path / "res"
    results.mkdir()
    shutil.copy(runs.rows_file, results / "results.jsonl")
    snapshots = project(results)
    code, err = run_main(["view", str(results), "-o", str(results)])
    assert code == 2 and "results directory" in err.splitlines()[0], err
    assert intact(snapshots)


def test_a_planted_link_is_refused(tmp_path: Path) -> None:
    runs = two_runs()
    parent = tmp_path / "parent"
    shared = parent / "shared_results"
    shared.mkdir(parents=True)
    shutil.copy(runs.rows_file, shared / "results.jsonl")
    files = project(parent)
    (shared / "viewer").symlink_to("..")
    code, err = run_main(["view", str(shared)])
    assert code == 2 and "symbolic link" in err.splitlines()[0], err
    assert intact(files)
    assert not (parent / "index.html").exists()


def test_its_own_viewer_is_replaced_a_stranger_file_is_refused(tmp_path: Path) -> None:
    runs = two_runs()
    out = tmp_path / "viewer"
    build(runs.rows_file, out)
    marker = json.loads((out / MARKER).read_text("utf-8"))
    assert "index.html" in marker["files"] and "data/index.js" in marker["files"]
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted(
        [*marker["files"], MARKER]
    )
    first = (out / "data" / "index.js").read_bytes()
    build(runs.rows_file, out)  # its own folder: written again, the same bytes
    assert (out / "data" / "index.js").read_bytes() == first
    stranger = out / "data" / "mine.txt"
    stranger.write_text("the user's", "utf-8")
    with pytest.raises(OutputError, match="was not written by the viewer"):
        build(runs.rows_file, out)
    assert stranger.read_text("utf-8") == "the user's"
    assert no_leftovers(tmp_path)


def test_a_failed_replay_leaves_the_previous_viewer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = two_runs()
    out = tmp_path / "viewer"
    build(runs.rows_file, out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    calls = []
    real = capture.capture_run

    def fails_second(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("replay failed")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(capture, "capture_run", fails_second)
    with pytest.raises(RuntimeError):
        build(runs.rows_file, out)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert no_leftovers(tmp_path)


def test_ctrl_c_leaves_nothing_half_written(tmp_path: Path) -> None:
    runs = two_runs()
    out = tmp_path / "viewer"

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build(runs.rows_file, out, progress=interrupt)
    assert not out.exists()
    assert no_leftovers(tmp_path)
