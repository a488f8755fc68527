"""Hermes' knobs, its releases and the token limits it derives from the window
(``ContextCompressor.__init__``, ``_compute_threshold_tokens``, ``update_model``); how the
0.19.0 loop measures a request against them is :mod:`ctxbench.strategies.hermes.measure`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ctxbench.strategies.releases import check_release, release_field

MINIMUM_CONTEXT_LENGTH = 64_000


MIN_CTX_TRIGGER_RATIO = 0.85


SMALL_CTX_WINDOW_LIMIT = 512_000


SMALL_CTX_THRESHOLD_PERCENT = 0.75


SUMMARY_TOKENS_CEILING = 10_000


@dataclass(frozen=True)
class HermesRelease:
    """What one Hermes version does where they differ (docs/sources.md, line numbers of the wheel);
    the defaults are the later commit's rules."""

    name: str
    summary: str
    #: the agent loop's triggers: the rough ``len(str(msg))`` estimate before every API call,
    #: the provider's ``prompt_tokens`` after each tool-calling response, the deferral until
    #: real usage after a compaction (#36718), 3 attempts per user turn shared with overflow
    #: compaction, the anti-thrash guard on overflow too, the re-inserted user turn
    agent_loop: bool = False
    #: ``max_tokens`` None reserves nothing (else None = the run's --reserved)
    none_reserves_nothing: bool = False
    #: the 8-message cap on the prune floor (0.19.0: ``min(protect_tail_count, n)``)
    prune_floor_cap: int | None = 8
    #: the prune pressure pass inside the protected tail (#61932)
    pressure_pass: bool = True
    #: the 160K-char summary input cap
    summary_input_cap: bool = True
    #: the summary goes in as a user message when the window starts at 0
    user_summary_at_start: bool = True
    #: the compaction note appended to the system prompt (0.19.0: gateway ``/compress`` only)
    system_note: bool = True
    #: handoffs in the window are stripped and re-summarised, and dropped from the kept head
    #: and tail (0.19.0: only turns after the latest handoff in the window are summarised,
    #: without one the previous summary is discarded; head and tail are copied as they are)
    strip_handoffs: bool = True
    #: a tail cut at the latest user turn moves back to its assistant bridge (0.19.0: no)
    user_turn_bridge: bool = True
    #: the last-assistant tail anchor skips summaries (0.19.0: an assistant summary counts,
    #: ``_find_last_assistant_message_idx``)
    anchor_skips_summary: bool = True
    #: the summary budget counts the turns with the budget walk (0.19.0: the rough
    #: ``estimate_messages_tokens_rough``, ``_compute_summary_budget``)
    walk_summary_budget: bool = True
    #: ``content_len / 4`` rounded up in the budget walks (0.19.0: ``// 4``)
    ceil_rounding: bool = True
    #: model_thresholds, threshold_tokens_cap, proactive prune, min_tail_user_messages exist
    later_knobs: bool = True
    #: the summary prompt's own variant for a session without a user turn (0.19.0: one prompt
    #: for every session, context_compressor.py:2214-2330, whose preamble says "the user had
    #: credentials present")
    no_user_prompt: bool = True


#: The ``release`` knob's values: the wheel, and the later commit docs/sources.md names.
RELEASES: dict[str, HermesRelease] = {
    "0.19.0": HermesRelease(
        name="0.19.0",
        agent_loop=True,
        none_reserves_nothing=True,
        prune_floor_cap=None,
        pressure_pass=False,
        summary_input_cap=False,
        user_summary_at_start=False,
        system_note=False,
        strip_handoffs=False,
        user_turn_bridge=False,
        anchor_skips_summary=False,
        walk_summary_budget=False,
        ceil_rounding=False,
        later_knobs=False,
        no_user_prompt=False,
        summary=(
            "the hermes-agent==0.19.0 wheel with its agent loop: turn-prologue preflight, rough "
            "len(str(msg)) estimate of the API copies before each call and real prompt_tokens "
            "after each tool-calling response, deferral "
            "until real usage, 3 attempts per user turn shared with overflow, anti-thrash on "
            "overflow, re-inserted user turn, max_tokens None = no reservation, prune floor "
            "min(protect_last_n, n), no system-prompt note, floor rounding"
        ),
    ),
    "0000416b": HermesRelease(
        name="0000416b",
        summary=(
            "context_compressor.py at hermes-agent commit 0000416b34a3dad10c39446ab62c6626c609c30f "
            "(unreleased), compress() triggered by the estimate before each call: model_thresholds, "
            "threshold_tokens_cap, proactive prune, min_tail_user_messages, the pressure pass, "
            "the 8-message prune floor, the 160K summary-input cap, ceiling rounding"
        ),
    ),
}
LATEST_RELEASE: Literal["0.19.0"] = "0.19.0"


@dataclass(frozen=True)
class HermesConfig:
    release: Literal["0.19.0", "0000416b"] = release_field(LATEST_RELEASE, RELEASES)
    context_length: int | None = field(
        default=None, metadata={"help": "model window (None = the run window)"}
    )
    max_tokens: int | None = field(
        default=None,
        metadata={
            "help": "output reservation subtracted from the window (None: 0.19.0 none, "
            "0000416b the run's --reserved)"
        },
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
        check_release(self.release, RELEASES)
        if not self.rules.later_knobs:
            later = [
                name
                for name, unset in (
                    ("model_thresholds", not thresholds),
                    ("threshold_tokens_cap", self.threshold_tokens_cap is None),
                    ("proactive_prune_tokens", self.proactive_prune_tokens == 0),
                    ("min_tail_user_messages", self.min_tail_user_messages == 1),
                )
                if not unset
            ]
            if later:
                raise ValueError(
                    f"{', '.join(later)} not in hermes-agent {self.release}: "
                    "set release=0000416b to use them"
                )

    @property
    def rules(self) -> HermesRelease:
        return RELEASES[self.release]


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
    if config.max_tokens is not None:
        max_tokens = config.max_tokens
    else:
        max_tokens = 0 if config.rules.none_reserves_nothing else reserved
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
