"""The ``dbgpt`` strategy's knobs and the releases its ``release`` knob names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ctxbench.strategies.releases import check_release, release_field

DEFAULT_MAX_CONTEXT_TOKENS = 120_000


@dataclass(frozen=True)
class DbgptRelease:
    """What one DB-GPT release does where releases differ (docs/sources.md, wheel line numbers)."""

    name: str
    #: the manager's result is kept in the prompt (False: the ReAct agent rebuilds its messages
    #: from memory at every call and compacts that fresh list, base_agent.py:1433-1451)
    persistent: bool
    #: ``manager.py:160`` reads the never-set ``self.model_name``: every Layer-3 attempt fails
    model_name_defect: bool
    #: Layer 4 catches the provider error (False: ``thinking()`` re-raises it as ``ValueError``)
    layer4: bool
    #: rounds end at tool results too (False: only at ``Observation:`` messages, compact.py:41-79)
    tool_rounds: bool
    #: a failed summary counts toward the breaker (False: the LLM client returns "" = success)
    summary_failure_counts: bool
    #: tool-result persistence scales to the window and keeps a per-turn budget
    persistence_budgets: bool
    #: snapshots as ``op_snapshots/<conv>/step_<global n>`` (False: ``<conv>/step_<n of the reply>``)
    design_snapshots: bool
    #: how Layer 1 ages rounds by default
    observation_age_from: Literal["view", "loop_counter"]
    #: the manager sees the messages as the ReAct agent stores them (native tool calls as
    #: Thought / Action / Action Input text, results as ``Observation:`` human turns, the
    #: task-progress block in the system prompt, the current question after the manager)
    react_memory: bool
    #: what differs, for ``ctxbench strategies``
    summary: str


#: The ``release`` knob's values. "design" is the design document (docs/sources.md).
RELEASES: dict[str, DbgptRelease] = {
    "0.8.2": DbgptRelease(
        name="0.8.2",
        persistent=False,
        model_name_defect=True,
        layer4=False,
        tool_rounds=False,
        summary_failure_counts=False,
        persistence_budgets=False,
        design_snapshots=False,
        observation_age_from="loop_counter",
        react_memory=True,
        summary=(
            "the dbgpt==0.8.2 wheel: Layer 3 always fails (model_name defect) and the breaker "
            "stops all compaction after max_compact_failures; Layer 4 unreachable; compaction "
            "recomputed on the fresh history at every call, as the ReAct agent stores it (text "
            "rounds, task progress; each result ends a round); "
            "persistence without window scaling or turn budget; step_NNN per reply"
        ),
    ),
    "design": DbgptRelease(
        name="design",
        persistent=True,
        model_name_defect=False,
        layer4=True,
        tool_rounds=True,
        summary_failure_counts=True,
        persistence_budgets=True,
        design_snapshots=True,
        observation_age_from="view",
        react_memory=False,
        summary=(
            "the documented design: four working layers, a persistent view, rounds at tool "
            "results too, window-scaled persistence with a per-turn budget"
        ),
    ),
}
LATEST_RELEASE: Literal["0.8.2"] = "0.8.2"
#: The ``[service.web.agent_context]`` keys the released ``ContextBudgetConfig`` takes
#: (budget.py:44-60); ``shipped:dbgpt@0.8.2`` has these knobs, derived from :class:`DbgptConfig`.
AGENT_CONTEXT_KEYS = (
    "max_context_tokens",
    "reserved_tokens",
    "warning_threshold",
    "error_threshold",
    "critical_threshold",
    "min_keep_recent_rounds",
    "max_observation_age_rounds",
    "truncated_observation_max_chars",
    "min_keep_tokens",
    "max_compact_failures",
)
#: ``truncated_observation_max_chars`` by entry point: the core ``ContextBudgetConfig`` (500,
#: budget.py:55) and the app/TOML path (200).
OBSERVATION_MAX_CHARS = {"core": 500, "app": 200}


@dataclass(frozen=True)
class DbgptConfig:
    release: Literal["0.8.2", "design"] = release_field(LATEST_RELEASE, RELEASES)
    max_context_tokens: int | None = field(
        default=None, metadata={"help": "model window (None = the provider window)"}
    )
    reserved_tokens: int | None = field(
        default=None, metadata={"help": "output reservation (None = the run's --reserved)"}
    )
    warning_threshold: float = 0.70
    error_threshold: float = 0.90
    critical_threshold: float = 0.95
    min_keep_recent_rounds: int = 3
    max_observation_age_rounds: int = 5
    truncated_observation_max_chars: int | None = field(
        default=None, metadata={"help": "None = the entry point's default (app 200, core 500)"}
    )
    entry_point: Literal["app", "core"] = field(
        default="app",
        metadata={"help": "'app' = the TOML/app path, 'core' = ContextBudgetConfig()"},
    )
    min_keep_tokens: int = 10_000
    max_compact_failures: int = 3
    observation_age_from: Literal["view", "loop_counter"] | None = field(
        default=None,
        metadata={
            "help": "None = the release's; 'loop_counter' = base_agent.py's current_retry_counter"
        },
    )
    patch_model_name: bool = field(
        default=False, metadata={"help": "0.8.2 with the manager.py:160 model_name defect fixed"}
    )
    snapshots: bool = True
    persist_tool_results: bool = True
    tool_result_threshold: int = 100_000
    turn_result_budget: int = 200_000
    preview_size: int = 1_500
    scale_to_window: bool | None = field(
        default=None, metadata={"help": "None = the release's (design: True, 0.8.2: False)"}
    )
    layer4_max_retries: int = 1

    def __post_init__(self) -> None:
        check_release(self.release, RELEASES)
        check_agent_context(self)
        for name in ("preview_size", "layer4_max_retries"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, not {getattr(self, name)}")

    @property
    def rules(self) -> DbgptRelease:
        return RELEASES[self.release]

    @property
    def observation_max_chars(self) -> int:
        if self.truncated_observation_max_chars is not None:
            return self.truncated_observation_max_chars
        return OBSERVATION_MAX_CHARS[self.entry_point]

    @property
    def age_from(self) -> str:
        return self.observation_age_from or self.rules.observation_age_from

    @property
    def scales_to_window(self) -> bool:
        if self.scale_to_window is not None:
            return self.scale_to_window
        return self.rules.persistence_budgets


def check_agent_context(cfg: object) -> None:
    """Validate the ``[service.web.agent_context]`` knobs (both strategies' configs)."""
    warning, error, critical = (
        getattr(cfg, f"{level}_threshold") for level in ("warning", "error", "critical")
    )
    if not 0 < warning <= error <= critical <= 1.0:
        raise ValueError(
            "thresholds must satisfy 0 < warning_threshold <= error_threshold <= "
            f"critical_threshold <= 1 (got {warning}, {error}, {critical})"
        )
    for name in AGENT_CONTEXT_KEYS[5:]:
        value = getattr(cfg, name)
        if value is not None and value < 0:
            raise ValueError(f"{name} must be >= 0, not {value}")
