"""Plug-in faults caught at the engine's boundary: one error naming the plug-in, the hook, the
trace and the model call, with the plug-in's own frames (ctxbench's left out).

A strategy written by a user may raise, or return what a hook does not take (OpenAI dicts
where ``ctx.apply`` wants messages, ``None`` for a list). Without this, the user reads
``'dict' object has no attribute 'fingerprint'`` thirty frames deep in ctxbench; with it:

    error: strategy mypkg.compaction:compact: before_call raised KeyError: 'tool_calls'
      (trace 'astropy__astropy-12907', model call 12)
      File "/src/mypkg/compaction.py", line 41, in compact
        calls = message["tool_calls"]
      hint: ...
"""

from __future__ import annotations

import traceback
from pathlib import Path
from types import TracebackType
from typing import Any

from ctxbench.errors import CtxbenchError, PluginError

#: ctxbench's own source folder: frames under it are the harness, not the plug-in
_OWN = str(Path(__file__).resolve().parents[1])


def is_plugin(obj: object) -> bool:
    """Whether ``obj`` (a strategy instance or class) was written outside ctxbench."""
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", "") or ""
    return module != "ctxbench" and not module.startswith("ctxbench.")


def _own(filename: str) -> bool:
    try:
        return str(Path(filename).resolve()).startswith(_OWN)
    except (OSError, ValueError):
        return False


def plugin_frames(exc: BaseException) -> str:
    """The traceback of ``exc`` with ctxbench's frames left out (the plug-in's, and the
    libraries it called), as ``traceback`` prints them, without the last line."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _own(f.filename)]
    return "".join(traceback.format_list(frames)).rstrip("\n")


def first_plugin_function(tb: TracebackType | None) -> str:
    """The name of the outermost function outside ctxbench in a traceback: the hook the
    engine called (``before_call``, or the plain function's name)."""
    for frame in traceback.extract_tb(tb):
        if not _own(frame.filename):
            return frame.name
    return ""


def where(trace_id: str, call: int, n_calls: int | None = None) -> str:
    """``(trace 'ID', model call K)``, or the end of the trace past its last call."""
    if n_calls is not None and call >= n_calls:
        return f"(trace {trace_id!r}, after its last model call)"
    return f"(trace {trace_id!r}, model call {call})"


def raised(
    plugin: str, hook: str, exc: BaseException, trace_id: str, call: int, n_calls: int | None
) -> PluginError:
    """The error for an exception a plug-in raised in ``hook``."""
    text = str(exc)
    message = f"{plugin}: {hook or 'a hook'} raised {type(exc).__name__}"
    message += f": {text}" if text else ""
    return PluginError(
        f"{message} {where(trace_id, call, n_calls)}",
        hint="the frames above are the plug-in's; re-run this cell alone with `ctxbench run` "
        "(or `ctxbench run --from-row RESULTS --run-id ID`) to debug it",
        plugin_traceback=plugin_frames(exc),
    )


def wrong_value(
    plugin: str,
    hook: str,
    got: Any,
    expected: str,
    trace_id: str,
    call: int,
    n_calls: int | None = None,
    *,
    hint: str = "",
) -> PluginError:
    """The error for a hook that returned (or passed) a value of the wrong type."""
    return PluginError(
        f"{plugin}: {hook} got {_kind(got)}, expected {expected} {where(trace_id, call, n_calls)}",
        hint=hint or f"make {hook} return {expected}",
    )


def _kind(value: Any) -> str:
    if value is None:
        return "None"
    return f"a {type(value).__module__ + '.' if type(value).__module__ not in ('builtins',) else ''}{type(value).__name__}"


def at_boundary(
    plugin: str, exc: Exception, trace_id: str, call: int, n_calls: int | None
) -> Exception:
    """What a replay raises for ``exc`` escaping a plug-in strategy: ctxbench's own errors
    as they are (they already say what to fix), anything else as :func:`raised`."""
    if isinstance(exc, CtxbenchError):
        return exc
    return raised(plugin, first_plugin_function(exc.__traceback__), exc, trace_id, call, n_calls)
