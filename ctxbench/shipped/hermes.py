"""``shipped:hermes@0.19.0``: Hermes Agent's released compressor, called as its loop calls it.

Knobs are ``ContextCompressor``'s constructor fields (the ``compression`` config section) with
0.19.0's defaults; ``max_tokens`` None is the release's "no output reservation". What the
driver runs and what it emulates is in ``ctxbench/shipped/drivers/hermes_driver.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ctxbench.shipped.releases import HERMES
from ctxbench.shipped.strategy import ShippedStrategy

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext


@dataclass(frozen=True)
class HermesReleaseConfig:
    context_length: int | None = field(
        default=None, metadata={"help": "config_context_length (None = the run window)"}
    )
    max_tokens: int | None = field(
        default=None, metadata={"help": "output reservation (None = none, the release default)"}
    )
    threshold_percent: float = 0.50
    protect_first_n: int = 3
    protect_last_n: int = 20
    summary_target_ratio: float = 0.20
    abort_on_summary_failure: bool = False
    model: str = field(default="replayed-model", metadata={"help": "the agent's model name"})

    def __post_init__(self) -> None:
        if not 0 < self.threshold_percent <= 1:
            raise ValueError(f"threshold_percent must be in (0, 1], not {self.threshold_percent}")
        for name in ("protect_first_n", "protect_last_n"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, not {getattr(self, name)}")
        if self.max_tokens is not None and self.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, not {self.max_tokens}")


class ShippedHermes(ShippedStrategy):
    name = "shipped:hermes@0.19.0"
    summary = (
        "Hermes 0.19.0's own ContextCompressor at the loop's prologue, pre-API and usage checks."
    )
    source = (
        "PyPI hermes-agent==0.19.0 agent/context_compressor.py, agent/conversation_compression.py"
    )
    Config = HermesReleaseConfig
    default_estimator = "hermes"
    release = HERMES

    def budget(self, ctx: ReplayContext) -> int:
        """The window the compressor works in: ``context_length - max_tokens`` (None: none
        reserved), as the reproduction reports it, so both sides' context states compare."""
        cfg = self.config
        window = cfg.context_length or ctx.window
        effective = window - (cfg.max_tokens or 0)
        return effective if effective > 0 else window
