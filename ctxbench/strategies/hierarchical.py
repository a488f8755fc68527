"""``hierarchical``: hot rounds in the prompt, older rounds in a cold store, retrieved by BM25.

Source: the "hierarchical memory" pattern of the ContextManager design article (docs/sources.md:
"hot data stays in history, cold data moves to a vector store ... can cause 'false amnesia' if
retrieval fails"). docs/sources.md finds no public system that combines these pieces, so this is
**ctxbench's own synthesis**, not a reproduction: it follows the article's retention order (system >
original task > last-N rounds > retrieved older rounds) and replaces the vector store with a
small deterministic BM25 so replays need no embedding model.

Rules:

- Trigger: the strategy's estimate reaches ``trigger_ratio x budget`` (0 = before every call).
- Eviction: everything but the last ``hot_rounds`` rounds (:func:`ctxbench.pairing.rounds`, so tool
  pairs stay whole) moves to the cold store, kept in the strategy's state and written to
  ``cold_store/<trace>/round_NNNN.json`` for the record. With ``pin_first_user`` the first user
  message (the original task) never leaves the prompt.
- Retrieval (before every call once the store holds anything): the query is the text of the
  latest user message and the latest assistant message in the prompt; cold rounds are ranked by
  Okapi BM25 (``k1``, ``b``) over lower-cased word tokens; the ``top_k`` best with a positive
  score are taken, best first, while they fit in ``min(retrieval_tokens, budget - prompt)``; they
  go back whole, in their original order, between the pinned task and the hot rounds. Ties rank
  the more recent round first.

Knobs (defaults): hot_rounds 8, retrieval_tokens 2000, top_k 3, trigger_ratio 0.0,
pin_first_user True, k1 1.5, b 0.75.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxbench.engine.context import ReplayContext, safe_component
from ctxbench.pairing import rounds
from ctxbench.strategies.base import Strategy
from ctxbench.strategies.layers import CONTEXT_MANAGER_ARTICLE
from ctxbench.trace import Message, message_search_text

_WORD = re.compile(r"[a-z0-9_]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (letters, digits, underscore); paths split at separators."""
    return _WORD.findall(text.lower())


class BM25:
    """Okapi BM25 over a fixed list of documents (token lists). Deterministic, no dependencies."""

    def __init__(self, documents: Sequence[Sequence[str]], *, k1: float, b: float) -> None:
        self.k1 = k1
        self.b = b
        self.tfs = [Counter(doc) for doc in documents]
        self.lengths = [len(doc) for doc in documents]
        n = len(documents)
        self.avg_length = sum(self.lengths) / n if n else 0.0
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        self.idf = {t: math.log((n - d + 0.5) / (d + 0.5) + 1.0) for t, d in df.items()}

    def scores(self, query: Sequence[str]) -> list[float]:
        terms = sorted(set(query))
        out = []
        for tf, length in zip(self.tfs, self.lengths):
            norm = (
                self.k1 * (1 - self.b + self.b * length / self.avg_length) if self.avg_length else 0
            )
            score = 0.0
            for t in terms:
                f = tf.get(t, 0)
                if f:
                    score += self.idf[t] * f * (self.k1 + 1) / (f + norm)
            out.append(score)
        return out


@dataclass(frozen=True)
class ColdRound:
    """A round evicted from the prompt: eviction order, its messages, and its BM25 terms."""

    order: int
    messages: tuple[Message, ...]
    terms: tuple[str, ...]


@dataclass(frozen=True)
class HierarchicalConfig:
    hot_rounds: int = field(default=8, metadata={"help": "recent whole rounds kept in the prompt"})
    retrieval_tokens: int = field(
        default=2000, metadata={"help": "token allowance for retrieved cold rounds"}
    )
    top_k: int = field(default=3, metadata={"help": "most cold rounds retrieved per call"})
    trigger_ratio: float = field(
        default=0.0, metadata={"help": "evict only at this fraction of the budget (0 = always)"}
    )
    pin_first_user: bool = field(
        default=True, metadata={"help": "keep the first user message (the task) in the prompt"}
    )
    k1: float = field(default=1.5, metadata={"help": "BM25 term-frequency saturation"})
    b: float = field(default=0.75, metadata={"help": "BM25 length normalisation"})

    def __post_init__(self) -> None:
        if self.hot_rounds < 1:
            raise ValueError(f"hot_rounds must be >= 1, not {self.hot_rounds}")
        if self.retrieval_tokens < 0 or self.top_k < 0:
            raise ValueError("retrieval_tokens and top_k must be >= 0")
        if not 0.0 <= self.trigger_ratio <= 1.0:
            raise ValueError(f"trigger_ratio must be within [0, 1], not {self.trigger_ratio}")
        if self.k1 < 0 or not 0.0 <= self.b <= 1.0:
            raise ValueError(f"need k1 >= 0 and 0 <= b <= 1 (got k1={self.k1}, b={self.b})")


