"""What a strategy asks of a summarizer, and the protocol every summarizer follows."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from ctxbench.counting.base import TokenCounter
from ctxbench.trace import Message


@dataclass(frozen=True)
class SummaryRequest:
    """One summarization call, as the strategy's real system would make it.

    ``prompt`` is the full text the real system sends to its LLM (its own summary prompt with
    the serialised history); LLM-backed summarizers send exactly this. ``messages`` and
    ``sections`` let offline summarizers lay out what the prompt asks for without an LLM.
    ``key`` is a stable identifier (trace, call, layer) for seeded randomness and caching.
    ``max_tokens`` is the summary's budget; ``send_max_tokens`` says whether the real system
    also caps the LLM response with it (Hermes deliberately sends no cap: its budget is only
    "Target ~N tokens" in the prompt), so offline summarizers always respect the budget and
    LLM-backed ones send it only when the real system does.
    """

    strategy: str
    layer: str
    prompt: str
    messages: tuple[Message, ...]
    sections: tuple[str, ...]
    max_tokens: int | None = None
    previous_summary: str | None = None
    key: str = ""
    send_max_tokens: bool = True


class Summarizer(ABC):
    """Turns a :class:`SummaryRequest` into summary text, or raises ``SummarizerError``."""

    name: str = "summarizer"

    @abstractmethod
    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        """The summary text; ``counter`` measures the token budget ``request.max_tokens``."""

    def params(self) -> dict[str, object]:
        """The parameters that rebuild this summarizer (for result rows)."""
        return {}
