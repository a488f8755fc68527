"""The viewer's output folder: only ever one the viewer made, built aside and swapped in.

``ctxbench view -o DIR`` once began by deleting ``DIR/data`` and ``DIR/files``, whatever they
held (a project's ``data/customers.csv``), and followed a planted ``viewer -> ..`` link out of
a shared results directory. Now (issue 38):

- ``DIR`` must be new, empty, or a viewer written before: it holds :data:`MARKER`, the list of
  every file the viewer wrote there, and nothing else. Anything else is refused before the
  first replay, naming the file.
- No part of ``DIR``'s path may be a symbolic link, and ``DIR`` is never a results directory
  or one of its own files (:func:`ctxbench.results.own_files.refuse_own_files`).
- The viewer is written into a fresh temporary folder beside ``DIR`` and renamed into place
  only once every run was replayed and written; an error or Ctrl-C removes the temporary
  folder and leaves ``DIR`` as it was. The previous viewer is removed file by file from its
  own list, so a file the viewer did not write is never deleted.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ctxbench.errors import OutputError
from ctxbench.guard import read_limited, refuse_links_on_path
from ctxbench.results.own_files import refuse_own_files

#: The file that makes a folder the viewer's: ``{"ctxbench": "viewer", "files": [...]}``.
MARKER = ".ctxbench-viewer"
_KIND = "viewer"
_HINT = "give -o a new folder (the viewer writes only into a folder it created)"


def _refuse(path: Path, message: str) -> OutputError:
    return OutputError(message, path=path, hint=_HINT)


def written_files(folder: Path) -> set[str]:
    """The files the viewer wrote into ``folder``, from its marker (an error when it has none)."""
    marker = folder / MARKER
    if marker.is_symlink() or not marker.is_file():
        raise _refuse(
            folder,
            f"holds files the viewer did not write (it has no {MARKER} marker): "
            "refusing to write into it",
        )
    try:
        data = json.loads(read_limited(marker, what="a viewer's marker", error=OutputError))
        files = data["files"] if data.get("ctxbench") == _KIND else None
    except (ValueError, AttributeError, KeyError, TypeError):
        files = None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise _refuse(marker, "is not a marker the viewer wrote: refusing to write beside it")
    return set(files)


def check_target(out: Path) -> None:
    """Refuse ``out`` unless the viewer may write there (see the module doc)."""
    refuse_links_on_path(out, what="the viewer")
    refuse_own_files(out, directory=True)
    if not out.exists():
        return
    if not out.is_dir():
        raise _refuse(out, "is a file, not a folder")
    if not any(out.iterdir()):
        return
    listed = written_files(out)
    ancestors = {p.as_posix() for f in listed for p in Path(f).parents}
    for top, dirs, files in os.walk(out):
        for name in [*dirs, *files]:
            path = Path(top) / name
            relative = path.relative_to(out).as_posix()
            if path.is_symlink():
                raise _refuse(path, "is a symbolic link: ctxbench does not write through links")
            if relative == MARKER:
                continue
            known = relative in ancestors if name in dirs else relative in listed
            if not known:
                raise _refuse(
                    path, f"was not written by the viewer: refusing to replace the folder {out}"
                )


def _list_files(folder: Path) -> list[str]:
    return sorted(
        (Path(top) / name).relative_to(folder).as_posix()
        for top, _, files in os.walk(folder)
        for name in files
    )


def _remove_listed(folder: Path, listed: set[str]) -> None:
    """Remove the files the viewer wrote, then their folders once empty; never anything else."""
    for relative in sorted(listed | {MARKER}):
        path = folder / relative
        if path.is_file() and not path.is_symlink():
            path.unlink()
    for top, _, _ in sorted(os.walk(folder), key=lambda entry: -len(entry[0])):
        with contextlib.suppress(OSError):  # not empty: it holds what the viewer did not write
            os.rmdir(top)


@contextmanager
def building(out: str | Path) -> Iterator[Path]:
    """A fresh folder to write the viewer into; swapped in for ``out`` when the block ends
    without error, removed otherwise (see the module doc)."""
    out = Path(out)
    check_target(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    except OSError as exc:
        raise OutputError.from_os_error(exc, out, then="write the viewer again") from None
    try:
        yield tmp
        files = _list_files(tmp)
        (tmp / MARKER).write_text(json.dumps({"ctxbench": _KIND, "files": files}), "utf-8")
        mask = os.umask(0)
        os.umask(mask)
        tmp.chmod(0o777 & ~mask)
        _swap(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap(tmp: Path, out: Path) -> None:
    check_target(out)  # again: the folder may have changed while the runs replayed
    try:
        if not out.exists():
            os.rename(tmp, out)
            return
        if not any(out.iterdir()):
            os.rmdir(out)
            os.rename(tmp, out)
            return
        listed = written_files(out)
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.rename(out, old / out.name)
        os.rename(tmp, out)
    except OSError as exc:
        raise OutputError.from_os_error(exc, out, then="write the viewer again") from None
    _remove_listed(old / out.name, listed)
    with contextlib.suppress(OSError):
        os.rmdir(old)
