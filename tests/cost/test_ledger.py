"""The cost of a replay call by call, and the payback of a compaction, worked by hand."""

from __future__ import annotations

import pytest

from ctxbench.cost.cache import ANTHROPIC, DEEPSEEK
from ctxbench.cost.ledger import ledger, run_tokens
from ctxbench.cost.prices import BUILTIN
from ctxbench.engine import events as ev

SONNET = BUILTIN["anthropic"]  # $3 input, $3.75 5-minute write, $0.30 read, $15 output


def _call(call: int, true: int, cached: int) -> ev.Event:
    return ev.ProviderCall(call=call, attempt=0, estimated_tokens=true, true_tokens=true,
                           limit=200_000, ok=True, cached_tokens=cached)  # fmt: skip


def _compaction(call: int, before: int, after: int) -> ev.Event:
    return ev.Compaction(call=call, layer="summary", est_before=before, est_after=after,
                         true_before=before, true_after=after, messages_before=9,
                         messages_after=3, dropped=6, changed=0)  # fmt: skip


def _events(later_calls: int) -> list[ev.Event]:
    """Calls 0-1 grow a 10k-token prompt to 20k; before call 2 a compaction summarises 15k
    tokens away (a 20k-token summary prompt, 1k tokens of summary) and keeps a 2k-token
    prefix; each later call adds 1k tokens."""
    events = [_call(0, 10_000, 0), _call(1, 20_000, 10_000)]
    events.append(
        ev.Summary(call=2, layer="summary", ok=True, input_tokens=20_000, output_tokens=1_000)
    )
    events.append(_compaction(2, 21_000, 6_000))
    events.append(_call(2, 6_000, 2_000))
    for n in range(later_calls):
        prompt = 7_000 + 1_000 * n
        events.append(_call(3 + n, prompt, prompt - 1_000))
    return events


def test_calls_are_split_into_cache_reads_writes_and_fresh_tokens() -> None:
    priced = ledger(run_tokens(_events(0)), ANTHROPIC, SONNET)
    first, second, compacted = priced.calls
    assert (first.split.read, first.split.write, first.split.fresh) == (0, 10_000, 0)
    assert first.usd == pytest.approx(10_000 * 3.75e-6)  # a 5-minute write, 1.25x $3
    assert (second.split.read, second.split.write) == (10_000, 10_000)
    assert second.usd == pytest.approx(10_000 * 0.30e-6 + 10_000 * 3.75e-6)
    # after the compaction only the kept 2k prefix is read; the rest is written again
    assert (compacted.split.read, compacted.split.write) == (2_000, 4_000)


def test_payback_of_a_compaction_at_anthropic_prices_worked_by_hand() -> None:
    """Summary: 20k x $3/M + 1k x $15/M = $0.075. At call 2 the compacted prompt costs
    2k x $0.30/M + 4k x $3.75/M = $0.0156 against $0.00975 uncompacted (20k read + 1k
    written): one-time $0.075 + $0.00585 = $0.08085. Each later call sends the 15k removed
    tokens no more, which were cache reads: $0.0045 saved per call. 0.08085 / 0.0045 = 17.97:
    it pays back at the 18th call after call 2, the 19th counting call 2."""
    payback = ledger(run_tokens(_events(25)), ANTHROPIC, SONNET).paybacks[0]
    assert payback.removed_tokens == 15_000
    assert payback.summary_usd == pytest.approx(0.075)
    assert payback.one_time_usd == pytest.approx(0.08085)
    assert payback.savings_usd[0] == pytest.approx(0.0045)
    assert set(map(round6, payback.savings_usd)) == {0.0045}
    assert payback.calls_to_payback == 19
    assert payback.net_usd == pytest.approx(-0.08085 + 25 * 0.0045)


def round6(x: float) -> float:
    return round(x, 6)


