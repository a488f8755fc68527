"""``recorded``: the summary the real model wrote, where the replay compacts where it did.

A trace imported from a session that recorded its compactions with their summary text (Claude
Code ``compact_boundary`` + ``isCompactSummary``, Codex ``compacted``) holds them as
:class:`~ctxbench.trace.RecordedCompaction`. Bound to such a trace (the cell runner calls
:meth:`RecordedSummarizer.for_trace`), this summarizer answers a request made at the call of a
recorded compaction with that compaction's summary, byte for byte; any other request goes to
the ``fallback`` summarizer. Either way the text says where it came from, and the replay's
``summary`` event carries it (``source``: ``recorded`` or ``fallback:NAME``, with ``why``);
the row counts the recorded ones (``recorded_summaries``).
"""

from __future__ import annotations

from collections.abc import Mapping

from ctxbench.counting.base import TokenCounter
from ctxbench.engine.events import RECORDED_SOURCE
from ctxbench.summarizers.base import Summarizer, SummaryRequest, SummaryText
from ctxbench.trace import Trace


def request_call(key: str) -> int | None:
    """The model call a request key (``trace:call:layer:seed``) was made at."""
    parts = key.rsplit(":", 3)
    if len(parts) != 4 or not parts[1].isdigit():
        return None
    return int(parts[1])


class RecordedSummarizer(Summarizer):
    """The recorded summary at a recorded compaction's call, else ``fallback``'s."""

    name = "recorded"

    def __init__(self, fallback: str = "model_like") -> None:
        from ctxbench.errors import ConfigError
        from ctxbench.summarizers import build_summarizer

        if fallback == self.name:
            raise ConfigError(
                "the recorded summarizer cannot fall back to itself",
                key="fallback",
                hint="--summarizer-set fallback=model_like (or extractive, openai, ...)",
            )
        self.fallback = fallback
        self._fallback = build_summarizer(fallback)
        self._summaries: Mapping[int, str] = {}
        self._trace = ""

    def params(self) -> dict[str, object]:
        return {"fallback": self.fallback}

    def for_trace(self, trace: Trace) -> RecordedSummarizer:
        """This summarizer with ``trace``'s recorded summaries, by the call they were made at."""
        bound = RecordedSummarizer.__new__(RecordedSummarizer)
        bound.fallback, bound._fallback = self.fallback, self._fallback
        bound._summaries = {
            c.call: c.summary for c in reversed(trace.recorded_compactions) if c.summary
        }
        bound._trace = trace.id
        return bound

    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        call = request_call(request.key)
        recorded = self._summaries.get(call) if call is not None else None
        if recorded is not None:
            return SummaryText(recorded, RECORDED_SOURCE)
        why = (
            "the trace records no summary"
            if not self._summaries
            else f"no recorded compaction at call {call}"
        )
        text = self._fallback.summarize(request, counter)
        return SummaryText(text, f"fallback:{self.fallback}", why)
