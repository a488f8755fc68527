"""The reasoning rule the billing supports: each candidate rule checked against recorded usage.

A model family documents which earlier reasoning its provider counts (:mod:`ctxbench.counting.
reasoning`), but a model name does not say which mode a run used (``deepseek-reasoner`` was R1,
which refused returned reasoning, and has been the thinking mode of DeepSeek-V3.1 and later,
which counts it in tool turns, since 2025-08-21), and an agent may strip reasoning before
sending it back. Where a trace records the provider's ``prompt_tokens``, the rule is read from
them: every call is counted once without reasoning, each message's reasoning is counted once,
and each rule's count of a call is that base plus the reasoning the rule keeps, so the four
rules cost one count. The rule whose counts follow the billed prompts best wins.

"Best" is the error left after the framing a profile would fit (``ctxbench calibrate
--save-profile``): a constant (tool schemas, hidden system text the trace does not hold), and,
for a stand-in tokenizer (Claude counted with o200k_base), a scale. Raw error would reward a
rule for counting reasoning the provider dropped whenever the counter undercounts (a stand-in
tokenizer, a hidden system prompt); after the fitted framing only what grows with the prompt
is left, and that is what the rule decides. Ties go to the lower raw error, then to the
family's documented rule. Where the
rules count every call alike (no reasoning travels back) or no call records usage, the
family's documented rule stands, with its source.

Pure: traces and a counter in, a :class:`BilledRule` out.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ctxbench.counting.base import TokenCounter
from ctxbench.counting.reasoning import (
    REASONING_KEYS,
    REASONING_RULES,
    RULE_SOURCES,
    ReasoningCounter,
    ReasoningRule,
    kept,
    reasoning_text,
    recorded_reasoning_tokens,
    without_reasoning,
)
from ctxbench.trace import Trace, recorded_prompt

#: Scales tried for a stand-in tokenizer (the profile fit's coarse grid).
SCALES: tuple[float, ...] = tuple(round(0.80 + 0.01 * i, 2) for i in range(81))
#: Where the rule came from.
FROM_USAGE, FROM_FAMILY, GIVEN = "billed usage", "documented family rule", "given"


@dataclass(frozen=True)
class Call:
    """One billed call: its recorded prompt tokens and its count under every rule."""

    recorded: int
    counted: tuple[tuple[str, int], ...]

    def under(self, rule: str) -> int:
        return dict(self.counted)[rule]


@dataclass(frozen=True)
class RuleFit:
    """One candidate rule on the billed calls: errors after the fitted framing (what the rule
    is judged by) and raw (what ``calibrate`` prints)."""

    rule: str
    calls: int
    median: float
    p90: float
    raw_median: float
    raw_p90: float
    raw_bias: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "calls": self.calls,
            "median_abs_rel_error_fitted": round(self.median, 6),
            "p90_abs_rel_error_fitted": round(self.p90, 6),
            "median_abs_rel_error": round(self.raw_median, 6),
            "p90_abs_rel_error": round(self.raw_p90, 6),
            "bias": round(self.raw_bias, 6),
        }


@dataclass(frozen=True)
class BilledRule:
    """The reasoning rule one model's calls are counted under, and why."""

    model: str
    rule: ReasoningRule
    source: str
    family_rule: ReasoningRule
    fits: tuple[RuleFit, ...] = ()
    #: billed calls whose count differs between rules (0: the usage cannot tell them apart)
    telling_calls: int = 0

    @property
    def from_usage(self) -> bool:
        return self.source == FROM_USAGE

    def describe(self) -> str:
        """One line: the rule, and the evidence or the documentation behind it."""
        if self.source == GIVEN:
            return f"reasoning {self.rule} (given)"
        if not self.from_usage:
            why = (
                "the billed usage counts every rule alike"
                if self.fits
                else "no billed usage to check it against"
            )
            return f"reasoning {self.rule} ({FROM_FAMILY}: {RULE_SOURCES[self.rule]}; {why})"
        fit = {f.rule: f for f in self.fits}
        others = ", ".join(f"{r} {fit[r].median:.1%}" for r in fit if r != self.rule)
        agrees = (
            "the family's rule"
            if self.rule == self.family_rule
            else (f"not the family's {self.family_rule}")
        )
        return (
            f"reasoning {self.rule} (fits the {FROM_USAGE} of {fit[self.rule].calls} calls, "
            f"{self.telling_calls} of which the rules count apart: median |err| after framing "
            f"{fit[self.rule].median:.1%} vs {others}; {agrees})"
        )

    @property
    def applied(self) -> RuleFit | None:
        """The figures of the rule applied (None without billed calls)."""
        return next((f for f in self.fits if f.rule == self.rule), None)

    def distance(self, counter: str) -> str | None:
        """How far ``counter`` under the applied rule is from the billed prompts, and how to
        fit a profile (None without billed calls)."""
        fit = self.applied
        if fit is None:
            return None
        return (
            f"{counter} (reasoning {self.rule}) is off the billed prompt_tokens of "
            f"{self.model or 'these calls'} by median {fit.raw_median:.1%}, p90 "
            f"{fit.raw_p90:.1%}, bias {fit.raw_bias:+.1%} on {fit.calls} calls; fit a profile "
            "(`ctxbench calibrate TRACES --counter auto --save-profile p.json`, then "
            "--counter profile:p.json)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "from": self.source,
            "family_rule": self.family_rule,
            "telling_calls": self.telling_calls,
            "fits": [f.to_dict() for f in self.fits],
        }


