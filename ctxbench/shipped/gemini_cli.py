"""``shipped:gemini_cli@0.61.0``: Gemini CLI's chat compression as released on npm
(``@google/gemini-cli-core`` 0.61.0), run by a JS driver with the machine's node.

Knobs with 0.61.0's defaults (paths under the package's ``dist/src/``): compression when the
*last prompt's* token count reaches ``compression_threshold`` (0.5,
``context/chatCompressionService.js:22``) of the limit (``:210``), the newest 30% of the
history's characters kept (``:27``, not a knob in the release), two summary calls and a
summary that grows the prompt rejected (``:291``, ``:350``). The release's limit is
``tokenLimit(model)`` (``core/tokenLimits.js``: 1,048,576 for every Gemini model);
``token_limit`` (None: the run window) is the limit the replay compresses against, passed as the
settings' ``compressionThreshold`` fraction of the model's limit. ``overflow_check``: the
client's ``ContextWindowWillOverflow`` refusal (``core/client.js:468``). The tool-output masking
the client runs after it (``context/toolOutputMaskingService.js:49``; ``core/client.js:469``):
older tool outputs replaced by a preview once those before the latest turn pass
``masking_protection_tokens`` (50,000, ``:10``) with at least ``masking_min_prunable_tokens``
(30,000, ``:11``) to gain; in absolute tokens, as released, so it acts only on windows well
over 80k. What the driver runs
and emulates is in ``ctxbench/shipped/drivers/gemini_cli_driver.mjs``.

How it differs from the Claude Code-like rule (``claude_code``) and the other reproductions:
the trigger reads the *previous* prompt's reported token count (what the model was last sent,
before this turn's new messages) against half the limit, not an estimate of the prompt about
to be sent against nearly all of the window; the kept part is a share of the history's
characters (30%) cut at a user turn, not a token budget; the summary (a ``<state_snapshot>``)
is written twice (the second call re-checks the first) and inserted as a user turn followed
by a fixed model acknowledgement; a compression whose result counts more tokens than the last
prompt is thrown away and summarizing stops until one succeeds (only the tool-output
truncation runs); nothing reacts to a provider's overflow rejection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxbench.shipped.releases import GEMINI_CLI
from ctxbench.shipped.strategy import ShippedStrategy

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext


@dataclass(frozen=True)
class ChatCompressionConfig:
    compression_threshold: float = field(
        default=0.5, metadata={"help": "compress when the last prompt reaches this of the limit"}
    )
    token_limit: int | None = field(
        default=None, metadata={"help": "the limit compressed against (None = the run window)"}
    )
    model: str = field(
        default="gemini-2.5-pro", metadata={"help": "the model name the CLI's tables read"}
    )
    overflow_check: bool = field(
        default=True, metadata={"help": "refuse a request over the remaining tokens unsent"}
    )
    tool_output_masking: bool = field(
        default=True, metadata={"help": "mask older tool outputs (ToolOutputMaskingService)"}
    )
    masking_protection_tokens: int = field(
        default=50_000, metadata={"help": "newest tool-output tokens never masked"}
    )
    masking_min_prunable_tokens: int = field(
        default=30_000, metadata={"help": "mask only when at least this many tokens can go"}
    )
    masking_protect_latest_turn: bool = True

    def __post_init__(self) -> None:
        if not 0.0 < self.compression_threshold <= 1.0:
            raise ValueError(
                f"compression_threshold must be in (0, 1], not {self.compression_threshold}"
            )
        if self.token_limit is not None and self.token_limit <= 0:
            raise ValueError(f"token_limit must be > 0, not {self.token_limit}")
        if self.masking_protection_tokens < 0 or self.masking_min_prunable_tokens < 0:
            raise ValueError("the masking thresholds must be >= 0")


class ShippedGeminiCli(ShippedStrategy):
    name = "shipped:gemini_cli@0.61.0"
    summary = (
        "@google/gemini-cli-core 0.61.0's own ChatCompressionService (npm, node): at 0.5 of "
        "the limit by the LAST prompt's reported tokens, keeps the newest 30% of characters, "
        "two summary calls, rejects a summary that grows the prompt (unlike claude_code: no "
        "estimate of the next prompt, no reaction to an overflow)."
    )
    source = "npm @google/gemini-cli-core@0.61.0 dist/src/context/chatCompressionService.js"
    differs = (
        "unlike claude_code, the trigger is the previous prompt's reported tokens >= 0.5 x "
        "limit (not an estimate of the next prompt near the window); it keeps 30% of the "
        "characters, cut only before a user turn that is not a tool result (a single-task "
        "tool loop never compresses); summary written twice; a summary that grows the prompt "
        "is discarded and summarizing stops until one succeeds; no reaction to an overflow"
    )
    Config = ChatCompressionConfig
    default_estimator = "chars4"
    release = GEMINI_CLI

    def driver_config(self, ctx: ReplayContext) -> dict[str, Any]:
        c = self.config
        return {
            "compression_threshold": c.compression_threshold,
            "token_limit": c.token_limit,
            "model": c.model,
            "overflow_check": c.overflow_check,
            "tool_output_masking": c.tool_output_masking,
            "masking_protection_tokens": c.masking_protection_tokens,
            "masking_min_prunable_tokens": c.masking_min_prunable_tokens,
            "masking_protect_latest_turn": c.masking_protect_latest_turn,
        }

    def budget(self, ctx: ReplayContext) -> int:
        limit: int | None = self.config.token_limit
        return limit if limit is not None else ctx.window
