"""hierarchical (ctxbench synthesis): hot window, cold store, BM25 retrieval, one test per rule."""

from __future__ import annotations

import json

from ctxbench.pairing import pairing_violations, rounds
from ctxbench.strategies.hierarchical import BM25, HierarchicalConfig, tokenize
from ctxbench.trace import Message, Trace
from tests.factories import tool_round
from tests.replaying import compactions, run


def recall_trace(n: int = 10, *, calls: int = 1) -> Trace:
    """Rounds of tool output; round 2 holds a unique fact; the last user message asks for it."""
    msgs = [Message("system", "You are an agent."), Message("user", "Configure the service.")]
    for i in range(n):
        output = "zebra_config = 42 in deploy/zebra.yaml" if i == 2 else f"routine output {i}"
        msgs += tool_round(i, calls=calls, output=output)
    msgs += [Message("user", "Which value did zebra_config have?"), Message("assistant", "42")]
    return Trace("h", tuple(msgs))


def hot(view: tuple[Message, ...]) -> list[Message]:
    return [m for m in view if m.role != "system"]


def test_defaults() -> None:
    cfg = HierarchicalConfig()
    assert (cfg.hot_rounds, cfg.retrieval_tokens, cfg.top_k, cfg.trigger_ratio) == (8, 2000, 3, 0.0)
    assert (cfg.k1, cfg.b, cfg.pin_first_user) == (1.5, 0.75, True)


def test_only_the_hot_rounds_stay_in_the_prompt_with_the_pinned_task() -> None:
    out = run(recall_trace(), "hierarchical", 100_000, hot_rounds=3, top_k=0)
    rest = hot(out.final_view)
    assert rest[0].content == "Configure the service."
    assert len(rounds(rest[1:])) == 3


def test_evicted_rounds_go_to_the_cold_store_files() -> None:
    out = run(recall_trace(), "hierarchical", 100_000, hot_rounds=3, top_k=0)
    files = sorted(p for p in out.files if p.startswith("cold_store/h/"))
    assert files and files[0] == "cold_store/h/round_0000.json"
    payload = json.loads(out.files[files[2]])
    assert "zebra_config = 42" in json.dumps(payload)


def test_the_best_matching_cold_round_is_retrieved_before_the_hot_rounds() -> None:
    out = run(recall_trace(), "hierarchical", 100_000, hot_rounds=3, top_k=1)
    rest = hot(out.final_view)
    texts = [m.content for m in rest]
    fact = next(i for i, t in enumerate(texts) if "zebra_config = 42" in t)
    assert fact == 2  # pinned task, the retrieved assistant turn, its result
    assert rest[1].tool_calls and rest[1].tool_calls[0].id == rest[2].tool_call_id
    assert len(rounds(rest[3:])) == 3  # then the hot rounds


def test_retrieval_stays_within_the_token_allowance() -> None:
    out = run(recall_trace(), "hierarchical", 100_000, hot_rounds=3, retrieval_tokens=0)
    assert not any("zebra_config = 42" in m.content for m in out.final_view)


def test_at_most_top_k_rounds_are_retrieved() -> None:
    out = run(recall_trace(), "hierarchical", 100_000, hot_rounds=2, top_k=1)
    notes = [c["note"] for c in compactions(out)]
    assert notes and all("retrieved=0" in n or "retrieved=1" in n for n in notes)


def test_no_eviction_below_the_trigger_ratio() -> None:
    out = run(recall_trace(), "hierarchical", 100_000, hot_rounds=2, trigger_ratio=0.9)
    assert compactions(out) == []
    assert not out.files


def test_parallel_calls_stay_paired_when_rounds_are_evicted_and_retrieved() -> None:
    out = run(recall_trace(calls=3), "hierarchical", 100_000, hot_rounds=2)
    assert compactions(out)
    assert out.result.pairing_violations == 0
    assert pairing_violations(out.final_view) == 0


def test_bm25_ranks_documents_with_rarer_matching_terms_higher() -> None:
    docs = [tokenize("alpha beta"), tokenize("alpha gamma"), tokenize("alpha alpha delta")]
    scores = BM25(docs, k1=1.5, b=0.75).scores(tokenize("gamma"))
    assert scores[1] > 0 and scores[0] == scores[2] == 0
    both = BM25(docs, k1=1.5, b=0.75).scores(tokenize("alpha gamma"))
    assert both[1] == max(both)


def test_tokenize_splits_paths_and_lowercases() -> None:
    assert tokenize("Deploy/Zebra.yaml: X_1") == ["deploy", "zebra", "yaml", "x_1"]


def test_retrieval_is_deterministic() -> None:
    a = run(recall_trace(), "hierarchical", 100_000, hot_rounds=3)
    b = run(recall_trace(), "hierarchical", 100_000, hot_rounds=3)
    assert a.events == b.events and a.final_view == b.final_view