def billed_calls(
    traces: Iterable[Trace], counter: TokenCounter, model: str | None = None, *, exact: bool = True
) -> list[Call]:
    """Every call with recorded prompt tokens (only ``model``'s, when given), counted under
    each rule: the base count of the stripped request plus the reasoning each rule keeps.
    ``exact`` counts each request whole (``count_prompt``, as ``calibrate`` does); otherwise
    as the replay engine does, the sum of cached per-message counts and the request overhead
    (linear in the trace, where a chat template renders every request again)."""
    from ctxbench.counting.auto import call_model

    base = counter.base if isinstance(counter, ReasoningCounter) else counter
    out: list[Call] = []
    for trace in traces:
        sizes: dict[int, int] = {}  # reasoning tokens per message id, counted once
        bare_sizes: dict[int, int] = {}  # stripped message tokens per message id
        overhead = base.prompt_overhead(trace.tools)
        for i, msg in enumerate(trace.messages):
            usage = msg.usage
            if msg.role != "assistant" or usage is None or not usage.prompt_tokens:
                continue
            if model is not None and call_model(trace, i) != model:
                continue
            prompt = recorded_prompt(trace, i)
            if exact:
                bare = base.count_prompt([without_reasoning(m) for m in prompt], trace.tools)
            else:
                bare = overhead + sum(_bare_tokens(base, m, bare_sizes) for m in prompt)
            reasoning = [_reasoning_tokens(base, m, sizes) for m in prompt]
            counted = tuple(
                (
                    rule,
                    bare
                    + sum(
                        r for r, k in zip(reasoning, kept(prompt, cast(ReasoningRule, rule))) if k
                    ),
                )
                for rule in REASONING_RULES
            )
            out.append(Call(usage.prompt_tokens, counted))
    return out


def _bare_tokens(base: TokenCounter, message: Any, sizes: dict[int, int]) -> int:
    key = id(message)
    if key not in sizes:
        sizes[key] = base.count_message(without_reasoning(message))
    return sizes[key]


def _reasoning_tokens(base: TokenCounter, message: Any, sizes: dict[int, int]) -> int:
    if not any(k in message.replay for k in REASONING_KEYS):
        return 0
    key = id(message)
    if key not in sizes:
        text = reasoning_text(message)
        sizes[key] = base.count(text) if text else recorded_reasoning_tokens(message)
    return sizes[key]


