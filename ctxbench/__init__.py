"""ctxbench: offline evaluation and simulation harness for the context compaction of LLM agents.

What user code is written against, in one place (each name is imported on first use, so
``import ctxbench`` and ``ctxbench --help`` stay fast)::

    from ctxbench import Strategy, ReplayContext, SummaryRequest, Message   # a plug-in
    from ctxbench import open_traces, RunSpec, run_spec, ResultsDir          # one replay, rows
"""

from __future__ import annotations

import importlib
from typing import Any

from ctxbench.version import __version__ as __version__

_EXPORTS = {
    # the trace model and trace files
    "Message": "ctxbench.trace",
    "ToolCall": "ctxbench.trace",
    "Trace": "ctxbench.trace",
    "Usage": "ctxbench.trace",
    "rounds": "ctxbench.pairing",
    "validate": "ctxbench.validation",
    "Probe": "ctxbench.probes.model",
    "read_traces": "ctxbench.formats.canonical",
    "write_traces": "ctxbench.formats.canonical",
    "open_traces": "ctxbench.cell.traces",
    # the engine and the protocols plug-ins implement
    "replay": "ctxbench.engine.replay",
    "ReplayOutput": "ctxbench.engine.replay",
    "ReplayContext": "ctxbench.engine.context",
    "SimulatedProvider": "ctxbench.engine.provider",
    "Strategy": "ctxbench.engine.strategy",
    "ProviderCall": "ctxbench.engine.strategy",
    "Summarizer": "ctxbench.summarizers.base",
    "SummaryRequest": "ctxbench.summarizers.base",
    "TokenCounter": "ctxbench.counting.base",
    "get_counter": "ctxbench.counting",
    "to_openai": "ctxbench.formats.openai_messages",
    "from_openai": "ctxbench.formats.openai_messages",
    "RunResult": "ctxbench.engine.result",
    # one replay, sweeps, results
    "RunSpec": "ctxbench.cell.spec",
    "run_spec": "ctxbench.cell.runner",
    "resolve_spec": "ctxbench.cell.runner",
    "SweepSpec": "ctxbench.sweep.spec",
    "load_sweep": "ctxbench.sweep.spec",
    "run_sweep": "ctxbench.sweep.execution",
    "ResultsDir": "ctxbench.results.reader",
    # errors
    "CtxbenchError": "ctxbench.errors",
    "ConfigError": "ctxbench.errors",
    "TraceFormatError": "ctxbench.errors",
    "UnknownNameError": "ctxbench.errors",
    "ProviderOverflowError": "ctxbench.errors",
    "SummarizerError": "ctxbench.errors",
    "OutputError": "ctxbench.errors",
    "PluginError": "ctxbench.errors",
    "ResultsError": "ctxbench.errors",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ctxbench' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


__all__ = sorted([*_EXPORTS, "__version__"])
