"""``shipped:google_adk@2.13.0``: Google ADK's event compaction (before each model request and
after each invocation).

Knobs are ``EventsCompactionConfig``'s fields (``google/adk/apps/_configs.py:50``). The
release has no defaults (every trigger None: nothing compacts until configured), so the
strategy's are ctxbench's: ``token_threshold`` None means ``token_threshold_ratio`` (0.75) of
the run window, ``event_retention_size`` 6; ``compaction_interval`` and ``overlap_size`` None
(the sliding window off). What the driver runs and emulates is in
``ctxbench/shipped/drivers/google_adk_driver.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxbench.shipped.releases import GOOGLE_ADK
from ctxbench.shipped.strategy import ShippedStrategy


@dataclass(frozen=True)
class EventsCompactionKnobs:
    token_threshold: int | None = field(
        default=None, metadata={"help": "prompt tokens that trigger (None = ratio x window)"}
    )
    token_threshold_ratio: float = field(
        default=0.75, metadata={"help": "the threshold as a share of the window (ctxbench's)"}
    )
    event_retention_size: int = field(default=6, metadata={"help": "raw events kept"})
    compaction_interval: int | None = field(
        default=None, metadata={"help": "summarize every N invocations (None = off)"}
    )
    overlap_size: int | None = None

    def __post_init__(self) -> None:
        # _configs.py Field bounds: gt=0 / ge=0
        if self.token_threshold is not None and self.token_threshold <= 0:
            raise ValueError(f"token_threshold must be > 0, not {self.token_threshold}")
        if not 0 < self.token_threshold_ratio <= 1:
            raise ValueError(
                f"token_threshold_ratio must be within (0, 1], not {self.token_threshold_ratio}"
            )
        if self.event_retention_size < 0:
            raise ValueError(f"event_retention_size must be >= 0, not {self.event_retention_size}")
        if self.compaction_interval is not None and self.compaction_interval <= 0:
            raise ValueError(f"compaction_interval must be > 0, not {self.compaction_interval}")
        if (self.compaction_interval is None) != (self.overlap_size is None):
            raise ValueError("compaction_interval and overlap_size are set together")


class ShippedGoogleAdk(ShippedStrategy):
    name = "shipped:google_adk@2.13.0"
    summary = (
        "google-adk 2.13.0's own event compaction: the request processor before each call "
        "and the post-invocation compactor (token threshold; optional sliding window)."
    )
    source = "PyPI google-adk==2.13.0 google/adk/apps/compaction.py, flows/llm_flows/context/"
    Config = EventsCompactionKnobs
    default_estimator = "chars4"
    release = GOOGLE_ADK
