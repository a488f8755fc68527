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
    title: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Write the viewer of ``source``'s runs into ``out_dir``; returns its ``index.html``.
    ``progress(done, total)`` hears of every run replayed."""
    from ctxbench.cell.traces import load_trace
    from ctxbench.results import spec_of_row
    from ctxbench.view.capture import capture_run
    from ctxbench.view.sources import read_source, select
    from ctxbench.view.write import write_viewer

    found = read_source(source, rows=rows)
    chosen = select(found.rows, run_ids)

    def captures() -> Iterator[tuple[Any, Any]]:
        for done, row in enumerate(chosen):
            spec = spec_of_row(row)
            trace = load_trace(spec.trace_source, spec.trace_id, spec.trace_hash)
            yield capture_run(spec, trace, row), found.recorded.get(spec.run_id, ())
            if progress is not None:
                progress(done + 1, len(chosen))

    return write_viewer(out_dir, captures, title=title or f"ctxbench viewer: {Path(source).name}")
