"""``observation_masking``: old tool observations replaced by a placeholder, every call.

Sources:

- JetBrains, "The Complexity Trap" (arXiv 2508.21433; docs/sources.md): observation masking
  keeps the observations of the last M=10 turns and replaces older ones with a placeholder. The
  experiments run SWE-agent's ``LastNObservations`` history processor with ``n: 10``
  (``config/default_no_demo_N=1_M=10.yaml`` in the-complexity-trap repository);
  ``sweagent/agent/history_processors.py`` writes ``"Old environment output: (N lines omitted)"``
  (plus ``" (K images omitted)"``), never masks the first observation (SWE-agent's instance
  template) and, with ``polling`` p, masks up to ``(observations // p) * p - n``.
- OpenHands V0 ``ObservationMaskingCondenser``
  (``openhands/memory/condenser/impl/observation_masking_condenser.py``): an observation at
  event index ``i < len(view) - attention_window`` becomes ``AgentCondensationObservation
  ('<MASKED>')``; ``attention_window`` is 100 in ``ObservationMaskingCondenserConfig`` and 5 in
  the class signature.

The two disagree on the unit (turns, observations or events) and the placeholder, so ``unit``
selects the rule:

- ``"rounds"`` (default; the paper's "last M turns"): observations of all but the last ``keep``
  rounds (:func:`ctxbench.pairing.rounds`) are masked. In SWE-agent a turn has one observation, so
  this equals ``LastNObservations`` there; with parallel calls a round keeps all its results.
- ``"observations"``: SWE-agent's ``LastNObservations`` exactly: counts observation messages (the
  task, a user message in ctxbench, stands for the never-masked instance template), ``polling``.
- ``"events"``: OpenHands' ``attention_window``: one message = one event, system messages
  included in the index.

Observations are tool results and text-ReAct ``Observation:`` messages (which keep their prefix).
Only the result is masked; the call stays, so pairs stay whole. (OpenHands' placeholder event has
no tool-call metadata, so its ConversationMemory would then drop the unmatched call; ctxbench keeps
the pair instead.) Masking is recomputed from the full history before every call, as both systems
do; SWE-agent's ``always_keep/remove_output_for_tags`` are not modelled (traces carry no tags).

Knobs (defaults): unit "rounds", keep 10 (M / n / attention_window), polling 1 (observations
only), placeholder None = the unit's source text ("Old environment output: ({lines} lines
omitted)" for rounds and observations, "<MASKED>" for events; ``{lines}`` and ``{images}`` are
filled in).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ctxbench.engine.context import ReplayContext
from ctxbench.pairing import rounds
from ctxbench.strategies.layers import RebuiltFromHistory, is_tool_result, with_placeholder
from ctxbench.trace import Message

SWE_AGENT_PLACEHOLDER = "Old environment output: ({lines} lines omitted)"
OPENHANDS_PLACEHOLDER = "<MASKED>"


@dataclass(frozen=True)
class ObservationMaskingConfig:
    unit: Literal["rounds", "observations", "events"] = field(
        default="rounds", metadata={"help": "what 'keep' counts: rounds, observations or events"}
    )
    keep: int = field(default=10, metadata={"help": "M rounds / n observations / window events"})
    polling: int = field(default=1, metadata={"help": "SWE-agent polling (observations unit)"})
    placeholder: str | None = field(
        default=None, metadata={"help": "masked text; None = the unit's source placeholder"}
    )

    def __post_init__(self) -> None:
        if self.keep < 1:
            raise ValueError(f"keep must be >= 1, not {self.keep}")
        if self.polling < 1:
            raise ValueError(f"polling must be >= 1, not {self.polling}")


def masked_indices(messages: Sequence[Message], cfg: ObservationMaskingConfig) -> list[int]:
    """Indices of the observations the rule masks."""
    observations = [i for i, m in enumerate(messages) if is_tool_result(m)]
    if cfg.unit == "events":
        return [i for i in observations if i < len(messages) - cfg.keep]
    if cfg.unit == "observations":
        # SWE-agent's list starts with the instance template, which is never masked.
        total = len(observations) + 1
        last_removed = max(0, (total // cfg.polling) * cfg.polling - cfg.keep)
        return observations[: max(0, last_removed - 1)]
    segs = rounds(messages)
    old = segs[: max(0, len(segs) - cfg.keep)]
    return [i for seg in old for i in seg.indices if is_tool_result(messages[i])]


def mask(message: Message, placeholder: str) -> Message:
    """The placeholder text with the observation's line and media counts filled in."""
    images = len(message.media_parts)
    text = placeholder.replace("{lines}", str(len(message.content.splitlines())))
    text = text.replace("{images}", str(images))
    if placeholder == SWE_AGENT_PLACEHOLDER and images:
        text += f" ({images} images omitted)"
    return with_placeholder(message, text)


class ObservationMasking(RebuiltFromHistory[ObservationMaskingConfig]):
    name = "observation_masking"
    summary = "Keep the last M rounds' observations; older ones become a placeholder."
    source = (
        "JetBrains 'The Complexity Trap' (SWE-agent LastNObservations n=10); "
        "OpenHands V0 ObservationMaskingCondenser"
    )
    Config = ObservationMaskingConfig
    default_estimator = "chars4"
    reproduces = ("swe_agent",)
    reproduces_why = "SWE-agent's default history processor keeps the last observations"
    layer = "observation_masking"

    def placeholder(self) -> str:
        if self.config.placeholder is not None:
            return self.config.placeholder
        return OPENHANDS_PLACEHOLDER if self.config.unit == "events" else SWE_AGENT_PLACEHOLDER

    def rebuild(self, history: list[Message], ctx: ReplayContext) -> tuple[list[Message], str]:
        masked = masked_indices(history, self.config)
        out = list(history)
        for i in masked:
            out[i] = mask(history[i], self.placeholder())
        return out, f"masked={len(masked)}"
