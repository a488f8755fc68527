"""How much a probe of each kind counts in retention: a ``recommend --weight`` option and a
sweep-file knob (``kind_weights``), read by the decisions (recommend, the report's verdict).
The default, every probe counts 1 (the row's ``retention``), is written here once."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench.errors import ConfigError
from ctxbench.probes.model import PROBE_KINDS


@dataclass(frozen=True)
class KindWeights:
    """How much a probe of each kind counts in retention (default: every probe counts 1,
    which is the row's ``retention``). A weight of 0 leaves the kind out."""

    weights: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for kind, weight in self.weights.items():
            if kind not in PROBE_KINDS:
                raise ConfigError(
                    f"unknown probe kind {kind!r}",
                    key="weight",
                    hint=f"kinds: {', '.join(PROBE_KINDS)}",
                )
            if isinstance(weight, bool) or not math.isfinite(weight) or weight < 0:
                raise ConfigError(
                    f"the weight of {kind} must be a finite number >= 0, not {weight!r}",
                    key="weight",
                    hint="e.g. --weight task=2 --weight recall=0.5",
                )

    def of(self, kind: str) -> float:
        return float(self.weights.get(kind, 1.0))

    @property
    def equal(self) -> bool:
        return all(w == 1.0 for w in self.weights.values())

    def describe(self) -> str:
        if self.equal:
            return "every probe counts 1"
        return ", ".join(f"{k} x{w:g}" for k, w in sorted(self.weights.items()))


#: The sweep-file key that holds the kind weights (``kind_weights = { task = 2 }``).
WEIGHTS_KEY = "kind_weights"


def weights_table(weights: Any, *, source: str | Path | None = None) -> KindWeights:
    """Kind weights from a sweep file's ``kind_weights`` table (None: every probe counts 1).
    Files are data: a bad value is an error naming the file and the key."""
    weights = weights or {}
    if not isinstance(weights, Mapping) or not all(
        isinstance(w, (int, float)) and not isinstance(w, bool) for w in weights.values()
    ):
        raise ConfigError(
            f"{WEIGHTS_KEY} must be a table of probe kind = number, not {weights!r}",
            path=source,
            key=WEIGHTS_KEY,
            hint=f"e.g. {WEIGHTS_KEY} = {{ task = 2, recall = 0.5 }}",
        )
    try:
        return KindWeights({str(k): float(w) for k, w in weights.items()})
    except ConfigError as exc:
        raise ConfigError(exc.message, path=source, key=WEIGHTS_KEY, hint=exc.hint) from None


def sweep_weights(record: Mapping[str, Any], *, source: str | Path | None = None) -> KindWeights:
    """The kind weights a sweep recorded in ``sweep.json`` (its ``spec``; none: equal)."""
    spec = record.get("spec")
    return weights_table(
        spec.get(WEIGHTS_KEY) if isinstance(spec, Mapping) else None, source=source
    )
