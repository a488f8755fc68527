"""How close the cache model comes to the cache reads providers recorded.

Each trace with recorded cache usage (DeepSeek ``prompt_cache_hit_tokens``, Anthropic
``cache_read_input_tokens`` / ``cache_creation_input_tokens``, OpenAI ``cached_tokens``) is
replayed with ``none`` (the recorded agent's own prompts) on a window no prompt reaches; every
call's simulated split (:meth:`CacheRules.split` of its true tokens and the prefix it shares
with the previous call, the gap from the trace's timestamps) is compared with what the
provider billed. Simulated tokens are put in the provider's units (scaled by the recorded
prompt over the counted one), so a stand-in tokenizer's scale (Claude's) is not counted as
cache error; a trace that holds no system prompt or tool schemas (Claude Code sessions: the
first call's usage counts them) gets them back as a constant, the first call's recorded
prompt less the counted one, shared by every call.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ctxbench.cost.baseline import uncompacted
from ctxbench.cost.cache import CacheRules, cache_rules, provider_for
from ctxbench.cost.gaps import call_gaps
from ctxbench.trace import Message, Trace, Usage


@dataclass(frozen=True)
class CacheSample:
    """One call: the provider's recorded split against the simulated one."""

    trace_id: str
    call: int
    prompt: int
    recorded_read: int
    simulated_read: int
    recorded_write: int | None
    simulated_write: int


@dataclass(frozen=True)
class CacheAccuracy:
    """The cache model's error over the calls of one provider."""

    provider: str
    traces: int
    calls: int
    #: calls where the provider recorded a cache hit, and the median |simulated - recorded| /
    #: recorded read tokens over them
    hit_calls: int
    median_abs_rel_error: float | None
    p90_abs_rel_error: float | None
    #: sum simulated / sum recorded read tokens
    read_ratio: float | None
    #: share of calls where the model and the provider agree on hit or miss
    hit_agreement: float
    #: median |simulated - recorded| / recorded write tokens (Anthropic), over calls with a write
    write_median_abs_rel_error: float | None = None

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cache_usage(message: Message) -> Usage | None:
    """The message's usage with its recorded cache figures: where the importer kept the
    provider's raw response beside a usage without them (tau2-bench keeps Anthropic's in
    ``meta.raw_data.usage``), its cache reads and writes are taken from there."""
    usage = message.usage
    raw = message.meta.get("raw_data")
    raw_usage = raw.get("usage") if isinstance(raw, dict) else None
    if usage is None or usage.cached_tokens is not None or not isinstance(raw_usage, dict):
        return usage
    read = raw_usage.get("cache_read_input_tokens")
    if not isinstance(read, int):
        return usage
    meta = {
        **usage.meta,
        "cache_creation_input_tokens": raw_usage.get("cache_creation_input_tokens"),
    }
    return replace(usage, cached_tokens=read, meta=meta)


def recorded_write(usage: Usage) -> int | None:
    value = usage.meta.get("cache_creation_input_tokens")
    return int(value) if isinstance(value, int) else None


def rules_for(trace: Trace, counter: str) -> CacheRules:
    """The provider the trace's model stands for; Anthropic with the TTL its writes used, or
    with caching off when it recorded no cache read or write at all."""
    model = str(trace.meta.get("model") or "")
    provider = provider_for(counter, model)
    if provider == "anthropic":
        usages = [u for m in trace.messages if (u := cache_usage(m)) is not None]
        if not any((u.cached_tokens or 0) or (recorded_write(u) or 0) for u in usages):
            return cache_rules("anthropic-off")
        one_hour = any(
            isinstance(u.meta.get("cache_creation"), dict)
            and (u.meta["cache_creation"].get("ephemeral_1h_input_tokens") or 0) > 0
            for u in usages
        )
        return cache_rules("anthropic-1h" if one_hour else "anthropic")
    return cache_rules(provider)


def has_cache_usage(trace: Trace) -> bool:
    """Whether the trace recorded a cache figure on any call."""
    return any(
        (u := cache_usage(m)) is not None
        and (u.cached_tokens is not None or recorded_write(u) is not None)
        for m in trace.messages
    )


def trace_samples(trace: Trace, counter: str) -> tuple[CacheRules, list[CacheSample]]:
    """Replay ``trace`` with ``none`` and compare every recorded call's cache split."""
    tokens = uncompacted(trace, counter)
    rules = rules_for(trace, counter)
    gaps = call_gaps(trace)
    usages = [cache_usage(trace.messages[i]) for i in trace.call_indices]
    hidden = 0
    if trace.meta.get("hidden_prefix"):
        first = next(
            ((c, t) for c, t, _ in tokens.calls if (u := usages[c]) and u.prompt_tokens), None
        )
        if first is not None:
            recorded_first = usages[first[0]]
            assert recorded_first is not None and recorded_first.prompt_tokens is not None
            hidden = max(recorded_first.prompt_tokens - first[1], 0)
    samples = []
    for call, prompt, shared in tokens.calls:
        usage = usages[call]
        if usage is None or usage.prompt_tokens is None or usage.cached_tokens is None:
            continue
        total = prompt + hidden
        split = rules.split(total, shared + hidden if shared > 0 else 0, gaps.get(call))
        scale = usage.prompt_tokens / total if total else 1.0
        samples.append(
            CacheSample(
                trace.id,
                call,
                usage.prompt_tokens,
                usage.cached_tokens,
                round(split.read * scale),
                recorded_write(usage),
                round(split.write * scale),
            )
        )
    return rules, samples


def accuracy(provider: str, traces: int, samples: Sequence[CacheSample]) -> CacheAccuracy:
    hits = [s for s in samples if s.recorded_read > 0]
    errors = [abs(s.simulated_read - s.recorded_read) / s.recorded_read for s in hits]
    writes = [s for s in samples if s.recorded_write]
    write_errors = [
        abs(s.simulated_write - s.recorded_write) / s.recorded_write
        for s in writes
        if s.recorded_write
    ]
    recorded = sum(s.recorded_read for s in samples)
    agree = sum((s.simulated_read > 0) == (s.recorded_read > 0) for s in samples)
    return CacheAccuracy(
        provider=provider,
        traces=traces,
        calls=len(samples),
        hit_calls=len(hits),
        median_abs_rel_error=statistics.median(errors) if errors else None,
        p90_abs_rel_error=_quantile(errors, 0.9),
        read_ratio=sum(s.simulated_read for s in samples) / recorded if recorded else None,
        hit_agreement=agree / len(samples) if samples else 0.0,
        write_median_abs_rel_error=statistics.median(write_errors) if write_errors else None,
    )


def cache_calibration(traces: Iterable[Trace], counter: str | None = None) -> list[CacheAccuracy]:
    """The cache model's accuracy per provider over the traces with recorded cache usage;
    ``counter`` None: each trace's model's own (``--counter auto``)."""
    from ctxbench.counting.auto import choose, trace_model

    by_provider: dict[str, tuple[set[str], list[CacheSample]]] = {}
    for trace in traces:
        if not has_cache_usage(trace):
            continue
        spec = counter or choose(trace_model(trace)).counter
        rules, samples = trace_samples(trace, spec)
        ids, pooled = by_provider.setdefault(rules.provider, (set(), []))
        ids.add(trace.id)
        pooled.extend(samples)
    return [accuracy(p, len(ids), s) for p, (ids, s) in sorted(by_provider.items())]
