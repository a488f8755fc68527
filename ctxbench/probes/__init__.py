"""Probes: the facts a replay is scored on (model, scoring, mining)."""

from ctxbench.probes.model import PROBE_KINDS, Probe

__all__ = ["PROBE_KINDS", "Probe"]
