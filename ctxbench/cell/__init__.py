"""One replay, start to row: its spec and defaults (:mod:`~ctxbench.cell.spec`), where its
trace comes from (:mod:`~ctxbench.cell.traces`, the front door every command reads traces
through) and the runner that builds its parts, replays, times it and computes its row
(:mod:`~ctxbench.cell.runner`). Loaded lazily: naming ``ctxbench.cell.spec`` imports no strategy.
"""

from ctxbench.registry import lazy_exports

_EXPORTS = {
    "RunSpec": "ctxbench.cell.spec",
    "canonical_json": "ctxbench.cell.spec",
    "TraceFile": "ctxbench.cell.traces",
    "open_traces": "ctxbench.cell.traces",
    "load_trace": "ctxbench.cell.traces",
    "Parts": "ctxbench.cell.runner",
    "build_parts": "ctxbench.cell.runner",
    "error_result": "ctxbench.cell.runner",
    "resolve_spec": "ctxbench.cell.runner",
    "run_spec": "ctxbench.cell.runner",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
