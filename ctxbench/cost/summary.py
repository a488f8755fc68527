"""A set of replays' cost, with and without compaction, and how their compactions paid back:
what ``ctxbench cost`` prints and the report's cost section shows."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ctxbench.cost.ledger import Ledger


@dataclass(frozen=True)
class CostSummary:
    """The ledgers of one configuration (strategy, knobs, window) over its traces."""

    traces: int
    usd_with: float
    usd_without: float
    compactions: int
    never_paid_back: int
    #: median calls to pay back over the compactions that did (None: none did)
    median_calls_to_payback: float | None
    cache_read: int
    cache_write: int
    fresh: int

    @property
    def per_trace_with(self) -> float:
        return self.usd_with / self.traces if self.traces else 0.0

    @property
    def per_trace_without(self) -> float:
        return self.usd_without / self.traces if self.traces else 0.0

    @property
    def never_share(self) -> float | None:
        return self.never_paid_back / self.compactions if self.compactions else None

    def per_tasks(self, tasks: int = 1000) -> tuple[float, float]:
        """USD of ``tasks`` traces like these, with and without compaction."""
        return self.per_trace_with * tasks, self.per_trace_without * tasks

    def to_dict(self, tasks: int = 1000) -> dict[str, object]:
        with_, without = self.per_tasks(tasks)
        return {
            "traces": self.traces,
            "usd_with": round(self.usd_with, 6),
            "usd_without": round(self.usd_without, 6),
            f"usd_per_{tasks}_with": round(with_, 4),
            f"usd_per_{tasks}_without": round(without, 4),
            "compactions": self.compactions,
            "never_paid_back": self.never_paid_back,
            "never_share": None if self.never_share is None else round(self.never_share, 4),
            "median_calls_to_payback": self.median_calls_to_payback,
            "cache_read_tokens": self.cache_read,
            "cache_write_tokens": self.cache_write,
            "fresh_tokens": self.fresh,
        }


def summarize(ledgers: Sequence[Ledger]) -> CostSummary:
    paybacks = [p for led in ledgers for p in led.paybacks]
    paid = [p.calls_to_payback for p in paybacks if p.calls_to_payback is not None]
    return CostSummary(
        traces=len(ledgers),
        usd_with=sum(led.usd for led in ledgers),
        usd_without=sum(led.usd_without for led in ledgers),
        compactions=len(paybacks),
        never_paid_back=sum(not p.paid_back for p in paybacks),
        median_calls_to_payback=float(statistics.median(paid)) if paid else None,
        cache_read=sum(led.cache_read for led in ledgers),
        cache_write=sum(led.cache_write for led in ledgers),
        fresh=sum(led.fresh for led in ledgers),
    )
