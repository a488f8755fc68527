"""The files a replay produced (snapshots, offloads), written under one run's folder."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ctxbench.errors import CtxbenchError, OutputError


def write_files(
    root: str | Path, files: Mapping[str, bytes], *, then: str = "run the command again"
) -> list[Path]:
    """Write a replay's files under ``root``. Every path is checked first: one that would
    escape ``root`` (or that the OS cannot name) is refused before anything is written. A
    failed write leaves no temporary file behind (its error's hint ends with ``then``)."""
    root_path = Path(root).resolve()
    targets = []
    for relative, content in sorted(files.items()):
        try:
            target = (root_path / relative).resolve()
        except (ValueError, OSError):  # a NUL byte, a symlink loop
            target = root_path
        if root_path not in target.parents:
            raise OutputError(
                f"refusing to write {relative!r} outside {root_path}",
                path=root_path,
                hint="file names come from the strategy; sanitise them with safe_component",
            )
        targets.append((target, content))
    for target, content in targets:
        tmp = target.with_name(f".{target.name}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(content)
            os.replace(tmp, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise OutputError.from_os_error(exc, target, then=then) from None
    return [target for target, _ in targets]


def refuse_links(
    root: Path, names: Iterable[str], *, error: type[CtxbenchError] = OutputError
) -> None:
    """An error if any of ``names`` (relative to ``root``) is a symbolic link: a link planted
    in a results directory would make a sweep write outside it, or a reader read a device."""
    for name in names:
        path = root / name
        if path.is_symlink():
            raise error(
                "is a symbolic link: ctxbench does not follow links inside a results directory",
                path=path,
                hint="remove the link, or give another directory",
            )
