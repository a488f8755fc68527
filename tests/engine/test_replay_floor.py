"""A cold replay hands its tokenizer about the trace's distinct text (nothing comes from a cache),
which is what makes ``benchmarks/bench_strategy_floor.py``'s ratio honest: the old ``make bench``
printed a replay at 0.033 of its floor because the replay found its counts in a cache. How long
either side takes is the benchmark's to measure, never a test's (these machines are noisy, and a
replay's line memo may tokenize a little less than the floor's whole texts)."""

from __future__ import annotations

import pytest

from benchmarks.bench_strategy_floor import CASES, _child, measure

ROUNDS = 60


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["none", "dbgpt"])
def test_a_cold_replay_hands_its_tokenizer_the_traces_distinct_text(
    strategy: str,
) -> None:
    case = CASES["synthetic_300"]
    sent = _child("replay", case.name, strategy, ROUNDS, meter=True)["sent"]
    # the true counter is handed about the trace's distinct text: nothing came from a cache
    # (lines that distinct texts share, a result and its "Observation: " form, are tokenized
    # once, so a little less; a replay that found its counts in a cache sends next to nothing)
    assert (
        sent["tiktoken:o200k_base"]["chars_sent"]
        >= 0.9 * sent["tiktoken:o200k_base"]["trace_distinct_chars"]
    )


def test_a_replay_under_its_floor_is_called_invalid(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake(
        side: str, case: str, strategy: str, rounds: int, meter: bool = False
    ) -> dict[str, float]:
        return {"seconds": 0.01 if side == "replay" else 0.3}  # 0.033 of its floor

    monkeypatch.setattr("benchmarks.bench_strategy_floor._child", fake)
    figures = measure(CASES["synthetic_300"], "none", repeats=3, rounds=ROUNDS)
    assert figures["replay_vs_floor"] < 1 and not figures["valid"]
