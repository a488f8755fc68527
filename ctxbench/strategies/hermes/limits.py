"""Hermes' knobs and the token limits it derives from the window (``ContextCompressor.__init__``,
``_compute_threshold_tokens``, ``update_model``)."""

from __future__ import annotations

from dataclasses import dataclass, field

MINIMUM_CONTEXT_LENGTH = 64_000


MIN_CTX_TRIGGER_RATIO = 0.85


SMALL_CTX_WINDOW_LIMIT = 512_000


SMALL_CTX_THRESHOLD_PERCENT = 0.75


SUMMARY_TOKENS_CEILING = 10_000


@dataclass(frozen=True)
class HermesConfig:
    context_length: int | None = field(
        default=None, metadata={"help": "model window (None = the run window)"}
    )
    max_tokens: int | None = field(
        default=None,
        metadata={"help": "output reservation subtracted from the window (None = --reserved)"},
    )
    threshold_percent: float = field(
        default=0.50, metadata={"help": "compress at this share of the effective window"}
    )
    protect_first_n: int = field(
        default=3, metadata={"help": "messages after the system prompt kept (first compaction)"}
    )
    protect_last_n: int = field(default=20, metadata={"help": "tail message floor (capped at 8)"})
    summary_target_ratio: float = field(
        default=0.20, metadata={"help": "tail budget as a share of the threshold (0.10-0.80)"}
    )
    abort_on_summary_failure: bool = field(
        default=False, metadata={"help": "no change (instead of a fallback) when summarising fails"}
    )
    model: str = field(default="", metadata={"help": "model name matched by model_thresholds"})
    model_thresholds: dict[str, float] = field(
        default_factory=dict,
        metadata={"help": "threshold_percent by model substring (longest key wins)"},
    )
    threshold_tokens_cap: int | None = field(
        default=None, metadata={"help": "absolute cap on the threshold (tokens)"}
    )
    proactive_prune_tokens: int = field(
        default=0, metadata={"help": "prune-only pass from this many tokens (0 = off)"}
    )
    proactive_prune_min_result_chars: int = field(
        default=8000, metadata={"help": "proactive prune: results longer than this"}
    )
    proactive_prune_min_reclaim_tokens: int = field(
        default=4096, metadata={"help": "proactive prune commits only if it saves this much"}
    )
    min_tail_user_messages: int = field(
        default=1, metadata={"help": "user messages always kept in the tail"}
    )
    max_compression_attempts: int = field(
        default=3, metadata={"help": "compression passes per call (proactive and on overflow)"}
    )
    minimum_context_length: int = field(
        default=MINIMUM_CONTEXT_LENGTH, metadata={"help": "threshold floor (model_metadata.py)"}
    )

    def __post_init__(self) -> None:
        if not 0 < self.threshold_percent <= 1:
            raise ValueError(
                f"threshold_percent must be within (0, 1], not {self.threshold_percent}"
            )
        for name in (
            "protect_first_n",
            "protect_last_n",
            "proactive_prune_tokens",
            "proactive_prune_min_result_chars",
            "proactive_prune_min_reclaim_tokens",
            "min_tail_user_messages",
            "minimum_context_length",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, not {getattr(self, name)}")
        if self.max_compression_attempts < 1:
            raise ValueError(
                f"max_compression_attempts must be >= 1, not {self.max_compression_attempts}"
            )
        for name in ("context_length", "threshold_tokens_cap"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, not {value}")
        if self.max_tokens is not None and self.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, not {self.max_tokens}")
        thresholds: dict[str, float] = {}
        for key, value in dict(self.model_thresholds).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
                raise ValueError(f"model_thresholds[{key!r}] must be a number in (0, 1]")
            thresholds[str(key)] = float(value)
        object.__setattr__(self, "model_thresholds", thresholds)


@dataclass(frozen=True)
class Limits:
    """The token limits Hermes derives from the window (``__init__`` / ``update_model``)."""

    context_length: int
    max_tokens: int
    threshold_percent: float
    threshold_tokens: int
    tail_token_budget: int
    max_summary_tokens: int


def resolve_model_threshold(model: str, overrides: dict[str, float], default: float) -> float:
    """The threshold of the longest ``overrides`` key contained in ``model``."""
    best = max((k for k in overrides if k and k in model), key=len, default="")
    return overrides[best] if best else default


def compute_limits(config: HermesConfig, window: int, reserved: int) -> Limits:
    """Threshold, tail budget and summary ceiling for a window, as ``ContextCompressor`` does."""
    ctx_len = config.context_length or window
    max_tokens = reserved if config.max_tokens is None else config.max_tokens
    pct = resolve_model_threshold(config.model, config.model_thresholds, config.threshold_percent)
    if ctx_len < SMALL_CTX_WINDOW_LIMIT:
        pct = max(pct, SMALL_CTX_THRESHOLD_PERCENT)
    effective = ctx_len - max_tokens
    if effective <= 0:
        effective = ctx_len
    floored = max(int(effective * pct), config.minimum_context_length)
    if floored >= effective:
        threshold = max(1, min(int(effective * MIN_CTX_TRIGGER_RATIO), effective - 1))
    else:
        threshold = floored
    if config.threshold_tokens_cap is not None:
        threshold = min(threshold, min(config.threshold_tokens_cap, ctx_len))
    ratio = max(0.10, min(config.summary_target_ratio, 0.80))
    return Limits(
        context_length=ctx_len,
        max_tokens=max_tokens,
        threshold_percent=pct,
        threshold_tokens=threshold,
        tail_token_budget=int(threshold * ratio),
        max_summary_tokens=min(int(ctx_len * 0.05), SUMMARY_TOKENS_CEILING),
    )
