"""The report's section on summaries: which summarizer wrote each summarising configuration's
summaries, and, when the results hold the recorded agent's own summaries (``--summarizer
recorded``), the retention a stand-in gives beside the one the recorded summaries give.

Pure: rows and labels in, a section out (none when no row summarised).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ctxbench.engine.result import RunResult
from ctxbench.report import table as tb
from ctxbench.report.leaderboard import ConfigKey
from ctxbench.report.page import Block, Paragraph, Section, TableBlock

#: What each shipped summarizer's summaries are, as the report says it.
WHAT: Mapping[str, str] = {
    "extractive": "verbatim upper bound: facts copied from the trace up to the summary budget",
    "model_like": "like a model's: its length and the kinds of facts recorded summaries keep",
    "recorded": "the recorded agent's own summary at its compactions, a fallback elsewhere",
    "lossy": "the verbatim summary with a seeded drop rate",
    "openai": "an LLM through an OpenAI-compatible endpoint",
}


def summaries_section(rows: Sequence[RunResult], labels: Mapping[ConfigKey, str]) -> Section | None:
    """The section, or None when no row made a summary call."""
    summarising = [r for r in rows if r.summary_calls > 0]
    if not summarising:
        return None
    by_key: dict[ConfigKey, list[RunResult]] = {}
    for row in summarising:
        by_key.setdefault(ConfigKey.of_result(row), []).append(row)
    table_rows = []
    for key in sorted(by_key, key=lambda k: labels.get(k, k.strategy)):
        mine = by_key[key]
        table_rows.append(
            [
                tb.text(labels.get(key, key.strategy)),
                tb.code(key.summarizer),
                tb.text(WHAT.get(key.summarizer, "a plug-in")),
                tb.count(sum(r.summary_calls for r in mine)),
                tb.count(sum(r.recorded_summaries for r in mine)),
            ]
        )
    blocks: list[Block] = [
        Paragraph(
            "Which summarizer wrote the summaries of each configuration that summarised. "
            "extractive is the verbatim upper bound: it fills the strategy's summary budget "
            "with facts copied from the trace, so it keeps far more than a model does (on the "
            "recorded Claude Code compactions, 86% of mined probes against the real summaries' "
            "3%; see ctxbench summaries)."
        ),
        TableBlock(
            tb.table(
                "summarizers",
                tb.columns(
                    tb.Column("configuration", wide=True, pin=True),
                    "summarizer",
                    "its summaries are",
                    ("summaries", True, "summary calls over all its runs"),
                    ("recorded", True, "summaries that are the recorded agent's own text"),
                ),
                table_rows,
            )
        ),
    ]
    beside = _beside_recorded(summarising, labels)
    if beside:
        blocks.append(
            Paragraph(
                "Where the same configuration ran with the recorded summaries and with a "
                "stand-in, on the same traces and window: mean retention of each."
            )
        )
        blocks.append(
            TableBlock(
                tb.table(
                    "summarizers-vs-recorded",
                    tb.columns(
                        tb.Column("configuration", wide=True, pin=True),
                        ("window", True),
                        "stand-in",
                        ("retention, recorded summaries", True),
                        ("retention, stand-in", True),
                        ("traces", True),
                    ),
                    beside,
                )
            )
        )
    return Section("summaries", "Summaries", tuple(blocks))


def _beside_recorded(
    rows: Sequence[RunResult], labels: Mapping[ConfigKey, str]
) -> list[list[tb.Cell]]:
    """Per configuration and window run with ``recorded``: each other summarizer's retention
    on the traces both ran, beside the recorded summaries'."""
    cells: dict[tuple[ConfigKey, int, str], RunResult] = {}
    for row in rows:
        cells[(ConfigKey.of_result(row), row.window, row.trace_id)] = row
    out: list[list[tb.Cell]] = []
    recorded = sorted({(k, w) for (k, w, _) in cells if k.summarizer == "recorded"})
    for key, window in recorded:
        others = sorted(
            {k for (k, w, _) in cells if w == window and replace(k, summarizer="recorded") == key}
            - {key}
        )
        for other in others:
            pairs = [
                (cells[(key, window, t)].retention, cells[(other, window, t)].retention)
                for (k, w, t) in cells
                if k == key and w == window and (other, window, t) in cells
            ]
            pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
            if not pairs:
                continue
            out.append(
                [
                    tb.text(labels.get(key, key.strategy)),
                    tb.count(window),
                    tb.code(other.summarizer),
                    tb.number(statistics.fmean(a for a, _ in pairs if a is not None)),
                    tb.number(statistics.fmean(b for _, b in pairs if b is not None)),
                    tb.count(len(pairs)),
                ]
            )
    return out
