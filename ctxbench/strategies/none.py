"""``none``: never compacts. Replaying a trace with it shows where (and how often) the trace
overflows a window, and is the retention ceiling every other strategy is compared with."""

from __future__ import annotations

from ctxbench.engine.strategy import Starter
from ctxbench.strategies.base import Strategy


class NoCompaction(Strategy):
    name = "none"
    summary = "Never compacts: shows where a trace overflows."
    source = "ctxbench baseline"
    default_estimator = "chars4"
    starter = Starter(0, "the baseline: never compacts, shows where the traces overflow")