def _errors(relative: Sequence[float]) -> tuple[float, float]:
    from ctxbench.bootstrap import quantile

    absolute = [abs(r) for r in relative]
    return quantile(absolute, 0.5), quantile(absolute, 0.9)


def _fitted(calls: Sequence[Call], rule: str, fit_scale: bool) -> list[float]:
    """Relative errors after the best constant (and scale, for a stand-in tokenizer)."""
    best: tuple[float, list[float]] | None = None
    for scale in SCALES if fit_scale else (1.0,):
        counted = [scale * c.under(rule) for c in calls]
        constant = statistics.median(c.recorded - n for c, n in zip(calls, counted))
        relative = [(n + constant - c.recorded) / c.recorded for c, n in zip(calls, counted)]
        loss = statistics.fmean(abs(r) for r in relative)
        if best is None or loss < best[0] - 1e-12:
            best = (loss, relative)
    assert best is not None
    return best[1]


def fit_rules(calls: Sequence[Call], *, fit_scale: bool) -> tuple[RuleFit, ...]:
    """Every rule's errors on ``calls`` (non-empty)."""
    out = []
    for rule in REASONING_RULES:
        raw = [(c.under(rule) - c.recorded) / c.recorded for c in calls]
        median, p90 = _errors(_fitted(calls, rule, fit_scale))
        raw_median, raw_p90 = _errors(raw)
        bias = statistics.fmean(raw)
        out.append(RuleFit(rule, len(calls), median, p90, raw_median, raw_p90, bias))
    return tuple(out)


def choose_rule(
    calls: Sequence[Call], family_rule: ReasoningRule, *, model: str = "", fit_scale: bool = False
) -> BilledRule:
    """The rule ``calls`` support (the family's when they cannot tell the rules apart)."""
    telling = sum(1 for c in calls if len({n for _, n in c.counted}) > 1)
    if not calls or not telling:
        fits = fit_rules(calls, fit_scale=fit_scale) if calls else ()
        return BilledRule(model, family_rule, FROM_FAMILY, family_rule, fits, telling)
    fits = fit_rules(calls, fit_scale=fit_scale)
    order = {rule: i for i, rule in enumerate(REASONING_RULES)}
    best = min(
        fits,
        key=lambda f: (
            round(f.median, 6),
            round(f.p90, 6),
            round(f.raw_median, 6),
            round(f.raw_p90, 6),
            f.rule != family_rule,
            order[f.rule],
        ),
    )
    return BilledRule(model, cast(ReasoningRule, best.rule), FROM_USAGE, family_rule, fits, telling)


def billed_rule(
    traces: Iterable[Trace],
    counter: TokenCounter,
    model: str,
    family_rule: ReasoningRule,
    *,
    fit_scale: bool = False,
    exact: bool = True,
) -> BilledRule:
    """The rule the billed usage of ``model``'s calls in ``traces`` supports."""
    calls = billed_calls(traces, counter, model, exact=exact)
    return choose_rule(calls, family_rule, model=model, fit_scale=fit_scale)


#: One answer per (trace hash, counter, model, family rule, scale), for the life of the process.
_MEMO: dict[tuple[str, str, str, str, bool], BilledRule] = {}
_MEMO_SIZE = 256


def trace_rule(
    trace: Trace,
    trace_hash: str,
    counter_spec: str,
    model: str,
    family_rule: ReasoningRule,
    *,
    fit_scale: bool = False,
) -> BilledRule:
    """:func:`billed_rule` of one trace, counted as the replay engine counts, once per process
    per (trace, counter, model): every cell of a sweep on the trace reads the same answer (a
    pure function of the trace)."""
    key = (trace_hash, counter_spec, model, family_rule, fit_scale)
    found = _MEMO.get(key)
    if found is None:
        from ctxbench.counting import get_counter

        found = billed_rule(
            [trace], get_counter(counter_spec), model, family_rule, fit_scale=fit_scale, exact=False
        )
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = found
    return found
