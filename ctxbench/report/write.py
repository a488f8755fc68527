"""The edge of the report: read results, traces and tokenizers; render; write one HTML file.

Everything that touches the disk (or may) is here; the pages themselves are built by
:mod:`ctxbench.report.document` from what this module loads.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ctxbench.atomic_file import AtomicFile
from ctxbench.cell.spec import RunSpec
from ctxbench.cell.traces import AUTO, open_traces
from ctxbench.counting.base import TokenCounter
from ctxbench.engine import events as ev
from ctxbench.engine.result import RunResult
from ctxbench.errors import CtxbenchError
from ctxbench.report.document import has_usage
from ctxbench.report.leaderboard import ConfigKey
from ctxbench.report.page import Section
from ctxbench.report.reproduction import PairParity
from ctxbench.report.results import Results, load_results
from ctxbench.trace import Trace

#: The estimators measured next to the true counters (accuracy) and replayed (drift).
ESTIMATORS: tuple[str, ...] = ("chars4", "dbgpt", "agentscope", "hermes")
DEFAULT_WINDOWS: tuple[int, ...] = (32768, 128000)

#: Event types the release comparison never reads: skipped before parsing.
SKIPPED_BY_PARITY = (ev.SNAPSHOT, ev.PROBE, ev.SUMMARY, ev.RECORDED)

Progress = Callable[[str], None]
#: ``tick(done, total)``: how far the current stage is
Tick = Callable[[int, int], None]


@dataclass(frozen=True)
class Written:
    """What was written: the file, its size, how long it took, and notes for the user."""

    path: Path
    bytes: int
    seconds: float
    notes: tuple[str, ...] = ()


def _quiet(message: str) -> None:
    """The default progress callback: say nothing."""


def load_traces(rows: Iterable[RunResult]) -> tuple[dict[str, Trace], list[str]]:
    """Each row's trace, from its spec's ``trace_source``: ``(traces by id, notes on the ones
    that could not be loaded)``. A sweep's ``SOURCE#INDEX`` address loads one trace; a plain
    file (``ctxbench run``) is read once for all its traces. Hugging Face sources are not
    fetched (the report needs no network), and a trace whose content hash changed since the
    run is left out rather than misreported."""
    from ctxbench.cell.traces import iter_traces, load_trace, split_address

    wanted: dict[str, tuple[str, str, bool]] = {}
    for row in rows:
        trace_id = row.trace_id
        if trace_id in wanted:
            continue
        try:
            spec = json.loads(row.spec or "{}")
        except json.JSONDecodeError:
            spec = {}
        wanted[trace_id] = (
            str(spec.get("trace_source") or ""),
            str(spec.get("trace_hash") or ""),
            bool(spec.get("mine_probes")),
        )
    traces: dict[str, Trace] = {}
    missing: list[str] = []
    by_file: dict[str, list[str]] = {}
    for trace_id, (source, digest, _) in sorted(wanted.items()):
        if not source:
            missing.append(f"{trace_id} (the row records no trace_source)")
        elif source.startswith("hf:"):
            missing.append(f"{trace_id} (Hugging Face source {source} is not fetched)")
        elif split_address(source)[1] is None:
            by_file.setdefault(source, []).append(trace_id)
        else:
            try:
                traces[trace_id] = load_trace(source, trace_id, digest)
            except CtxbenchError as exc:
                missing.append(f"{trace_id} ({exc.message})")
    for source, ids in sorted(by_file.items()):
        try:
            found = {t.id: t for t in iter_traces(split_address(source)[0]) if t.id in ids}
        except CtxbenchError as exc:
            missing += [f"{trace_id} ({exc.message})" for trace_id in ids]
            continue
        for trace_id in ids:
            trace = found.get(trace_id)
            if trace is None:
                missing.append(f"{trace_id} (not in {source})")
            elif wanted[trace_id][1] and trace.content_hash != wanted[trace_id][1]:
                missing.append(f"{trace_id} (changed in {source} since the run)")
            else:
                traces[trace_id] = trace
    for trace_id, trace in traces.items():
        if wanted[trace_id][2] and not trace.probes:
            traces[trace_id] = _with_mined_probes(trace)
    return traces, missing


def _with_mined_probes(trace: Trace) -> Trace:
    import dataclasses
    import importlib.util

    if importlib.util.find_spec("ctxbench.probes.mining") is None:
        return trace
    from ctxbench.probes.mining import mine_probes

    return dataclasses.replace(trace, probes=tuple(mine_probes(trace)))


def load_counters(specs: Iterable[str]) -> tuple[list[TokenCounter], list[str]]:
    """The counters named (in order, once each) and notes on the ones that failed to load."""
    from ctxbench.counting import get_counter

    counters, missing = [], []
    for spec in dict.fromkeys(specs):
        try:
            counters.append(get_counter(spec))
        except CtxbenchError as exc:
            missing.append(f"{spec} ({exc.message})")
    return counters, missing


def compare_releases(results: Results) -> list[PairParity]:
    """Every reproduction / release pair of the results, compared from its recorded events
    (read in one pass, only the paired runs' events of the types the comparison reads)."""
    from ctxbench.report.reproduction import READ, compare_pair, release_pairs
    from ctxbench.results import ResultsDir

    pairs = release_pairs(results.rows)
    if not pairs or not results.has_events:
        return []
    wanted = {run for p in pairs for run in (p.reproduction_run, p.shipped_run)}
    events: dict[str, list[ev.Event]] = {run: [] for run in wanted}
    for run, e in ResultsDir(results.path).typed_events(skip=SKIPPED_BY_PARITY):
        if run in wanted and e.type in READ:
            events[run].append(e)
    return [compare_pair(p, events) for p in pairs]


def write_report(
    results_dir: str | Path,
    out: str | Path,
    *,
    prices_file: str | Path | None = None,
    title: str = "",
    progress: Progress = _quiet,
    tick: Tick | None = None,
    lead: Callable[[Results], Section] | None = None,
    picks: Callable[[Results], Mapping[tuple[int, str], ConfigKey]] | None = None,
) -> Written:
    """Write the HTML report of a results directory to ``out`` (``progress`` hears each
    stage, ``tick(done, total)`` how many of the stages are done; ``lead`` makes the section
    shown first and ``picks`` the config to deploy per window and true counter, drawn in the
    timelines: the command line passes the recommendation's, :class:`ctxbench.decisions.verdict.
    Verdict`; without ``picks`` the leaderboard's top stands in)."""
    from ctxbench.counting.content_class import classify
    from ctxbench.report.document import ReportInputs, report_page
    from ctxbench.report.prices import load_prices
    from ctxbench.report.render import render_page

    started = time.perf_counter()
    prices = load_prices(prices_file) if prices_file else None
    stages = iter(range(1, 5))

    def stage(name: str) -> None:
        progress(name)
        if tick is not None:
            tick(next(stages) - 1, 4)

    stage("reading results")
    results = load_results(results_dir)
    if not results.rows:
        raise CtxbenchError(
            "the results hold no rows", path=results_dir, hint="did the sweep run any cell?"
        )
    with AtomicFile(out, "wb") as page_file:  # opened before the work: an unwritable -o fails now
        stage(f"loading traces of {len(results.rows):,} rows")
        traces, missing_traces = load_traces(results.rows)
        counters, missing_counters = load_counters(r.counter for r in results.rows if r.counter)
        baselines, _ = (
            load_counters(ESTIMATORS) if any(map(has_usage, traces.values())) else ([], [])
        )
        release_parity = compare_releases(results)
        stage("analysing and drawing")
        page = report_page(
            ReportInputs(
                results=results,
                traces=traces,
                missing_traces=tuple(missing_traces),
                counters=tuple(counters),
                missing_counters=tuple(missing_counters),
                baselines=tuple(baselines),
                classify=classify,
                prices=prices,
                title=title,
                lead=lead,
                picks=picks,
                release_parity=tuple(release_parity),
            )
        )
        stage("writing the page")
        size = page_file.write(render_page(page).encode("utf-8"))
    if tick is not None:
        tick(4, 4)
    notes = tuple(f"trace not loaded: {m}" for m in missing_traces) + tuple(
        f"counter not loaded: {m}" for m in missing_counters
    )
    return Written(Path(out), size, round(time.perf_counter() - started, 3), notes)


def expand_auto(
    counters: Sequence[str], traces: Sequence[Trace], progress: Progress = _quiet
) -> list[str]:
    """``auto`` as the counters of the traces' recorded models (said through ``progress``),
    in first-seen order; other counters as given."""
    if "auto" not in counters:
        return list(counters)
    from ctxbench.counting.auto import choose_for

    picked = choose_for(traces)
    for choice in picked.values():
        progress(f"auto: {choice.describe()}")
    out: list[str] = []
    for spec in counters:
        out += [c.counter for c in picked.values()] if spec == "auto" else [spec]
    return list(dict.fromkeys(out))


def write_drift_report(
    trace_files: Sequence[str | Path],
    out: str | Path,
    *,
    counters: Sequence[str],
    windows: Sequence[int] = DEFAULT_WINDOWS,
    reserved: int = RunSpec.reserved,
    estimators: Sequence[str] = ESTIMATORS,
    format: str = AUTO,
    title: str = "",
    progress: Progress = _quiet,
    tick: Tick | None = None,
) -> Written:
    """Write the token-counting drift report of ``trace_files`` to ``out`` (``progress`` hears
    each stage, ``tick(done, total)`` each replay)."""
    from ctxbench.counting import get_counter
    from ctxbench.counting.content_class import classify
    from ctxbench.report.document import drift_page, replay_drift
    from ctxbench.report.render import render_page

    started = time.perf_counter()
    traces: list[Trace] = []
    sources: dict[str, str] = {}
    for path in trace_files:
        for trace in open_traces(path, format).traces():
            traces.append(trace)
            sources.setdefault(trace.id, str(path))
    if not traces:
        raise CtxbenchError("no traces in the given files", hint="check the files and --format")
    counters = expand_auto(counters, traces, progress)
    with AtomicFile(out, "wb") as page_file:  # opened before the work: an unwritable -o fails now
        true_counters = [get_counter(spec) for spec in dict.fromkeys(counters)]
        baselines = [get_counter(spec) for spec in dict.fromkeys(estimators)]
        progress(
            f"replaying {len(traces):,} traces x {len(windows)} windows x {len(true_counters)} counters x {len(baselines)} estimators"
        )
        drift = replay_drift(
            traces,
            list(dict.fromkeys(counters)),
            list(dict.fromkeys(estimators)),
            windows,
            reserved,
            sources=sources,
            progress=tick,
        )
        progress("counting and drawing")
        page = drift_page(
            traces,
            true_counters,
            baselines,
            drift,
            classify,
            sources=[str(p) for p in trace_files],
            reserved=reserved,
            title=title,
        )
        size = page_file.write(render_page(page).encode("utf-8"))
    return Written(Path(out), size, round(time.perf_counter() - started, 3))
