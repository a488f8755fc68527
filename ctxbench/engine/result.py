"""The result row of one replay, computed from its events alone.

Every metric is a function of the event list, so a row can always be re-derived (and checked)
from the events file. The column names are a contract read by reports, ``check`` and users.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any

from ctxbench.engine import events as ev
from ctxbench.probes.losses import cliff_table

SCHEMA_VERSION = "ctxbench.result/1"

#: Columns whose values depend on the machine (excluded from determinism comparisons).
TIMING_COLUMNS: tuple[str, ...] = ("replay_seconds",)


@dataclass(frozen=True)
class Identity:
    """What the row is about (from the RunSpec)."""

    run_id: str = ""
    trace_id: str = ""
    strategy: str = ""
    params: str = "{}"
    window: int = 0
    reserved: int = 0
    counter: str = ""
    estimator: str = ""
    summarizer: str = ""
    spec: str = "{}"


@dataclass(frozen=True)
class RunResult:
    """One row: identity, metrics computed from events, and provenance."""

    run_id: str
    trace_id: str
    strategy: str
    params: str
    window: int
    reserved: int
    counter: str
    estimator: str
    summarizer: str
    calls: int
    failed_calls: int
    overflow_errors: int
    reactive_retries: int
    compactions: str
    summary_calls: int
    summary_tokens: int
    input_tokens_total: int
    cached_input_tokens: int
    peak_ratio: float
    pairing_violations: int
    system_kept: bool
    probes: int
    in_context: int
    via_reference: int
    stale: int
    lost: int
    retention: float | None
    recoverability: float | None
    retention_by_kind: str
    cost_usd: float | None
    replay_seconds: float
    ctxbench_version: str
    schema_version: str
    error: str | None
    spec: str
    #: the framework release a ``shipped:`` strategy ran (``agentscope==2.0.11``) and the hash
    #: of its installed environment; empty for every other strategy (a reproduction names the
    #: release it reproduces in ``params``). Rows written before these columns read as empty.
    release: str = ""
    env_hash: str = ""
    #: what the ``shipped:`` driver changed in how the trace reaches the framework (e.g. native
    #: tool calls given to DB-GPT's ReAct agent as text rounds), "; "-joined; empty otherwise
    driver_notes: str = ""
    #: the first model call that failed (the real agent crashed there), None when none did
    first_failed_call: int | None = None
    #: probes scored lost because the task had failed at or before their ask point
    after_failure: int = 0
    #: in-context verdicts whose answer stands only as a bare list item (no words around it)
    bare: int = 0
    #: recorded actions that wrote a value the prompt no longer showed (``open_loop.break``)
    open_loop_breaks: int = 0
    first_open_loop_break: int | None = None
    #: with an answerer (``--answerer``): the probes its answers held an accepted answer for,
    #: their share of the probes asked (beside ``retention``, string presence), by kind (JSON;
    #: "" when no answerer was asked)
    answered: int = 0
    answered_retention: float | None = None
    answered_by_kind: str = ""
    #: with ``--next-action``: the calls whose next step was asked with and without
    #: compaction, and the share where both steps agree (tool and naming arguments)
    next_action_calls: int = 0
    next_action_agreement: float | None = None
    #: prompt + completion tokens the answerer's endpoint reported for this row's requests
    answerer_tokens: int = 0
    #: summaries that are the recorded agent's own text (``--summarizer recorded`` at a
    #: recorded compaction); the others came from the summarizer or its fallback
    recorded_summaries: int = 0
    #: the provider the true counter stands for (ctxbench.cost: OpenAI for o200k/cl100k and any
    #: counter naming no provider, DeepSeek, Anthropic, Gemini), its prompt cache per call
    #: (no expiry: the row has no clock), priced with its built-in table
    cache_provider: str = ""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    #: USD of the run through that cache: input, cache writes and summary calls (no agent output)
    cache_cost_usd: float | None = None
    #: compactions (calls with one) whose saving never covered their one-time cost
    compactions_never_paid_back: int = 0
    #: per probe kind, the first compaction (1-based) after which the kind's probes asked
    #: there keep under half (:mod:`ctxbench.probes.losses`; JSON; kinds that never fall
    #: are left out; "" in rows written before the column)
    cliff_by_kind: str = ""

    def to_row(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def columns(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def column_defaults(cls) -> dict[str, Any]:
        """The columns added after the first schema, with the value an older row reads as."""
        return {f.name: f.default for f in fields(cls) if f.default is not MISSING}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RunResult:
        """The result a row (as read back from a results file) holds; other keys are ignored,
        a missing column that has a default (added after the file was written) takes it."""
        present = {name: row[name] for name in cls.columns() if name in row}
        for f in fields(cls):
            if f.name not in present and f.default is MISSING and f.default_factory is MISSING:
                raise KeyError(f.name)  # a column every row has had
        return cls(**present)


@dataclass(frozen=True)
class Prices:
    """USD per million tokens: fresh input, cached input, output (summaries count as calls)."""

    input_per_mtok: float
    cached_input_per_mtok: float | None = None
    output_per_mtok: float = 0.0

    def cost(
        self, input_tokens: int, cached_tokens: int, summary_in: int, summary_out: int
    ) -> float:
        cached_price = (
            self.cached_input_per_mtok
            if self.cached_input_per_mtok is not None
            else self.input_per_mtok
        )
        fresh = input_tokens - cached_tokens + summary_in
        usd = (
            fresh * self.input_per_mtok
            + cached_tokens * cached_price
            + summary_out * self.output_per_mtok
        ) / 1e6
        return round(usd, 6)


def _version() -> str:
    from ctxbench.version import __version__

    return __version__


#: the event types the row does not read
_UNCOUNTED = frozenset({ev.CONTEXT_STATUS, ev.SNAPSHOT, ev.RECORDED})


def result_from_events(
    events: Iterable[ev.Event | Mapping[str, Any]],
    identity: Identity,
    *,
    prices: Prices | None = None,
    replay_seconds: float = 0.0,
    error: str | None = None,
) -> RunResult:
    """Compute the row from a replay's events (Event objects, or their dicts as read back)."""
    calls: set[int] = set()
    overflow = retries = 0
    layers: Counter[str] = Counter()
    summary_calls = summary_in = summary_out = recorded_summaries = 0
    input_total = cached_total = 0
    peak = 0.0
    pairing = 0
    system_kept = True
    release = env_hash = driver_notes = ""
    outcomes: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = {}
    #: the calls that failed, and those whose recorded action broke the open loop, in order
    failed_at: list[int] = []
    breaks_at: list[int] = []
    after_failure = bare = 0
    failed_kinds: Counter[str] = Counter()
    answers: dict[str, Counter[str]] = {}
    actions = agreed = answer_tokens = 0
    sent: list[tuple[int, int, int]] = []
    asked: list[tuple[int, str, bool]] = []
    removed: dict[int, int] = {}
    summaries: dict[int, tuple[int, int]] = {}
    for raw in events:
        e = raw if isinstance(raw, ev.Event) else ev.decode(raw)
        if e.type in _UNCOUNTED:  # most events: a status at every step, a snapshot per result
            continue
        at = e.call
        if isinstance(e, ev.ProviderCall):
            calls.add(at)
            if e.limit > 0:
                peak = max(peak, e.true_tokens / e.limit)
            if e.attempt > 0:
                retries += 1
            if e.ok:
                input_total += e.true_tokens
                cached_total += e.cached_tokens
                sent.append((at, e.true_tokens, e.cached_tokens))
            elif (e.error_kind or ev.OVERFLOW) == ev.OVERFLOW:
                overflow += 1
        elif isinstance(e, ev.CallFailed):
            failed_at.append(at)
        elif isinstance(e, ev.Compaction):
            layers[e.layer] += 1
            removed[at] = removed.get(at, 0) + e.true_before - e.true_after
            pairing += e.pairing_violations
            system_kept = system_kept and e.system_kept
        elif isinstance(e, ev.Summary):
            summary_calls += 1
            summary_in += e.input_tokens
            summary_out += e.output_tokens
            recorded_summaries += e.source == ev.RECORDED_SOURCE
            s_in, s_out = summaries.get(at, (0, 0))
            summaries[at] = (s_in + e.input_tokens, s_out + e.output_tokens)
        elif isinstance(e, ev.Shipped):
            release, env_hash = e.release, e.env_hash
            driver_notes = "; ".join(str(n) for n in e.notes or ())
        elif isinstance(e, ev.ProbeScored):
            outcomes[e.outcome] += 1
            by_kind.setdefault(e.kind, Counter())[e.outcome] += 1
            asked.append((at, e.kind, e.outcome == "in_context"))
            if e.reason == ev.AFTER_FAILURE:
                after_failure += 1
                failed_kinds[e.kind] += 1
            if e.bare:
                bare += 1
        elif isinstance(e, ev.OpenLoopBreak):
            breaks_at.append(at)
        elif isinstance(e, ev.ProbeAnswer):
            answers.setdefault(e.kind, Counter())[e.verdict] += 1
            answer_tokens += e.prompt_tokens + e.completion_tokens
        elif isinstance(e, ev.NextAction):
            actions += 1
            agreed += e.agree
            answer_tokens += e.prompt_tokens + e.completion_tokens
    n_probes = sum(outcomes.values())
    retention = outcomes["in_context"] / n_probes if n_probes else None
    recoverability = (
        (outcomes["in_context"] + outcomes["via_reference"]) / n_probes if n_probes else None
    )
    kind_retention = {
        k: round(c["in_context"] / sum(c.values()), 4)
        for k, c in sorted(by_kind.items())
        if sum(c.values())
    }
    if answers:  # a probe asked after the task failed was never answered: the agent crashed
        for kind_name, count in failed_kinds.items():
            answers.setdefault(kind_name, Counter())[ev.AFTER_FAILURE] += count
    n_answers = sum(sum(c.values()) for c in answers.values())
    n_answered = sum(c["answered"] for c in answers.values())
    cost = prices.cost(input_total, cached_total, summary_in, summary_out) if prices else None
    cache = _through_cache(identity.counter, sent, removed, summaries)
    return RunResult(
        **asdict(identity),  # the identity columns, as the spec gave them
        calls=len(calls),
        failed_calls=len(failed_at),
        overflow_errors=overflow,
        reactive_retries=retries,
        compactions=json.dumps(dict(sorted(layers.items())), separators=(",", ":")),
        summary_calls=summary_calls,
        summary_tokens=summary_in + summary_out,
        input_tokens_total=input_total,
        cached_input_tokens=cached_total,
        peak_ratio=round(peak, 4),
        pairing_violations=pairing,
        system_kept=system_kept,
        probes=n_probes,
        in_context=outcomes["in_context"],
        via_reference=outcomes["via_reference"],
        stale=outcomes["stale"],
        lost=outcomes["lost"],
        retention=round(retention, 4) if retention is not None else None,
        recoverability=round(recoverability, 4) if recoverability is not None else None,
        retention_by_kind=json.dumps(kind_retention, separators=(",", ":")),
        cost_usd=cost,
        replay_seconds=replay_seconds,
        ctxbench_version=_version(),
        schema_version=SCHEMA_VERSION,
        error=error,
        release=release,
        env_hash=env_hash,
        driver_notes=driver_notes,
        first_failed_call=failed_at[0] if failed_at else None,
        after_failure=after_failure,
        bare=bare,
        open_loop_breaks=len(breaks_at),
        first_open_loop_break=breaks_at[0] if breaks_at else None,
        answered=n_answered,
        answered_retention=round(n_answered / n_answers, 4) if n_answers else None,
        answered_by_kind=json.dumps(
            {k: round(c["answered"] / sum(c.values()), 4) for k, c in sorted(answers.items())},
            separators=(",", ":"),
        )
        if answers
        else "",
        next_action_calls=actions,
        next_action_agreement=round(agreed / actions, 4) if actions else None,
        answerer_tokens=answer_tokens,
        recorded_summaries=recorded_summaries,
        **cache,
        cliff_by_kind=json.dumps(cliff_table(sorted(removed), asked), separators=(",", ":")),
    )


def _through_cache(
    counter: str,
    sent: list[tuple[int, int, int]],
    removed: dict[int, int],
    summaries: dict[int, tuple[int, int]],
) -> dict[str, Any]:
    """The row's prompt-cache columns (:mod:`ctxbench.cost`)."""
    from ctxbench.cost.cache import DEFAULT_PRICES, cache_rules, provider_for
    from ctxbench.cost.ledger import RunTokens, ledger
    from ctxbench.cost.prices import BUILTIN

    rules = cache_rules(provider_for(counter))
    priced = ledger(
        RunTokens(tuple(sent), removed, summaries), rules, BUILTIN[DEFAULT_PRICES[rules.provider]]
    )
    return {
        "cache_provider": rules.provider,
        "cache_read_tokens": priced.cache_read,
        "cache_write_tokens": priced.cache_write,
        "cache_cost_usd": round(priced.usd, 6),
        "compactions_never_paid_back": priced.never_paid_back,
    }
