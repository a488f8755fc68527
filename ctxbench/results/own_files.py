"""What an output path may not be: a results directory's own files (the journal, spec, table,
events and snapshot files a sweep wrote), so no command writes a report, a baseline or a
viewer over them."""

from __future__ import annotations

import os
from pathlib import Path

from ctxbench.errors import OutputError
from ctxbench.results import layout


def results_dir_of(path: str | Path) -> Path | None:
    """The results directory ``path`` is, or is inside (the nearest), else None."""
    absolute = Path(os.path.abspath(path))
    for folder in (absolute, *absolute.parents):
        if any((folder / name).is_file() for name in (layout.JOURNAL, *layout.ROW_FILES)):
            return folder
    return None


def refuse_own_files(out: str | Path, *, directory: bool = False) -> None:
    """An error if the output ``out`` is a results directory's own file (its journal, spec,
    table, events, snapshot files), or, for a ``directory`` output, the results directory
    itself: writing there would replace what a sweep wrote."""
    absolute = Path(os.path.abspath(out))
    found = results_dir_of(absolute)
    if found is None:
        return
    own = {*layout.OWN_FILES, *layout.ROW_FILES, *layout.MARKERS}
    if absolute == found:
        if not directory:
            return
        clash = "is a results directory"
    else:
        first = absolute.relative_to(found).parts[0]
        if first not in own:
            return
        clash = f"is {first!r} of the results directory {found}"
    raise OutputError(
        f"{clash}: ctxbench never writes over a results directory's own files",
        path=absolute,
        hint="give an output path outside them (e.g. a new file or folder next to them)",
    )
