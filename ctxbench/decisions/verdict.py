"""The verdict strip at the top of the report: the config to deploy per window and counter.

The data is :func:`ctxbench.decisions.recommend` with its default constraints; this module only
renders it, as self-contained HTML (every string escaped here, so the page may embed it as
is), with the same content ``ctxbench recommend`` prints in short.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from ctxbench.decisions.recommend import GroupVerdict, Recommendation, tokens_text
from ctxbench.report.leaderboard import ConfigKey
from ctxbench.report.page import Chart, Section
from ctxbench.report.results import Results

_STYLE = (
    "<style>.ctx-verdict{border:1px solid #c9d3e0;border-radius:6px;padding:.6em .9em;"
    "margin:.5em 0 1em;background:#f7f9fc;font-size:.92em}.ctx-verdict table{border-collapse:"
    "collapse;width:100%}.ctx-verdict th,.ctx-verdict td{text-align:left;padding:.25em .5em;"
    "border-bottom:1px solid #e1e6ee;vertical-align:top}.ctx-verdict .none{color:#a33}"
    ".ctx-verdict .muted{color:#667}</style>"
)


def verdict_of(results: Results) -> Recommendation:
    """The recommendation of a results directory, with the default constraints and the
    kind weights its sweep file set."""
    from ctxbench.decisions.outcomes import outcomes
    from ctxbench.decisions.recommend import recommend
    from ctxbench.probes.weights import sweep_weights

    weights = sweep_weights(results.sweep, source=results.path)
    return recommend(outcomes(results), weights=weights)


def verdict_section(results: Results, recommendation: Recommendation | None = None) -> Section:
    """The report's verdict section (the strip rides in a Chart block: trusted markup)."""
    caption = "The config to deploy per window and true counter: ctxbench recommend " + str(
        results.path
    )
    rec = recommendation if recommendation is not None else verdict_of(results)
    return Section("verdict", "Verdict", (Chart("verdict-strip", render_verdict(rec), caption),))


class Verdict:
    """What the command line hands the report: the verdict strip (``section``, for
    ``write_report(lead=...)``) and the picks it names (``picks``, drawn in the timelines),
    from one recommendation computed once per results."""

    def __init__(self) -> None:
        self._of: tuple[Results, Recommendation] | None = None

    def recommendation(self, results: Results) -> Recommendation:
        if self._of is None or self._of[0] is not results:
            self._of = (results, verdict_of(results))
        return self._of[1]

    def section(self, results: Results) -> Section:
        return verdict_section(results, self.recommendation(results))

    def report_args(self) -> dict[str, Any]:
        """``write_report(..., **Verdict().report_args())``: the strip and its picks."""
        return {"lead": self.section, "picks": self.picks}

    def picks(self, results: Results) -> dict[tuple[int, str], ConfigKey]:
        """(window, true counter) -> the config to deploy there (none qualified: absent)."""
        return {
            (g.window, g.counter): g.pick.key
            for g in self.recommendation(results).groups
            if g.pick is not None
        }


def _row(g: GroupVerdict) -> str:
    where = f"{g.window:,} · {escape(g.counter)}"
    if g.pick is None:
        return (
            f"<tr><td>{where}</td><td class='none' colspan='3'>no config qualifies: "
            f"{escape(g.why_none)}</td></tr>"
        )
    pick = g.pick
    retention = pick.retention.text() if math.isfinite(pick.retention.point) else "-"
    ties = (
        "; ".join(
            f"{escape(t.name)} ({'identical' if t.identical else t.retention_diff.text(signed=True)}"
            + f", {escape(tokens_text(t.cost_diff.point, signed=True))} tokens/trace"
            + (f"; ~{t.traces_needed:,} traces in all would separate" if t.traces_needed else "")
            + ")"
            for t in g.ties
        )
        or "none"
    )
    notes = []
    inert = [f"{k.strategy}.{k.knob}" for k in g.knobs if k.verdict == "inert"]
    if inert:
        notes.append("inert knobs: " + ", ".join(inert))
    if g.unkept_kinds:
        notes.append("no config keeps: " + ", ".join(g.unkept_kinds))
    extra = f"<div class='muted'>{escape('; '.join(notes))}</div>" if notes else ""
    return (
        f"<tr><td>{where}</td><td><b>{escape(pick.name)}</b>{extra}</td>"
        f"<td>retention {escape(retention)}<br>{escape(tokens_text(pick.cost.point))} tokens/trace"
        f", {pick.failed_calls} failed calls</td><td>{ties}</td></tr>"
    )


def render_verdict(rec: Recommendation) -> str:
    """The verdict strip as HTML: one row per window and true counter."""
    rows = "".join(_row(g) for g in rec.groups)
    head = (
        f"<p><b>Verdict</b> — {escape(rec.rule)}. Constraints: "
        f"{escape(rec.constraints.describe())}. Retention: {escape(rec.weights.describe())}. "
        f"{rec.level:.0%} paired bootstrap intervals over "
        f"traces ({rec.resamples:,} resamples, seed {rec.seed}).</p>"
    )
    notes = "".join(f"<p class='muted'>{escape(n)}</p>" for n in rec.notes)
    table = (
        "<table><thead><tr><th>window · true counter</th><th>deploy</th><th>its numbers</th>"
        f"<th>indistinguishable from it</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return f"{_STYLE}<div class='ctx-verdict' id='verdict'>{head}{table}{notes}</div>"
