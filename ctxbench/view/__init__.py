"""The run viewer: the prompt the model saw at every call, each compaction's before and after,
and where each probe's answer went (``ctxbench view``).

:func:`build` replays each selected row again (:mod:`ctxbench.view.capture`), writes its data
in small chunks (:mod:`ctxbench.view.write`) and the static page that loads them one call at a
time; :mod:`ctxbench.view.serve` serves the directory on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["build"]


def build(
    source: str | Path,
    out_dir: str | Path,
    *,
    rows: str | Path | None = None,
    run_ids: Sequence[str] = (),
    against: str | Path | None = None,
    against_rows: str | Path | None = None,
    title: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Write the viewer of ``source``'s runs into ``out_dir``; returns its ``index.html``.
    ``against`` is another results source (a baseline, a release's results): its runs of the
    same traces are shown too, each source's runs labelled by its name, so a run can be
    compared with one of the other source aligned by call. ``progress(done, total)`` hears of
    every run replayed. ``out_dir`` is new, empty or a viewer written before; it is replaced
    only once every run is written (:mod:`ctxbench.view.folder`)."""
    from ctxbench.cell.traces import load_trace
    from ctxbench.results import spec_of_row
    from ctxbench.view.capture import capture_run
    from ctxbench.view.folder import building, check_target
    from ctxbench.view.sources import counterparts, read_source, select, source_names
    from ctxbench.view.write import write_viewer

    check_target(Path(out_dir))  # before any replay
    found = read_source(source, rows=rows)
    sides = [(found, select(found.rows, run_ids))]
    names: tuple[str, ...] = ()
    if against is not None:
        other = read_source(against, rows=against_rows)
        sides.append((other, counterparts(other.rows, sides[0][1], run_ids)))
        names = source_names(source, against)
    total = sum(len(chosen) for _, chosen in sides)

    def captures() -> Iterator[tuple[Any, Any, int]]:
        done = 0
        for side, (src, chosen) in enumerate(sides):
            for row in chosen:
                spec = spec_of_row(row)
                trace = load_trace(spec.trace_source, spec.trace_id, spec.trace_hash)
                yield capture_run(spec, trace, row), src.recorded.get(spec.run_id, ()), side
                done += 1
                if progress is not None:
                    progress(done, total)

    shown = " vs ".join(names) if names else Path(source).name
    with building(out_dir) as folder:
        write_viewer(folder, captures, title=title or f"ctxbench viewer: {shown}", sources=names)
    return Path(out_dir) / "index.html"
