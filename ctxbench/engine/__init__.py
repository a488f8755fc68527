"""The pure replay engine: a recorded trace, call by call, through one strategy against a
simulated provider (:func:`ctxbench.engine.replay.replay`, also ``ctxbench.replay``); what a strategy sees (:class:`ReplayContext`) and the
protocol it implements (:class:`Strategy`). No files, no clock; loaded lazily."""

from ctxbench.registry import lazy_exports

_EXPORTS = {
    "ReplayOutput": "ctxbench.engine.replay",
    "ReplayContext": "ctxbench.engine.context",
    "Strategy": "ctxbench.engine.strategy",
    "ProviderCall": "ctxbench.engine.strategy",
    "SimulatedProvider": "ctxbench.engine.provider",
    "Event": "ctxbench.engine.events",
    "RunResult": "ctxbench.engine.result",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
