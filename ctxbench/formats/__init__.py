"""Trace formats: the canonical ``ctxbench.trace/1`` files and importers of recorded formats."""

from ctxbench.formats.canonical import read_traces, schema, write_traces

__all__ = ["read_traces", "schema", "write_traces"]
