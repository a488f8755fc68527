"""The report's sections about single runs: per-trace timelines, the facts runs lost, and
every row's spec with the commands that re-run it."""

from __future__ import annotations

import json
import shlex
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ctxbench.engine.result import RunResult
from ctxbench.report import figures
from ctxbench.report import table as tb
from ctxbench.report.decisions import run_thresholds
from ctxbench.report.leaderboard import compaction_layers
from ctxbench.report.lost import LostFact
from ctxbench.report.page import Block, Chart, Paragraph, Section, TableBlock
from ctxbench.report.results import RunEvents
from ctxbench.report.timeline import TimelineGroup, timeline

#: Lost facts listed at most (the most-lost first); the rest are counted.
MAX_LOST_FACTS = 300
#: Rows whose spec is printed at most (~1.5 KB each); every row stays in the results table.
MAX_SPEC_ROWS = 2000


# -- timelines ---------------------------------------------------------------------------------------


def timelines_section(
    groups: Sequence[TimelineGroup],
    events: Mapping[str, RunEvents],
    labels: Mapping[str, str],
    *,
    has_events: bool,
    picked: bool = False,
) -> Section:
    """``picked``: the recommended runs are the recommendation's pick (drawn as
    "recommended"), else the leaderboard's top stands in (drawn as "leaderboard top")."""
    which = (
        "the recommended one (the verdict's pick for that window and true counter)"
        if picked
        else "the top of that window's leaderboard (no recommendation was made)"
    )
    blocks: list[Block] = [
        Paragraph(
            "Usage per model call as a share of the provider limit (window minus reserved): "
            "the true count (solid) and the strategy's estimate (dashed), with ticks under the "
            "axis where a compaction layer acted and crosses where the provider rejected a "
            "prompt. Dotted lines mark the run's own warning and error thresholds (DB-GPT's 0.70 "
            "and 0.90 unless the run set others) and the limit; values above 1.6 are drawn at "
            "1.6."
        ),
        Paragraph(
            "Shown: the traces with the most model calls (up to 3), each at its smallest "
            "window and most used true counter, with the configurations one would deploy: "
            f"{which}, and each strategy at its default knobs. Every run is listed in the specs "
            "section.",
            "note",
        ),
    ]
    if not has_events:
        blocks.append(
            Paragraph("These results have no events file, so there are no timelines.", "empty")
        )
        return Section("timelines", "Per-trace timelines", tuple(blocks))
    shown = []
    for i, group in enumerate(groups):
        roles = group.roles or ("",) * len(group.rows)
        lines = [
            timeline(
                r.run_id,
                f"{labels[r.run_id]} ({role})" if role else labels[r.run_id],
                events.get(r.run_id, RunEvents()),
                run_thresholds(r),
            )
            for r, role in zip(group.rows, roles)
        ]
        title = f"trace {group.trace_id}, window {group.window:,}, true counter {group.counter}"
        blocks.append(
            Chart(
                f"timeline-{i}",
                figures.timeline_chart(title, lines, f"tl{i}"),
                f"{title}: runs " + ", ".join(r.run_id for r in group.rows) + ".",
            )
        )
        for r, role in zip(group.rows, roles):
            layers = compaction_layers(r)
            shown.append(
                [
                    tb.text(group.trace_id),
                    tb.number(group.window),
                    tb.text(role),
                    tb.text(labels[r.run_id]),
                    tb.code(r.run_id),
                    tb.count(r.calls),
                    tb.count(r.overflow_errors),
                    tb.count(r.failed_calls),
                    tb.text(", ".join(f"{k} x{v}" for k, v in layers.items()) or "none"),
                ]
            )
    if shown:
        blocks.append(
            TableBlock(
                tb.table(
                    "timeline-runs",
                    tb.columns(
                        "trace",
                        ("window", True),
                        "drawn as",
                        tb.Column("configuration", wide=True),
                        "run id",
                        ("calls", True),
                        ("overflow errors", True),
                        ("failed calls", True),
                        "compactions by layer",
                    ),
                    shown,
                    caption="Runs drawn above",
                )
            )
        )
    else:
        blocks.append(Paragraph("No run finished without error.", "empty"))
    return Section("timelines", "Per-trace timelines", tuple(blocks))


# -- lost facts --------------------------------------------------------------------------------------


