"""Helpers for users' own test suites: replay a compactor and assert what it keeps per probe
kind (no sweep file, no baseline), or run a sweep and assert that nothing regressed.

    from ctxbench.testing import assert_retention, run_sweep, assert_no_regression

    def test_my_compactor_keeps_safety_rules():
        assert_retention(my_module.compact, scenarios=["coding_agent"], window=16000,
                         min_kind={"safety": 1.0, "constraint": 1.0})

    def test_compaction_keeps_facts(tmp_path):
        results = run_sweep("ctxbench/ci.toml", tmp_path / "results")
        assert_no_regression(results, "ctxbench/baseline.json", max_retention_drop=0.02)

All run in-process (no subprocess, no network). A failure lists each probe lost (id, kind, the
missing answer, the call where it was lost), as ``ctxbench losses`` and ``check`` print it.
The pytest plugin (:mod:`ctxbench.pytest_plugin`) gives ``assert_retention`` as the
``ctxbench_retention`` fixture.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxbench.gate.baseline import load_baseline, make_baseline
from ctxbench.gate.check import CheckReport, Tolerances, check
from ctxbench.gate.check_report import text_report

if TYPE_CHECKING:
    from ctxbench.engine.strategy import Strategy
    from ctxbench.gate.loss_table import RunLosses
    from ctxbench.probes.losses import Loss
    from ctxbench.probes.model import Probe
    from ctxbench.trace import Trace


def run_sweep(
    sweep_file: str | Path,
    out_dir: str | Path,
    *,
    workers: int = 1,
    resume: bool = False,
    summarizer_endpoint: Mapping[str, str] | None = None,
) -> Path:
    """Run a sweep TOML into ``out_dir`` (in this process, or ``workers`` processes). A file
    naming a summarizer endpoint or key variable runs only when ``summarizer_endpoint``
    gives the same (``{"base_url": ..., "api_key_env": ...}``, as ``sweep --summarizer-set``)."""
    from ctxbench.sweep import InlineExecutor, ProcessExecutor, load_sweep
    from ctxbench.sweep import run_sweep as execute
    from ctxbench.sweep.spec import with_endpoint

    executor: Any = InlineExecutor() if workers <= 1 else ProcessExecutor(workers)
    spec = with_endpoint(load_sweep(sweep_file), summarizer_endpoint or {}, source=Path(sweep_file))
    execute(spec, out_dir, executor=executor, resume=resume)
    return Path(out_dir)


def write_baseline(results_dir: str | Path, path: str | Path) -> Path:
    """Record ``results_dir`` as a baseline file, its events stored beside it (what
    ``ctxbench baseline`` writes), so a failure's ``ctxbench diff`` commands and lost probes
    work where the results are gone."""
    from ctxbench.gate.baseline import events_path, store_events
    from ctxbench.results import ResultsDir

    results = ResultsDir(results_dir).results()
    events = events_path(path)
    store_events(results_dir, [r.run_id for r in results], events)
    doc = make_baseline(results, str(results_dir), events.name)
    Path(path).write_text(doc.text(), encoding="utf-8")
    return Path(path)


def assert_no_regression(
    results_dir: str | Path,
    baseline: str | Path,
    *,
    max_retention_drop: float = 0.0,
    max_cost_increase: float = 0.0,
    fail_on_new_overflow: bool = False,
    allow_missing: bool = False,
    min_kind: Mapping[str, float] | None = None,
    max_kind_drop: Mapping[str, float] | None = None,
) -> CheckReport:
    """Raise AssertionError (with the regression table) when ``results_dir`` regressed; with
    ``min_kind`` / ``max_kind_drop`` (``{"safety": 1.0}``) per probe kind too, the message then
    naming each probe lost and the call."""
    from ctxbench.gate.baseline import events_path
    from ctxbench.gate.loss_table import EventsLosses, ResultsLosses
    from ctxbench.results import ResultsDir

    tol = Tolerances(
        max_retention_drop,
        max_cost_increase,
        fail_on_new_overflow,
        allow_missing,
        _limits(min_kind, max_kind_drop),
    )
    rows = ResultsDir(results_dir).results()
    doc = load_baseline(baseline)
    stored = events_path(baseline)
    before = EventsLosses(stored) if doc.events and stored.is_file() else None
    report = check(rows, doc, tol, losses=ResultsLosses(results_dir, rows), baseline_losses=before)
    report.results_dir = str(results_dir)  # the printed `ctxbench diff` commands name both
    report.baseline_results = str(stored) if before else doc.results_dir
    if report.failed:
        raise AssertionError("ctxbench regression\n" + text_report(report))
    return report


def _limits(
    min_kind: Mapping[str, float] | None, max_kind_drop: Mapping[str, float] | None = None
) -> Any:
    from ctxbench.probes.kind_limits import KindLimits

    return KindLimits(dict(min_kind or {}), dict(max_kind_drop or {}))


@dataclass(frozen=True)
class Retention:
    """What a compactor kept over the traces it was replayed on: each run's loss table."""

    runs: tuple[RunLosses, ...]

    def by_kind(self) -> dict[str, float]:
        """Per probe kind, the share kept over every run (probes pooled)."""
        kept: dict[str, list[int]] = {}
        for run in self.runs:
            for kind, (k, n) in run.kinds.items():
                counts = kept.setdefault(kind, [0, 0])
                counts[0] += k
                counts[1] += n
        return {k: round(v[0] / v[1], 4) for k, v in sorted(kept.items()) if v[1]}

    def lost(self, kind: str | None = None) -> list[Loss]:
        """The probes not kept (of one kind), run by run."""
        return [x for run in self.runs for x in run.losses if kind is None or x.kind == kind]

    def report(self) -> str:
        """The loss tables, as ``ctxbench losses`` prints them."""
        from ctxbench.gate.loss_table import render

        return render(self.runs)


