"""The trace without compaction: the ``none`` replay on a window no recorded prompt reaches,
so every recorded call is sent whole (the recorded agent's own prompts)."""

from __future__ import annotations

from ctxbench.cost.ledger import RunTokens, run_tokens
from ctxbench.trace import Trace

#: a window no recorded prompt reaches
OPEN_WINDOW = 16_000_000


def uncompacted(trace: Trace, counter: str, reasoning: str = "") -> RunTokens:
    """What ``trace``'s calls send without compaction, counted with ``counter``."""
    from ctxbench.cell.runner import resolve_spec, run_spec
    from ctxbench.cell.spec import RunSpec
    from ctxbench.strategies import BASELINE

    spec = resolve_spec(
        RunSpec(
            trace_id=trace.id,
            trace_hash=trace.content_hash,
            strategy=BASELINE,
            window=OPEN_WINDOW,
            reserved=0,
            counter=counter,
            reasoning=reasoning,
        )
    )
    return run_tokens(run_spec(spec, trace).events)