def test_a_compaction_followed_by_too_few_calls_never_pays_back() -> None:
    payback = ledger(run_tokens(_events(10)), ANTHROPIC, SONNET).paybacks[0]
    assert payback.calls_to_payback is None
    assert payback.net_usd == pytest.approx(-0.08085 + 10 * 0.0045)


def test_at_deepseek_prices_the_same_compaction_needs_many_more_calls() -> None:
    """DeepSeek reads cost $0.0028/M and hits are whole 64-token units: at call 3 the
    compacted prompt reads 5,952 of its 6,000 shared tokens (1,048 fresh), the uncompacted one
    20,992 of 21,000 (1,008 fresh), so a call saves 15,040 reads less 40 fresh tokens against
    a $0.00308 summary (20k x $0.14/M + 1k x $0.28/M)."""
    deepseek = BUILTIN["deepseek"]
    payback = ledger(run_tokens(_events(100)), DEEPSEEK, deepseek).paybacks[0]
    assert payback.summary_usd == pytest.approx(20_000 * 0.14e-6 + 1_000 * 0.28e-6)
    assert payback.savings_usd[0] == pytest.approx(15_040 * 0.0028e-6 - 40 * 0.14e-6)
    assert payback.calls_to_payback is not None and payback.calls_to_payback > 70


def test_without_compaction_is_the_none_replay_priced_the_same_way() -> None:
    uncompacted = [_call(k, 10_000 * (k + 1), 10_000 * k) for k in range(3)]
    priced = ledger(run_tokens(_events(0)), ANTHROPIC, SONNET, without=run_tokens(uncompacted))
    assert priced.usd == pytest.approx(0.0375 + 0.0405 + 0.0156 + 0.075)
    # 10k written; 10k read + 10k written; 20k read + 10k written
    assert priced.usd_without == pytest.approx((30_000 * 3.75 + 30_000 * 0.30) / 1e6)


def test_a_prompt_never_cached_is_not_cached_uncompacted_either() -> None:
    """A system that rewrites its prompt head at every call (DB-GPT 0.8.2's system prompt
    gains a line of progress) shares nothing with its previous prompt: its compaction is
    judged against a call that would have missed the cache too."""
    events = [_call(0, 10_000, 0), _call(1, 20_000, 0)]
    events.append(_compaction(2, 30_000, 6_000))
    events.append(_call(2, 6_000, 0))
    payback = ledger(run_tokens(events), ANTHROPIC, SONNET).paybacks[0]
    # 24k tokens not written at $3.75/M, no summary: it pays back at once
    assert payback.one_time_usd == pytest.approx(-24_000 * 3.75e-6)
    assert payback.calls_to_payback == 1


def test_an_expired_cache_is_written_again() -> None:
    tokens = run_tokens(_events(1))
    warm = ledger(tokens, ANTHROPIC, SONNET)
    cold = ledger(tokens, ANTHROPIC, SONNET, gaps={1: 301.0})
    assert warm.calls[1].split.read == 10_000
    assert (cold.calls[1].split.read, cold.calls[1].split.write) == (0, 20_000)


def test_a_summary_call_that_reads_the_cached_conversation_costs_less() -> None:
    """With the conversation sent as before and the instruction after it, the summary call
    reads call 1's 20k-token prompt from the cache: 20k x $0.30/M + 1k x $15/M = $0.021."""
    tokens = run_tokens(_events(3))
    fresh = ledger(tokens, ANTHROPIC, SONNET).paybacks[0]
    cached = ledger(tokens, ANTHROPIC, SONNET, summary_reads_cache=True).paybacks[0]
    assert fresh.summary_usd == pytest.approx(0.075)
    assert cached.summary_usd == pytest.approx(0.021)
    assert cached.calls == fresh.calls == 4


def test_a_compaction_whose_call_still_failed_never_pays_back() -> None:
    events = [_call(0, 10_000, 0)]
    events.append(_compaction(1, 40_000, 30_000))
    payback = ledger(run_tokens(events), ANTHROPIC, SONNET).paybacks[0]
    assert payback.calls == 0 and payback.calls_to_payback is None
