"""ctxbench: offline evaluation and simulation harness for the context compaction of LLM agents."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ctxbench.formats.canonical import read_traces, write_traces
from ctxbench.trace import Message, ToolCall, Trace, rounds, validate

try:
    __version__ = version("ctxbench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = [
    "Message",
    "ToolCall",
    "Trace",
    "__version__",
    "read_traces",
    "rounds",
    "validate",
    "write_traces",
]