def lost_section(
    facts: Sequence[LostFact], *, has_probes: bool, missing_traces: Sequence[str]
) -> Section:
    blocks: list[Block] = [
        Paragraph(
            "Every probe that at least one run lost (or found only in a superseded value), with "
            "where the fact entered the trace (message index and round, 0-based) and which "
            "configurations lost it (runs that lost it / runs that asked it)."
        )
    ]
    if missing_traces:
        blocks.append(
            Paragraph(
                "Questions and evidence are missing for traces that could not be loaded: "
                + "; ".join(missing_traces),
                "note",
            )
        )
    if not has_probes:
        blocks.append(Paragraph("No run scored any probe.", "empty"))
        return Section("lost-facts", "Lost facts", tuple(blocks))
    if not facts:
        blocks.append(Paragraph("No probe was lost by any run.", "empty"))
        return Section("lost-facts", "Lost facts", tuple(blocks))
    rows = []
    for f in facts[:MAX_LOST_FACTS]:
        where = ", ".join(
            f"msg {i}" + (f" (round {r})" if r is not None else "")
            for i, r in zip(f.evidence, f.evidence_rounds)
        )
        rows.append(
            [
                tb.text(f.trace_id),
                tb.code(f.probe_id),
                tb.text(f.kind),
                tb.text(f.question if f.question is not None else "(trace not loaded)"),
                tb.text(" | ".join(f.answers)),
                tb.text(where or "–"),
                tb.text(
                    "end"
                    if f.ask_at is None and f.question is not None
                    else ("–" if f.ask_at is None else f"call {f.ask_at}")
                ),
                tb.Cell(f"{f.lost} of {f.runs}", float(f.lost)),
                tb.count(f.stale),
                _lost_by(f.lost_by),
            ]
        )
    note = (
        f"Showing the {MAX_LOST_FACTS} most-lost of {len(facts)} probes."
        if len(facts) > MAX_LOST_FACTS
        else ""
    )
    blocks.append(
        TableBlock(
            tb.table(
                "lost-facts-table",
                tb.columns(
                    "trace",
                    "probe",
                    "kind",
                    "question",
                    "answers",
                    "introduced",
                    "asked at",
                    ("lost", True),
                    ("stale", True),
                    "lost by",
                ),
                rows,
                caption="Probes lost by at least one run",
                note=note,
            )
        )
    )
    return Section("lost-facts", "Lost facts", tuple(blocks))


def cliff_section(rows: Sequence[RunResult], run_labels: Mapping[str, str]) -> Section:
    """Per configuration (and window) and probe kind: how many runs fall past a cliff (the
    first compaction after which the kind's probes keep under half: the row's
    ``cliff_by_kind``, :mod:`ctxbench.probes.losses`), the earliest and the median."""
    falls: dict[tuple[str, str], list[int]] = {}
    runs: dict[str, int] = {}
    for row in rows:
        label = f"{run_labels.get(row.run_id, row.strategy)} @{row.window:,}"
        runs[label] = runs.get(label, 0) + 1
        try:
            cliffs = json.loads(row.cliff_by_kind or "{}")
        except ValueError:
            cliffs = {}
        for kind, k in cliffs.items() if isinstance(cliffs, dict) else ():
            falls.setdefault((label, str(kind)), []).append(int(k))
    blocks: list[Block] = [
        Paragraph(
            "The cliff of a probe kind in a run: the first compaction after which the kind's "
            "probes asked there keep under half (`ctxbench losses RESULTS` lists the probes "
            "and the calls). Kinds that never fall are left out."
        )
    ]
    if not falls:
        blocks.append(Paragraph("No run fell past a cliff.", "empty"))
        return Section("cliffs", "Cliffs by probe kind", tuple(blocks))
    table_rows = []
    for (label, kind), ks in sorted(falls.items()):
        table_rows.append(
            [
                tb.text(label),
                tb.text(kind),
                tb.Cell(f"{len(ks)} of {runs[label]}", float(len(ks))),
                tb.count(min(ks)),
                tb.number(statistics.median(ks), 1),
            ]
        )
    blocks.append(
        TableBlock(
            tb.table(
                "cliffs-table",
                tb.columns(
                    "configuration",
                    "kind",
                    ("runs falling", True),
                    ("earliest", True),
                    ("median", True),
                ),
                table_rows[:MAX_LOST_FACTS],
                caption="First compaction after which a kind keeps under half",
                note=f"Showing {MAX_LOST_FACTS} of {len(table_rows)}."
                if len(table_rows) > MAX_LOST_FACTS
                else "",
            )
        )
    )
    return Section("cliffs", "Cliffs by probe kind", tuple(blocks))


