"""The strategy protocol lives next to the replay context, in :mod:`ctxbench.engine.strategy`;
this name stays for plug-ins written against it."""

from ctxbench.engine.strategy import DEFAULT_STATE_THRESHOLDS, NoConfig, ProviderCall, Strategy

__all__ = ["DEFAULT_STATE_THRESHOLDS", "NoConfig", "ProviderCall", "Strategy"]
