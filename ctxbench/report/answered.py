"""Presence vs answers: where string presence overstates what a model recalls.

With ``--answerer``, each probe was scored twice at its ask point: string presence (an
accepted answer is in the prompt) and the model's answer to the question (it holds an accepted
answer). Per configuration and window, and per probe kind within them, the section gives both
shares, their paired gap (presence minus answers: how far presence overstates recall) with the
report's seeded bootstrap intervals over traces (over probes for a lone trace), and the probes
found in the prompt that the model still missed. A chart draws each configuration's two
shares with their intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ctxbench.bootstrap import Bootstrap, Interval
from ctxbench.engine.result import RunResult
from ctxbench.report import table as tb
from ctxbench.report.page import Block, Chart, Paragraph, Section, TableBlock
from ctxbench.report.results import AnswerOutcome
from ctxbench.report.svg import esc

ALL = "all kinds"


@dataclass(frozen=True)
class Calibration:
    """One group's presence and answers: shares with intervals, and counts."""

    label: str
    window: int
    kind: str
    traces: int
    probes: int
    presence: Interval
    answered: Interval
    gap: Interval
    #: probes in the prompt (in_context) that the model did not answer
    present_missed: int
    #: probes the model answered although the prompt did not hold them
    absent_answered: int


def calibrations(
    rows: Sequence[RunResult],
    answers_of: Callable[[str], Sequence[AnswerOutcome]],
    labels: Mapping[str, str],
) -> list[Calibration]:
    """Every (configuration, window) and kind with answered probes, sorted."""
    groups: dict[tuple[str, int], list[Sequence[AnswerOutcome]]] = {}
    for row in rows:
        answers = answers_of(row.run_id)
        if answers:
            groups.setdefault((labels.get(row.run_id, row.strategy), row.window), []).append(
                answers
            )
    out = []
    for (label, window), runs in sorted(groups.items()):
        kinds = sorted({a.kind for run in runs for a in run})
        for kind in (ALL, *kinds):
            picked = [[a for a in run if kind == ALL or a.kind == kind] for run in runs]
            picked = [run for run in picked if run]
            out.append(_calibration(label, window, kind, picked))
    return out


def _calibration(
    label: str, window: int, kind: str, runs: Sequence[Sequence[AnswerOutcome]]
) -> Calibration:
    boot = Bootstrap([len(run) for run in runs])
    kept = [
        np.array([[a.outcome == "in_context", a.verdict == "answered"] for a in run], dtype=float)
        for run in runs
    ]
    point, replicates = boot.retention(kept, [np.ones(len(run)) for run in runs])
    flat = [a for run in runs for a in run]
    return Calibration(
        label,
        window,
        kind,
        len(runs),
        len(flat),
        boot.interval(float(point[0]), replicates[:, 0]),
        boot.interval(float(point[1]), replicates[:, 1]),
        boot.difference(point, replicates, 0, 1),
        sum(a.outcome == "in_context" and a.verdict != "answered" for a in flat),
        sum(a.outcome != "in_context" and a.verdict == "answered" for a in flat),
    )


def answered_section(found: Sequence[Calibration]) -> Section | None:
    """The "presence vs answers" section (None: no model was asked)."""
    if not found:
        return None
    blocks: list[Block] = [
        Paragraph(
            "A model answered each probe's question after the prompt the replay scored "
            "(ctxbench run/sweep --answerer). String presence says the answer is in the "
            "prompt; the answer says whether the model used it. The gap is presence minus "
            "answers, paired per probe, with 95% bootstrap intervals over traces (over probes "
            "for a lone trace): a positive gap is how far presence overstates recall."
        ),
        Chart("answered-chart", _chart([c for c in found if c.kind == ALL]), _CAPTION),
    ]
    rows = [
        [
            tb.text(c.label),
            tb.number(c.window),
            tb.text(c.kind),
            tb.count(c.traces),
            tb.count(c.probes),
            _interval(c.presence),
            _interval(c.answered),
            _interval(c.gap, signed=True),
            tb.count(c.present_missed),
            tb.count(c.absent_answered),
        ]
        for c in found
    ]
    blocks.append(
        TableBlock(
            tb.table(
                "answered",
                tb.columns(
                    tb.Column("configuration", pin=True),
                    ("window", True),
                    "kind",
                    ("traces", True),
                    ("probes", True, "probes asked"),
                    ("presence", True, "share of probes whose answer is in the prompt"),
                    ("answered", True, "share of probes the model answered"),
                    ("gap", True, "presence minus answered, paired per probe"),
                    ("in prompt, missed", True, "probes present that the model did not answer"),
                    ("answered, not in prompt", True, "from a cited file, or the model's own"),
                ),
                rows,
                caption=f"{len(rows)} groups (configuration x window x probe kind)",
            )
        )
    )
    return Section("presence-vs-answers", "Presence vs answers", tuple(blocks))


_CAPTION = (
    "Per configuration and window: string presence (grey) and the model's answers (blue), "
    "with their 95% intervals; the gap between them is what presence overstates."
)


def _interval(value: Interval, *, signed: bool = False) -> tb.Cell:
    if np.isnan(value.low):
        return tb.number(value.point)
    return tb.Cell(value.text(signed=signed), value.point)


def _chart(found: Sequence[Calibration]) -> str:
    """Horizontal bars, two per group, on a 0..1 axis, with interval whiskers."""
    longest = max((len(f"{c.label} @{c.window:,}") for c in found), default=10)
    left, width, bar, gap = 16 + 7 * longest, 560, 11, 10
    height = 30 + len(found) * (2 * bar + gap) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {left + width + 70} {height}" '
        f'role="img" aria-label="presence vs answers" font-size="12">'
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + tick * width
        parts.append(
            f'<line x1="{x:.1f}" y1="20" x2="{x:.1f}" y2="{height - 20}" stroke="#ddd"/>'
            f'<text x="{x:.1f}" y="14" text-anchor="middle" fill="#555">{tick:.2f}</text>'
        )
    y = 28
    for c in found:
        name = esc(f"{c.label} @{c.window:,}")
        parts.append(
            f'<text x="{left - 8}" y="{y + bar + 4}" text-anchor="end" fill="#222">{name}</text>'
        )
        for value, colour in ((c.presence, "#9aa0a6"), (c.answered, "#1a73e8")):
            w = max(value.point, 0.0) * width
            parts.append(
                f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar - 2}" fill="{colour}">'
                f"<title>{esc(value.text())}</title></rect>"
            )
            if not np.isnan(value.low):
                lo, hi = left + value.low * width, left + value.high * width
                mid = y + (bar - 2) / 2
                parts.append(
                    f'<line x1="{lo:.1f}" y1="{mid:.1f}" x2="{hi:.1f}" y2="{mid:.1f}" '
                    'stroke="#222" stroke-width="1.5"/>'
                )
            parts.append(
                f'<text x="{left + width + 6}" y="{y + bar - 3}" fill="#222">'
                f"{value.point:.2f}</text>"
            )
            y += bar
        y += gap
    parts.append("</svg>")
    return "".join(parts)


__all__ = ["ALL", "Calibration", "answered_section", "calibrations"]