def _lost_by(lost_by: Sequence[tuple[str, int, int]]) -> tb.Cell:
    if not lost_by:
        return tb.text("–")
    lines = "\n".join(f"{label} ({n}/{of})" for label, n, of in lost_by)
    if len(lost_by) == 1:
        return tb.text(lines)
    return tb.details(f"{len(lost_by)} configurations", lines)


# -- specs -------------------------------------------------------------------------------------------


def rerun_command(spec: Mapping[str, Any], defaults: Mapping[str, Any] | None) -> str:
    """A ``ctxbench run`` command line that replays the cell (params equal to the strategy's
    defaults are left out: resolving the spec fills them in again, giving the same run id)."""
    source = str(spec.get("trace_source") or "TRACE_FILE")
    args = ["ctxbench", "run", source, "--strategy", str(spec.get("strategy", ""))]
    for name, value in sorted(dict(spec.get("params") or {}).items()):
        if defaults is not None and name in defaults and defaults[name] == value:
            continue
        text = (
            "none"
            if value is None
            else (json.dumps(value) if isinstance(value, (list, dict, bool)) else str(value))
        )
        args += ["--set", f"{name}={text}"]
    args += ["--window", str(spec.get("window")), "--reserved", str(spec.get("reserved"))]
    args += ["--counter", str(spec.get("counter")), "--estimator", str(spec.get("estimator"))]
    args += [
        "--summarizer",
        str(spec.get("summarizer")),
        "--error-style",
        str(spec.get("error_style", "openai")),
    ]
    if spec.get("seed"):
        args += ["--seed", str(spec["seed"])]
    if spec.get("mine_probes"):
        args.append("--mine-probes")
    return " ".join(shlex.quote(a) for a in args)


def specs_section(
    rows: Sequence[RunResult],
    labels: Mapping[str, str],
    defaults_of: Callable[[str], Mapping[str, Any] | None],
    results_path: str,
) -> Section:
    blocks: list[Block] = [
        Paragraph(
            "Every row with its exact spec. A spec's run_id is the hash of its canonical JSON "
            "and the trace's content hash, so replaying it gives the same row (apart from "
            "replay_seconds). Open a row's spec for two ways to re-run it: from the results "
            "directory, or from the trace file (knobs at their defaults are left out)."
        ),
    ]
    out = []
    for r in rows[:MAX_SPEC_ROWS]:
        try:
            spec = json.loads(r.spec or "{}")
        except json.JSONDecodeError:
            spec = {}
        body = f"ctxbench run --from-row {shlex.quote(results_path)} --run-id {r.run_id}\n"
        if spec:
            body += rerun_command(spec, defaults_of(str(spec.get("strategy", ""))))
        body += "\n\n" + json.dumps(spec, indent=2, sort_keys=True, ensure_ascii=False)
        out.append(
            [
                tb.code(r.run_id),
                tb.text(r.trace_id),
                tb.text(labels.get(r.run_id, r.strategy)),
                tb.number(r.window),
                tb.text(r.counter),
                tb.text(r.estimator),
                tb.number(r.retention),
                tb.text(r.error or ""),
                tb.details(f"spec and re-run commands of {r.run_id}", body.strip()),
            ]
        )
    blocks.append(
        TableBlock(
            tb.table(
                "specs-table",
                tb.columns(
                    tb.Column("run id", pin=True),
                    "trace",
                    tb.Column("configuration", wide=True),
                    ("window", True),
                    "counter",
                    "estimator",
                    ("retention", True),
                    "error",
                    tb.Column("re-run", below=True),
                ),
                out,
                caption=f"All {len(rows):,} rows"
                if len(rows) <= MAX_SPEC_ROWS
                else f"The first {MAX_SPEC_ROWS:,} of {len(rows):,} rows",
                note=""
                if len(rows) <= MAX_SPEC_ROWS
                else "Every row is in the results table; re-run any with --from-row and its run id.",
            )
        )
    )
    return Section("specs", "Specs of every row", tuple(blocks))
