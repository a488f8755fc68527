"""Per-trace knob defaults: values a strategy takes from the trace it replays.

A strategy names them with :meth:`ctxbench.engine.strategy.Strategy.trace_defaults` (Claude
Code's CLI version and output limit from a Claude Code session). They apply where the run
leaves the knob at None, so ``--set`` and sweep files win, and the same rule holds in ``run``,
sweeps and ``recorded``: each calls :func:`trace_params`. A sweep keeps only
:func:`hook_meta` of each trace (the meta keys the hooks read), not the trace.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ctxbench.engine.strategy import TraceDefault

#: The ``meta`` keys a hook may read (``imported_from`` is kept as its ``format``).
HOOK_KEYS = ("model", "version", "imported_from")


def hook_meta(meta: Mapping[str, Any]) -> str:
    """The part of a trace's ``meta`` the hooks read, as compact JSON (a sweep keeps this)."""
    out: dict[str, Any] = {}
    for key in HOOK_KEYS:
        value = meta.get(key)
        if key == "imported_from" and isinstance(value, Mapping):
            value = {"format": value.get("format")}
        if isinstance(value, (str, Mapping)):
            out[key] = value
    return json.dumps(out, sort_keys=True, separators=(",", ":")) if out else ""


def trace_params(
    meta: Mapping[str, Any] | str, strategy: str, params: Mapping[str, Any]
) -> tuple[dict[str, Any], tuple[TraceDefault, ...]]:
    """``params`` with the strategy's trace defaults where the knob is unset or None, and the
    defaults that were taken (``meta``: a trace's meta or :func:`hook_meta`'s JSON)."""
    from ctxbench.strategies import strategy_class

    if isinstance(meta, str):
        meta = json.loads(meta) if meta else {}
    out = dict(params)
    taken = []
    for default in strategy_class(strategy).trace_defaults(meta):
        if out.get(default.key) is None:
            out[default.key] = default.value
            taken.append(default)
    return out, tuple(taken)


def describe(taken: tuple[TraceDefault, ...], trace_id: str) -> str:
    """One line for ``run``: which values came from the trace, and why."""
    values = "; ".join(f"{d.key}={d.value} ({d.why})" for d in taken)
    return f"from trace {trace_id}: {values} (--set KEY=VALUE wins)"
