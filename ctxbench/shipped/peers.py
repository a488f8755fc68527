"""The pip-installable peers through the same machinery: LangChain's ``trim_messages`` and
AutoGen's model contexts, the libraries' own code on the recorded history before each call.

Knobs are the library calls' own arguments (LangChain ``trim_messages``; AutoGen's context
constructors). What each driver runs and emulates is in ``ctxbench/shipped/drivers/``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ctxbench.shipped.releases import AUTOGEN_HEAD_TAIL, AUTOGEN_TOKEN_LIMITED, LANGCHAIN_CORE
from ctxbench.shipped.strategy import ShippedStrategy

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext

LangChainType = Literal["human", "ai", "tool", "system"]


@dataclass(frozen=True)
class TrimMessagesConfig:
    max_tokens: int | None = field(
        default=None, metadata={"help": "token budget (None = window - reserved)"}
    )
    strategy: Literal["last", "first"] = "last"
    include_system: bool = False
    start_on: tuple[LangChainType, ...] = ()
    end_on: tuple[LangChainType, ...] = ()
    allow_partial: bool = False

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be > 0, not {self.max_tokens}")


@dataclass(frozen=True)
class HeadAndTailConfig:
    head_size: int = field(default=3, metadata={"help": "first messages kept"})
    tail_size: int = field(default=20, metadata={"help": "last messages kept"})

    def __post_init__(self) -> None:
        if self.head_size < 0 or self.tail_size < 1:
            raise ValueError("head_size must be >= 0 and tail_size >= 1")


@dataclass(frozen=True)
class TokenLimitedConfig:
    token_limit: int | None = field(
        default=None, metadata={"help": "context tokens kept (None = the model window)"}
    )

    def __post_init__(self) -> None:
        if self.token_limit is not None and self.token_limit <= 0:
            raise ValueError("token_limit must be greater than 0.")


class ShippedLangChainTrim(ShippedStrategy):
    name = "shipped:langchain_trim@1.8.3"
    summary = "langchain-core 1.8.3's own trim_messages on the whole history before each call."
    source = "PyPI langchain-core==1.8.3 langchain_core/messages/utils.py"
    Config = TrimMessagesConfig
    default_estimator = "chars4"
    release = LANGCHAIN_CORE


class ShippedAutoGenHeadTail(ShippedStrategy):
    name = "shipped:autogen_head_tail@0.7.5"
    summary = "autogen-core 0.7.5's own HeadAndTailChatCompletionContext."
    source = "PyPI autogen-core==0.7.5 autogen_core/model_context/"
    Config = HeadAndTailConfig
    default_estimator = "chars4"
    release = AUTOGEN_HEAD_TAIL

    def driver_config(self, ctx: ReplayContext) -> dict[str, Any]:
        return {"context": "head_tail", **asdict(self.config)}


class ShippedAutoGenTokenLimited(ShippedStrategy):
    name = "shipped:autogen_token_limited@0.7.5"
    summary = "autogen-core 0.7.5's own TokenLimitedChatCompletionContext."
    source = "PyPI autogen-core==0.7.5 autogen_core/model_context/"
    Config = TokenLimitedConfig
    default_estimator = "chars4"
    release = AUTOGEN_TOKEN_LIMITED

    def driver_config(self, ctx: ReplayContext) -> dict[str, Any]:
        return {"context": "token_limited", **asdict(self.config)}

    def budget(self, ctx: ReplayContext) -> int:
        limit: int | None = self.config.token_limit
        return limit if limit is not None else ctx.window
