"""The cost of a replay call by call, and what each compaction cost and saved (its payback).

Pure functions of a replay's events (and, for cache expiry, the gaps between calls):

- :func:`run_tokens` reads what the model is given: per accepted ``provider.call`` its true
  tokens and the prefix shared with the previous accepted prompt; per ``compaction`` the true
  tokens it removed; per ``summary`` the summary call's input and output.
- :func:`ledger` prices every call through a provider's :class:`~ctxbench.cost.cache.CacheRules`
  and :class:`~ctxbench.cost.prices.ModelPrices` (cache reads, writes and fresh tokens), and,
  given the ``none`` replay of the same trace on a window no prompt reaches (the recorded
  agent's own prompts), the trace without compaction.
- A compaction's **payback**: its one-time cost (the summary call's input, billed fresh, and
  output; the cache rewrite of the new prefix and the cache lost at the next call, net of that
  call's smaller prompt) against the saving at each later call (the removed tokens no longer
  sent, at their cached or fresh price), summed until the next compaction or the end of the
  trace: the calls it takes to pay back, or ``None`` when it never does. Its counterfactual
  puts back only its own removed tokens, until the next compaction (which would have rewritten
  the prompt either way): the first call after it would have read the whole previous prompt
  from the cache (unless that prompt was itself not cached: a system that rewrites its prompt
  head at every call, as DB-GPT 0.8.2 does, loses the cache with or without compaction), a
  later call its shared prefix plus the tokens put back.

The agent's own output tokens are the same with and without compaction (the replay is open
loop) and are left out; summary output is counted.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxbench.cost.cache import CacheRules, Split
from ctxbench.cost.prices import ModelPrices
from ctxbench.engine import events as ev


@dataclass(frozen=True)
class RunTokens:
    """What a replay sent, as the cost model needs it."""

    #: (call, true tokens, shared prefix tokens) of each accepted provider call, in order
    calls: tuple[tuple[int, int, int], ...] = ()
    #: call -> true tokens removed by the compactions made before that call was sent
    removed: Mapping[int, int] = field(default_factory=dict)
    #: call -> (summary input tokens, summary output tokens) of the summaries made at that call
    summaries: Mapping[int, tuple[int, int]] = field(default_factory=dict)


def run_tokens(events: Iterable[ev.Event | Mapping[str, Any]]) -> RunTokens:
    """Read a replay's events (Event objects or their dicts)."""
    calls: list[tuple[int, int, int]] = []
    removed: dict[int, int] = {}
    summaries: dict[int, tuple[int, int]] = {}
    for raw in events:
        e = raw if isinstance(raw, ev.Event) else ev.decode(raw)
        call = e.call
        if isinstance(e, ev.ProviderCall) and e.ok:
            calls.append((call, e.true_tokens, e.cached_tokens or 0))
        elif isinstance(e, ev.Compaction):
            removed[call] = removed.get(call, 0) + e.true_before - e.true_after
        elif isinstance(e, ev.Summary):
            s_in, s_out = summaries.get(call, (0, 0))
            summaries[call] = (s_in + e.input_tokens, s_out + e.output_tokens)
    return RunTokens(tuple(calls), removed, summaries)


def usd(split: Split, prices: ModelPrices, *, one_hour: bool = False) -> float:
    """USD of one call's prompt by its split."""
    return (
        split.read * prices.cache_read_per_mtok
        + split.write * prices.write_price(one_hour)
        + split.fresh * prices.input_per_mtok
    ) / 1e6


def summary_usd(tokens: tuple[int, int], prices: ModelPrices, cached: int = 0) -> float:
    """USD of a summary call: its prompt billed fresh (its first ``cached`` tokens read from
    the cache), its text as output."""
    read = min(cached, tokens[0])
    return (
        read * prices.cache_read_per_mtok
        + (tokens[0] - read) * prices.input_per_mtok
        + tokens[1] * prices.output_per_mtok
    ) / 1e6


@dataclass(frozen=True)
class CallCost:
    """One accepted call, priced."""

    call: int
    prompt: int
    split: Split
    usd: float
    #: the prefix shared with the previous accepted prompt, and the seconds since that call
    shared: int = 0
    gap: float | None = None


@dataclass(frozen=True)
class Payback:
    """What one compaction (all compactions at one call) cost and saved."""

    call: int
    removed_tokens: int
    summary_usd: float
    #: summary + the cost at the first call after it over the same call uncompacted
    one_time_usd: float
    #: the saving at each later call until the next compaction or the end
    savings_usd: tuple[float, ...]
    #: calls (the first call after it counted as 1) until the cumulative saving covers the
    #: summary; None: it never does before the next compaction or the end of the trace
    calls_to_payback: int | None
    net_usd: float
    #: accepted calls from it until the next compaction or the end (0: the call it was made
    #: for still failed, so it never paid back)
    calls: int = 0

    @property
    def paid_back(self) -> bool:
        return self.calls_to_payback is not None