def _strategy(strategy: Any, params: Mapping[str, Any]) -> Strategy:
    """A strategy instance from a name (``sliding_window``, ``mypkg.mod:compact``), a Strategy
    subclass, or a plain compactor (a function or a class with ``compact``)."""
    from ctxbench import config as configuration
    from ctxbench.engine.strategy import Strategy
    from ctxbench.strategies import build_strategy
    from ctxbench.strategies.function import adapt, is_plain_compactor

    if isinstance(strategy, str):
        return build_strategy(strategy, params)
    name = f"{getattr(strategy, '__module__', '?')}:{getattr(strategy, '__qualname__', strategy)}"
    if isinstance(strategy, type) and issubclass(strategy, Strategy):
        cls: type[Strategy] = strategy
    elif is_plain_compactor(strategy):
        cls = adapt(strategy, name)
    else:
        raise TypeError(
            f"{strategy!r} is not a strategy: give a name, a Strategy subclass, or a function "
            "compact(messages, budget, **knobs) on OpenAI-style message dicts"
        )
    return cls(configuration.build(cls.Config, dict(params), source=f"strategy {name}"))


def _traces(
    traces: Iterable[str | Path | Trace], scenarios: Iterable[str], seeds: Sequence[int]
) -> list[Trace]:
    from ctxbench.cell.traces import open_traces
    from ctxbench.synth import generate, load_scenario
    from ctxbench.trace import Trace

    out: list[Trace] = []
    for given in traces:
        out += [given] if isinstance(given, Trace) else list(open_traces(given).traces())
    for name in scenarios:
        spec = load_scenario(name)
        out += [trace for seed in seeds for trace in generate(spec, seed)]
    return out


def replay_retention(
    strategy: Any,
    traces: Iterable[str | Path | Trace] = (),
    *,
    scenarios: Iterable[str] = (),
    seeds: Sequence[int] = (0,),
    probes: str | Path | Mapping[str, Sequence[Probe]] | None = None,
    window: int = 32768,
    reserved: int = 0,
    counter: str = "tiktoken:o200k_base",
    params: Mapping[str, Any] | None = None,
) -> Retention:
    """Replay ``strategy`` (see :func:`assert_retention`) over ``traces`` (files in any format
    ctxbench reads, or Trace objects) and embedded ``scenarios`` (one trace per seed), with
    ``probes`` (a probe file, or probes by trace id) in place of a trace's own."""
    import dataclasses

    from ctxbench.counting import get_counter
    from ctxbench.engine.provider import SimulatedProvider
    from ctxbench.engine.replay import replay
    from ctxbench.gate.loss_table import run_losses
    from ctxbench.probes.losses import inferred, tracking_probes

    if isinstance(probes, (str, Path)):
        from ctxbench.probes.probe_file import load_probes

        probes = load_probes(probes)
    true_counter = get_counter(counter)
    runs = []
    for trace in _traces(traces, scenarios, seeds):
        if probes and trace.id in probes:
            trace = dataclasses.replace(trace, probes=tuple(probes[trace.id]))
        watched: tuple[Probe, ...] = ()
        for _ in range(2):  # again, watching call by call, when a loss's call was inferred
            instance = _strategy(strategy, params or {})
            output = replay(
                trace,
                instance,
                SimulatedProvider(window, reserved),
                true_counter=true_counter,
                estimator=get_counter(instance.default_estimator or counter),
                probes=(*trace.probes, *watched),
            )
            label = f"{instance.name} w={window}"
            run = run_losses(output.events, trace, run_id="", trace_id=trace.id, label=label)
            vague = inferred(output.events, run.losses)
            if watched or not vague:
                break
            probes_of = [p for p in trace.probes if p.id in vague]
            watched = tracking_probes(probes_of, trace.call_indices)
        runs.append(run)
    if not runs:
        raise ValueError("give traces or scenarios to replay the strategy on")
    return Retention(tuple(runs))


def retention_failures(retention: Retention, min_kind: Mapping[str, float]) -> list[str]:
    """Each kind under its floor, with every probe of that kind lost: id, the missing answer,
    the call where it was lost (and the trace)."""
    shares = retention.by_kind()
    lines = []
    for kind, floor in sorted(_limits(min_kind).min_retention.items()):
        if kind in shares and shares[kind] < floor - 1e-12:
            lines.append(f"{kind}: retention {shares[kind]:g} < {floor:g}")
            lines += [f"  {x.trace_id}: {x.line()}" for x in retention.lost(kind)]
    return lines


def assert_retention(
    strategy: Any,
    traces: Iterable[str | Path | Trace] = (),
    *,
    min_kind: Mapping[str, float] | None = None,
    **replay_options: Any,
) -> Retention:
    """Replay ``strategy`` (a registered name, ``module:attr``, a Strategy subclass, or a
    plain compactor ``compact(messages, budget, **knobs)``) and raise AssertionError when a
    probe kind keeps less than ``min_kind`` gives (default: every safety rule and constraint).
    The message lists each probe lost, its call and its missing answer. ``replay_options``:
    those of :func:`replay_retention` (``scenarios``, ``seeds``, ``window``, ``probes``...)."""
    limits = {"safety": 1.0, "constraint": 1.0} if min_kind is None else min_kind
    retention = replay_retention(strategy, traces, **replay_options)
    failures = retention_failures(retention, limits)
    if failures:
        raise AssertionError("ctxbench retention\n" + "\n".join(failures))
    return retention


__all__ = [
    "Retention",
    "assert_no_regression",
    "assert_retention",
    "replay_retention",
    "run_sweep",
    "write_baseline",
]