def latest_query(messages: Sequence[Message]) -> str:
    """The text of the latest user message and the latest assistant message."""
    user = next((m for m in reversed(messages) if m.role == "user"), None)
    assistant = next((m for m in reversed(messages) if m.role == "assistant"), None)
    return "\n".join(message_search_text(m) for m in (user, assistant) if m is not None)


class Hierarchical(Strategy[HierarchicalConfig]):
    name = "hierarchical"
    summary = "ctxbench synthesis: hot rounds in the prompt, cold rounds retrieved by BM25."
    source = f"{CONTEXT_MANAGER_ARTICLE}, 'Hierarchical memory'; ctxbench synthesis"
    Config = HierarchicalConfig
    default_estimator = "chars4"

    def __init__(self, config: HierarchicalConfig | None = None) -> None:
        super().__init__(config)
        self.cold: list[ColdRound] = []
        self._retrieved: set[int] = set()  # ids of the cold messages currently in the prompt
        self._evicted = 0

    def before_call(self, ctx: ReplayContext) -> None:
        cfg = self.config
        base = [m for m in ctx.view.messages if id(m) not in self._retrieved]
        system = [m for m in base if m.role == "system"]
        rest = [m for m in base if m.role != "system"]
        pinned: list[Message] = []
        if cfg.pin_first_user:
            first = next((m for m in rest if m.role == "user" and not m.is_observation), None)
            if first is not None:
                pinned = [first]
                rest = [m for m in rest if m is not first]
        budget = self.budget(ctx)
        evicted = 0
        if not cfg.trigger_ratio or ctx.view.estimated_tokens >= cfg.trigger_ratio * budget:
            segs = rounds(rest)
            if len(segs) > cfg.hot_rounds:
                cut = segs[len(segs) - cfg.hot_rounds].first
                for seg in segs[: len(segs) - cfg.hot_rounds]:
                    self._evict(tuple(rest[i] for i in seg.indices), ctx)
                    evicted += 1
                rest = rest[cut:]
        if not self.cold:  # nothing evicted yet: the prompt is the recorded history
            return
        kept = [*system, *pinned, *rest]
        used = ctx.view.est_overhead + sum(ctx.estimator.count_message(m) for m in kept)
        allowance = min(cfg.retrieval_tokens, max(0, budget - used))
        chosen = self.retrieve(latest_query(kept), allowance, ctx)
        retrieved = [m for cold in chosen for m in cold.messages]
        self._retrieved = {id(m) for m in retrieved}
        out = [*system, *pinned, *retrieved, *rest]
        if not ctx.view.shows(out):
            note = f"evicted={evicted} retrieved={len(chosen)} cold={len(self.cold)}"
            ctx.apply("hierarchical", out, note=note)

    def _evict(self, messages: tuple[Message, ...], ctx: ReplayContext) -> None:
        text = "\n".join(message_search_text(m) for m in messages)
        self.cold.append(ColdRound(self._evicted, messages, tuple(tokenize(text))))
        ctx.write_json(
            f"cold_store/{safe_component(ctx.trace_id)}/round_{self._evicted:04d}.json",
            {"round": self._evicted, "messages": [m.to_dict() for m in messages]},
        )
        self._evicted += 1

    def retrieve(self, query: str, allowance: int, ctx: ReplayContext) -> list[ColdRound]:
        """The best-matching cold rounds that fit ``allowance`` tokens, in original order."""
        terms = tokenize(query)
        if not self.cold or not terms or allowance <= 0 or self.config.top_k == 0:
            return []
        scores = BM25([c.terms for c in self.cold], k1=self.config.k1, b=self.config.b).scores(
            terms
        )
        ranked = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], -i))[
            : self.config.top_k
        ]
        chosen: list[int] = []
        used = 0
        for i in ranked:
            cost = sum(ctx.estimator.count_message(m) for m in self.cold[i].messages)
            if used + cost <= allowance:
                chosen.append(i)
                used += cost
        return [self.cold[i] for i in sorted(chosen)]
