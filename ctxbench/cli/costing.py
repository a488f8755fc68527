"""``ctxbench cost``: what a strategy and threshold cost per 1,000 tasks on a provider, with and
without compaction, and how each compaction paid back."""

from __future__ import annotations

import json
from typing import Any

import click

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.cell.traces import open_traces
from ctxbench.cli.options import (
    counter_option,
    file_option,
    json_option,
    quiet_option,
    reserved_option,
    sets_option,
    traces_argument,
)
from ctxbench.cli.output import print_table
from ctxbench.cli.progress import terminal_bar
from ctxbench.cli.running import strategy_params
from ctxbench.cli.sizes import TOKENS
from ctxbench.cost.baseline import uncompacted
from ctxbench.cost.cache import DEFAULT_PRICES, PROVIDERS, cache_rules, provider_for
from ctxbench.cost.calibration import has_cache_usage, rules_for
from ctxbench.cost.gaps import call_gaps
from ctxbench.cost.ledger import Ledger, ledger, run_tokens
from ctxbench.cost.prices import load_price_tables
from ctxbench.cost.summary import summarize
from ctxbench.errors import ConfigError
from ctxbench.recorded import strategy_params as session_params

AUTO = "auto"


def _money(usd: float) -> str:
    return f"${usd:,.4f}" if usd < 1 else f"${usd:,.2f}"


