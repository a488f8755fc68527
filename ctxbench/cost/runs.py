"""Each run of a results directory priced through its provider's prompt cache: what
``recommend --max-usd`` constrains on. No trace is loaded, so caches never expire between
calls here (``ctxbench cost`` and the report use the traces' timestamps)."""

from __future__ import annotations

from pathlib import Path

from ctxbench.cost.cache import DEFAULT_PRICES, cache_rules, provider_for
from ctxbench.cost.ledger import ledger, run_tokens
from ctxbench.cost.prices import BUILTIN
from ctxbench.engine import events as ev

#: the events the cost model does not read
_SKIP = (ev.CONTEXT_STATUS, ev.SNAPSHOT, ev.PROBE, ev.CALL_FAILED, ev.RECORDED)


def run_costs(directory: str | Path, provider: str | None = None) -> dict[str, float]:
    """run id -> USD of the run with compaction (input, cache writes and summaries), on
    ``provider`` (None: the one each run's true counter stands for)."""
    from ctxbench.results import ResultsDir

    store = ResultsDir(directory)
    counters = {row.run_id: row.counter for row in store.results()}
    by_run: dict[str, list[ev.Event]] = {}
    for run_id, e in store.typed_events(skip=_SKIP):
        by_run.setdefault(run_id, []).append(e)
    out: dict[str, float] = {}
    for run_id, counter in counters.items():
        rules = cache_rules(provider or provider_for(counter))
        prices = BUILTIN[DEFAULT_PRICES[rules.provider]]
        out[run_id] = ledger(run_tokens(by_run.get(run_id, ())), rules, prices).usd
    return out
