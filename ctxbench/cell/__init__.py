"""One replay, start to row: its spec and defaults (:mod:`~ctxbench.cell.spec`), where its
trace comes from (:mod:`~ctxbench.cell.traces`, the front door every command reads traces
through) and the runner that builds its parts, replays, times it and computes its row
(:mod:`~ctxbench.cell.runner`). Loaded lazily: naming ``ctxbench.cell.spec`` imports no strategy.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "RunSpec": "spec",
    "canonical_json": "spec",
    "TraceFile": "traces",
    "open_traces": "traces",
    "load_trace": "traces",
    "Parts": "runner",
    "build_parts": "runner",
    "error_result": "runner",
    "resolve_spec": "runner",
    "run_spec": "runner",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ctxbench.cell' has no attribute {name!r}")
    return getattr(importlib.import_module(f"ctxbench.cell.{_EXPORTS[name]}"), name)


__all__ = sorted(_EXPORTS)