@dataclass(frozen=True)
class Ledger:
    """A replay priced call by call, with the payback of each compaction."""

    calls: tuple[CallCost, ...]
    paybacks: tuple[Payback, ...]
    summary_usd: float
    #: the trace's calls without compaction (the ``none`` replay), when it was given
    without: tuple[CallCost, ...] = ()

    @property
    def usd(self) -> float:
        """The run's input cost with compaction (summaries included)."""
        return sum(c.usd for c in self.calls) + self.summary_usd

    @property
    def usd_without(self) -> float:
        """The trace's input cost without compaction (every recorded call sent whole)."""
        return sum(c.usd for c in self.without)

    @property
    def cache_read(self) -> int:
        return sum(c.split.read for c in self.calls)

    @property
    def cache_write(self) -> int:
        return sum(c.split.write for c in self.calls)

    @property
    def fresh(self) -> int:
        return sum(c.split.fresh for c in self.calls)

    @property
    def never_paid_back(self) -> int:
        return sum(not p.paid_back for p in self.paybacks)


def priced_calls(
    tokens: RunTokens,
    rules: CacheRules,
    prices: ModelPrices,
    gaps: Mapping[int, float] | None = None,
    default_gap: float | None = None,
) -> tuple[CallCost, ...]:
    """Every accepted call of ``tokens`` split and priced. ``gaps``: seconds between call
    ``k`` and the previous call (the trace's timestamps); calls without one: ``default_gap``."""
    gaps = gaps or {}
    out = []
    for call, prompt, shared in tokens.calls:
        gap = gaps.get(call, default_gap)
        split = rules.split(prompt, shared, gap)
        out.append(
            CallCost(call, prompt, split, usd(split, prices, one_hour=rules.one_hour), shared, gap)
        )
    return tuple(out)


def ledger(
    tokens: RunTokens,
    rules: CacheRules,
    prices: ModelPrices,
    gaps: Mapping[int, float] | None = None,
    default_gap: float | None = None,
    *,
    without: RunTokens | None = None,
    summary_reads_cache: bool = False,
) -> Ledger:
    """Price a replay (see the module docstring); ``without``: the ``none`` replay of the
    same trace, priced the same way for the cost without compaction. ``summary_reads_cache``:
    the summary call sends the conversation as the previous call did, with its instruction
    after it (as Claude Code's compaction call does), so the previous prompt is read from the
    cache; otherwise its whole prompt is billed fresh (a summary prompt of its own)."""
    costs = priced_calls(tokens, rules, prices, gaps, default_gap)
    cached = _previous_prompts(costs, tokens.summaries) if summary_reads_cache else {}
    summaries = {c: summary_usd(t, prices, cached.get(c, 0)) for c, t in tokens.summaries.items()}
    paybacks = _paybacks(costs, tokens, summaries, rules, prices)
    base = priced_calls(without, rules, prices, gaps, default_gap) if without is not None else ()
    return Ledger(costs, paybacks, sum(summaries.values()), base)


def _previous_prompts(costs: Sequence[CallCost], at: Mapping[int, object]) -> dict[int, int]:
    """call -> the prompt tokens of the last accepted call before it (0: none)."""
    order = [x.call for x in costs]
    out = {}
    for c in at:
        i = bisect_left(order, c)
        out[c] = costs[i - 1].prompt if i else 0
    return out


def _paybacks(
    costs: Sequence[CallCost],
    tokens: RunTokens,
    summaries: Mapping[int, float],
    rules: CacheRules,
    prices: ModelPrices,
) -> tuple[Payback, ...]:
    """One payback per call with a compaction or a summary (see the module docstring)."""
    at = sorted(set(tokens.removed) | set(summaries))
    order = [x.call for x in costs]  # accepted calls, in call order
    out: list[Payback] = []
    for i, c in enumerate(at):
        first = bisect_left(order, c)
        last = bisect_left(order, at[i + 1]) if i + 1 < len(at) else len(order)
        before = costs[first - 1] if first else None
        segment = costs[first:last]
        cut = tokens.removed.get(c, 0)
        deltas: list[float] = []
        for n, x in enumerate(segment):
            if n > 0:
                shared = x.shared + cut if x.shared > 0 else 0
            elif before is not None and (before.shared > 0 or first == 1):
                shared = before.prompt  # uncompacted, the whole previous prompt is cached
            else:
                shared = x.shared
            split = rules.split(x.prompt + cut, shared, x.gap)
            deltas.append(usd(split, prices, one_hour=rules.one_hour) - x.usd)
        summary = summaries.get(c, 0.0)
        running, paid = -summary, None
        for n, d in enumerate(deltas, start=1):
            running += d
            if paid is None and running >= 0:
                paid = n
        out.append(
            Payback(
                call=c,
                removed_tokens=cut,
                summary_usd=summary,
                one_time_usd=summary - (deltas[0] if deltas else 0.0),
                savings_usd=tuple(deltas[1:]),
                calls_to_payback=paid,
                net_usd=running,
                calls=len(segment),
            )
        )
    return tuple(out)
