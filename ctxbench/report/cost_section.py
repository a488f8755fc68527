"""The report's cost section: per configuration and window, the cost per trace with and without
compaction on the provider the run's true counter stands for, the share of compactions that
never pay back, and every compaction's payback (:mod:`ctxbench.cost`).

Pure: the rows, their reduced events and the loaded traces come in; "without compaction" is
the results' own ``none`` run of the same trace, true counter and window (what the agent costs
until a prompt no longer fits: its failed calls are shown), handed in as a function, so the
report replays nothing (``ctxbench cost`` prices the trace without compaction on a window no
prompt reaches).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ctxbench.cost.cache import DEFAULT_PRICES, CacheRules, cache_rules, provider_for
from ctxbench.cost.calibration import has_cache_usage, rules_for
from ctxbench.cost.gaps import call_gaps
from ctxbench.cost.ledger import Ledger, RunTokens, ledger
from ctxbench.cost.prices import BUILTIN, ModelPrices
from ctxbench.cost.summary import summarize
from ctxbench.engine.result import RunResult
from ctxbench.report import table as tb
from ctxbench.report.page import Block, Paragraph, Section, TableBlock
from ctxbench.report.results import RunEvents
from ctxbench.trace import Trace

#: the per-compaction table lists at most this many (the largest removals first)
MAX_PAYBACK_ROWS = 300

#: a row -> its ``none`` counterpart's tokens and failed calls (None: the results hold none)
Baseline = Callable[[RunResult], tuple[RunTokens, int] | None]


def _rules(trace: Trace | None, counter: str) -> CacheRules:
    if trace is not None and has_cache_usage(trace):
        return rules_for(trace, counter)  # the TTL (or no caching) the recorded run used
    model = str(trace.meta.get("model") or "") if trace is not None else ""
    return cache_rules(provider_for(counter, model))


def _prices(rules: CacheRules) -> ModelPrices:
    return BUILTIN[DEFAULT_PRICES[rules.provider]]


def cost_section(
    rows: Sequence[RunResult],
    events: Mapping[str, RunEvents],
    traces: Mapping[str, Trace],
    labels: Mapping[str, str],
    baseline: Baseline,
    *,
    has_events: bool,
) -> Section:
    """``labels``: run id -> configuration label."""
    title = "Cost and payback"
    if not has_events:
        return Section(
            "cost",
            title,
            (Paragraph("The results hold no events file: the cost per call needs the events."),),
        )
    blocks: list[Block] = [
        Paragraph(
            "What each configuration costs on the provider its true counter stands for "
            "(o200k/cl100k: OpenAI, DeepSeek's tokenizers: DeepSeek, Claude: Anthropic; other "
            "counters are priced as OpenAI), call by call through that provider's prompt cache: "
            "cache reads, cache writes (Anthropic: 1.25x input for the 5-minute TTL, 2x for 1 "
            "hour, which Claude Code sessions use) and fresh tokens. Without compaction is the "
            "same trace replayed with `none` on a window no prompt reaches (its calls over this "
            "window are counted: without compaction they need a larger window). A compaction pays "
            "back when the calls after it, until the next compaction or the end of the trace, "
            "have saved its one-time cost: the summary call and the prefix cache it rewrote. "
            "The agent's own output is the same either way and is left out. Cache expiry uses "
            "the gaps between calls where the trace recorded timestamps."
        )
    ]
    ledgers: dict[tuple[str, int], list[Ledger]] = {}
    priced_as: dict[tuple[str, int], set[str]] = {}
    over: dict[tuple[str, int], int] = {}
    unknown: set[tuple[str, int]] = set()  # configurations some trace has no none run for
    known: dict[tuple[str, str], tuple[CacheRules, dict[int, float]]] = {}
    payback_rows: list[tuple[int, list[tb.Cell]]] = []
    for row in rows:
        trace = traces.get(row.trace_id)
        run = events.get(row.run_id)
        if row.error or trace is None or run is None or not run.tokens.calls:
            continue
        if (row.trace_id, row.counter) not in known:  # once per trace and counter
            known[(row.trace_id, row.counter)] = (_rules(trace, row.counter), call_gaps(trace))
        rules, gaps = known[(row.trace_id, row.counter)]
        prices = _prices(rules)
        base = baseline(row)
        priced = ledger(run.tokens, rules, prices, gaps, without=base[0] if base else None)
        key = (labels[row.run_id], row.window)
        ledgers.setdefault(key, []).append(priced)
        if base is None:
            unknown.add(key)
        else:
            over[key] = over.get(key, 0) + base[1]
        priced_as.setdefault(key, set()).add(f"{rules.provider}: {prices.model}")
        for p in priced.paybacks:
            payback_rows.append(
                (
                    p.removed_tokens,
                    [
                        tb.text(key[0]),
                        tb.number(row.window),
                        tb.text(row.trace_id),
                        tb.count(p.call),
                        tb.count(p.removed_tokens),
                        tb.money(p.summary_usd),
                        tb.money(p.one_time_usd),
                        tb.money(p.savings_usd[0] if p.savings_usd else None),
                        tb.count(p.calls),
                        tb.text("never")
                        if p.calls_to_payback is None
                        else tb.count(p.calls_to_payback),
                    ],
                )
            )
    if not ledgers:
        blocks.append(Paragraph("No run sent an accepted call: nothing to price."))
        return Section("cost", title, tuple(blocks))
    summary_rows = []
    for (label, window), group in sorted(ledgers.items()):
        s = summarize(group)
        with_ = s.per_trace_with
        without = None if (label, window) in unknown else s.per_trace_without
        sent = s.cache_read + s.cache_write + s.fresh
        summary_rows.append(
            [
                tb.text(label),
                tb.number(window),
                tb.text(", ".join(sorted(priced_as[(label, window)]))),
                tb.count(s.traces),
                tb.money(with_),
                tb.money(without),
                tb.number((with_ - without) / without if without else None, percent=True),
                tb.count(over.get((label, window)) if without is not None else None),
                tb.count(s.compactions),
                tb.number(s.never_share, percent=True),
                tb.number(_whole(s.median_calls_to_payback)),
                tb.number(s.cache_read / sent if sent else None, percent=True),
            ]
        )
    blocks.append(
        TableBlock(
            tb.table(
                "cost",
                tb.columns(
                    tb.Column("configuration", wide=True, pin=True),
                    ("window", True),
                    ("priced as", False, "provider: model of the built-in price table"),
                    ("traces", True),
                    ("USD / trace", True, "input, cache writes and summaries, with compaction"),
                    ("USD / trace without", True, "the none run of the same trace and window"),
                    ("change", True, "with / without - 1"),
                    (
                        "failed calls without",
                        True,
                        "failed calls of the none runs: without compaction the agent stops there",
                    ),
                    ("compactions", True, "calls with a compaction or a summary"),
                    ("never pay back", True, "share of compactions whose saving never covers them"),
                    ("median calls to pay back", True, "over the compactions that pay back"),
                    ("cache reads", True, "share of the prompt tokens read from the cache"),
                ),
                summary_rows,
                caption="Cost per trace with and without compaction",
                note="; ".join(sorted(_used(priced_as))),
            )
        )
    )
    payback_rows.sort(key=lambda r: -r[0])
    shown = [cells for _, cells in payback_rows[:MAX_PAYBACK_ROWS]]
    if shown:
        blocks.append(
            TableBlock(
                tb.table(
                    "paybacks",
                    tb.columns(
                        tb.Column("configuration", wide=True, pin=True),
                        ("window", True),
                        "trace",
                        ("call", True),
                        ("removed tokens", True, "true tokens the compaction took out"),
                        ("summary USD", True),
                        ("one-time USD", True, "summary + the first call over it uncompacted"),
                        ("saving / call USD", True, "at the second call after it"),
                        (
                            "calls",
                            True,
                            "accepted calls until the next compaction or the end (0: the call still failed)",
                        ),
                        (
                            "calls to pay back",
                            True,
                            "counting the first call; never: not before the next compaction or the end",
                        ),
                    ),
                    shown,
                    caption="Payback of each compaction"
                    + (
                        f" (the {MAX_PAYBACK_ROWS} that removed the most of {len(payback_rows):,})"
                        if len(payback_rows) > MAX_PAYBACK_ROWS
                        else ""
                    ),
                )
            )
        )
    return Section("cost", title, tuple(blocks))


def _whole(value: float | None) -> float | int | None:
    return int(value) if value is not None and value == int(value) else value


def _used(priced_as: Mapping[tuple[str, int], set[str]]) -> set[str]:
    models = {entry.split(": ", 1)[1] for names in priced_as.values() for entry in names}
    # the page holds no URL (nothing in it may load from outside): the pages are named bare
    return {p.describe().replace("https://", "") for p in BUILTIN.values() if p.model in models}