@click.command("cost")
@traces_argument(required=True)
@click.option("--strategy", "-s", required=True, help="Strategy name (see `ctxbench strategies`).")
@file_option("--config", "config_file", help="TOML file with the strategy's knobs.")
@sets_option()
@click.option("--window", "-w", type=TOKENS, required=True, help="Context window (32k = 32,768).")
@reserved_option(RunSpec.reserved)
@counter_option(
    default=RunSpec.counter,
    show_default=True,
    help="The provider's TRUE counter (`auto`: from each trace's meta.model).",
)
@click.option(
    "--provider",
    type=click.Choice([AUTO, *PROVIDERS]),
    default=AUTO,
    show_default=True,
    help="Whose prompt cache and prices (auto: what the trace recorded, else the counter's or "
    "the trace model's provider).",
)
@click.option(
    "--price-table",
    default=None,
    help="Which price table (default: the provider's; e.g. anthropic-opus, openai-gpt5).",
)
@file_option("--prices", "prices_file", help="TOML price tables over the built-in ones.")
@click.option(
    "--ttl", type=float, default=None, help="Cache lifetime in seconds (default: the provider's)."
)
@click.option(
    "--gap",
    type=float,
    default=None,
    help="Seconds between calls where the trace records no timestamps (default: the cache "
    "never expires between calls).",
)
@click.option(
    "--tasks", type=click.IntRange(min=1), default=1000, show_default=True, help="Scale to N tasks."
)
@click.option(
    "--summary-cached",
    is_flag=True,
    help="The summary call reads the previous prompt from the cache (it sends the "
    "conversation with its instruction after it, as Claude Code's compaction call does); "
    "default: its prompt is billed fresh.",
)
@click.option("--paybacks", is_flag=True, help="Also list every compaction's payback.")
@click.option(
    "--calls",
    "per_call",
    is_flag=True,
    help="Also list every accepted call: its prompt, cache reads, writes, fresh tokens, USD.",
)
@json_option("Print one JSON object.")
@quiet_option("No progress bar.")
def cost(
    traces: tuple[str, ...],
    strategy: str,
    config_file: str | None,
    sets: tuple[str, ...],
    window: int,
    reserved: int,
    counter: str,
    provider: str,
    price_table: str | None,
    prices_file: str | None,
    ttl: float | None,
    gap: float | None,
    tasks: int,
    summary_cached: bool,
    paybacks: bool,
    per_call: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """What STRATEGY at WINDOW costs per 1,000 tasks like TRACES on a provider, with and
    without compaction.

    Each trace is replayed; every accepted call is split into cache reads, cache writes and
    fresh tokens by the provider's prompt cache (Anthropic: reads 0.1x, 5-minute writes 1.25x,
    1-hour writes 2x; OpenAI: hits from 1,024 tokens in 128-token steps; DeepSeek: 64-token
    hits; Gemini: implicit hits from 2,048 tokens) and priced with the provider's table (its
    page and the date it was read are printed). "Without compaction" is the `none` replay of
    the same trace on a window no prompt reaches (every recorded call sent whole). A compaction pays back when the calls after it
    (until the next compaction or the end) have saved its one-time cost: the summary call and
    the cache rewritten after it. Gaps between calls come from the trace's timestamps where it
    has them (the cache expires past its TTL), else from --gap.

    \b
    Examples:
      ctxbench cost traces.jsonl -s dbgpt -w 32k --provider anthropic
      ctxbench cost session.jsonl -s claude_code -w 200k --counter claude_code --provider anthropic-1h --paybacks
      ctxbench cost t.jsonl -s hermes --set threshold_percent=0.6 -w 64k --provider deepseek --json
    """
    params = strategy_params(strategy, config_file, sets)
    tables = load_price_tables(prices_file)
    ledgers: list[Ledger] = []
    per_trace: list[dict[str, Any]] = []
    listed: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    used: set[str] = set()
    for path in traces:
        for trace in open_traces(path).traces():
            true_counter = counter
            if counter == AUTO:  # the counter of the trace's recorded model
                from ctxbench.counting.auto import choose, trace_model

                true_counter = choose(trace_model(trace)).counter
            if provider != AUTO:
                name = provider
            elif has_cache_usage(trace):  # the provider, TTL (or no caching) it recorded
                name = rules_for(trace, true_counter).provider
            else:
                name = provider_for(true_counter, str(trace.meta.get("model") or ""))
            rules = cache_rules(name, ttl_seconds=ttl)
            table = price_table or DEFAULT_PRICES[name]
            if table not in tables:
                raise ConfigError(
                    f"no price table {table!r}",
                    key="--price-table",
                    hint=f"use one of {', '.join(sorted(tables))}, or add it with --prices FILE",
                )
            prices = tables[table]
            used.add(f"{name}: {prices.describe()}")
            spec = resolve_spec(
                RunSpec(
                    trace_id=trace.id,
                    trace_hash=trace.content_hash,
                    strategy=strategy,
                    params=session_params(trace, strategy, params),
                    window=window,
                    reserved=reserved,
                    counter=true_counter,
                )
            )
            bar = terminal_bar(f"cost {trace.id}", quiet=quiet)
            output = run_spec(spec, trace, on_call=bar.update)
            bar.close()
            priced = ledger(
                run_tokens(output.events),
                rules,
                prices,
                call_gaps(trace),
                gap,
                without=uncompacted(trace, true_counter),
                summary_reads_cache=summary_cached,
            )
            ledgers.append(priced)
            per_trace.append(
                {
                    "trace_id": trace.id,
                    "calls": len(priced.calls),
                    "usd_with": round(priced.usd, 6),
                    "usd_without": round(priced.usd_without, 6),
                    "compactions": len(priced.paybacks),
                    "never_paid_back": priced.never_paid_back,
                    "cache_read": priced.cache_read,
                    "cache_write": priced.cache_write,
                    "fresh": priced.fresh,
                }
            )
            calls.extend(
                {
                    "trace_id": trace.id,
                    "call": c.call,
                    "prompt": c.prompt,
                    "cache_read": c.split.read,
                    "cache_write": c.split.write,
                    "fresh": c.split.fresh,
                    "usd": round(c.usd, 6),
                }
                for c in priced.calls
            )
            listed.extend(
                {
                    "trace_id": trace.id,
                    "call": p.call,
                    "removed_tokens": p.removed_tokens,
                    "summary_usd": round(p.summary_usd, 6),
                    "one_time_usd": round(p.one_time_usd, 6),
                    "saving_per_call_usd": round(p.savings_usd[0], 6) if p.savings_usd else None,
                    "calls": p.calls,
                    "calls_to_payback": p.calls_to_payback,
                    "net_usd": round(p.net_usd, 6),
                }
                for p in priced.paybacks
            )
    if not ledgers:
        raise ConfigError("no traces in the given files", hint="check the files")
    total = summarize(ledgers)
    if as_json:
        payload: dict[str, Any] = {
            "strategy": strategy,
            "window": window,
            "prices": sorted(used),
            **total.to_dict(tasks),
            "traces_detail": per_trace,
        }
        if paybacks:
            payload["paybacks"] = listed
        if per_call:
            payload["calls"] = calls
        click.echo(json.dumps(payload, ensure_ascii=False))
        return
    print_table(per_trace, per_trace[0].keys())
    if per_call and calls:
        click.echo("")
        print_table(calls, calls[0].keys())
    if paybacks and listed:
        click.echo("")
        print_table(listed, listed[0].keys())
    with_, without = total.per_tasks(tasks)
    change = (with_ - without) / without if without else 0.0
    click.echo(
        f"\nper {tasks:,} tasks: {_money(with_)} with compaction, {_money(without)} without "
        f"({change:+.1%}); input and summaries, the agent's own output left out"
    )
    never = "" if total.never_share is None else f" ({total.never_share:.0%})"
    median = total.median_calls_to_payback
    click.echo(
        f"{total.compactions} compactions, {total.never_paid_back}{never} never pay back"
        + (f"; the others in a median {median:g} calls" if median is not None else "")
    )
    for line in sorted(used):
        click.echo(f"priced as {line}")
