"""One cell, start to row: resolve its spec, build its parts (strategy, counters, summarizer,
provider), run the pure replay, time it, and compute its row once."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from ctxbench import config as configuration
from ctxbench.cell.spec import RunSpec, canonical_json
from ctxbench.collector import paced
from ctxbench.counting import counter_under
from ctxbench.counting.auto import rule_for, trace_model
from ctxbench.counting.base import TokenCounter
from ctxbench.engine.caches import Caches, using
from ctxbench.engine.provider import SimulatedProvider, prompt_cache_for
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.engine.result import Identity, Prices, RunResult, result_from_events
from ctxbench.engine.strategy import Strategy
from ctxbench.probes.model import Probe
from ctxbench.strategies import build_strategy, strategy_class
from ctxbench.summarizers import build_summarizer
from ctxbench.summarizers.base import Summarizer
from ctxbench.trace import Message, Trace
from ctxbench.validation import refuse_duplicate_call_ids

if TYPE_CHECKING:
    from ctxbench.answering.client import Answerer


def resolve_spec(spec: RunSpec) -> RunSpec:
    """Fill in every strategy knob (defaults included) and the strategy's own estimator, so
    equal cells get equal ids however they were written."""
    cls = strategy_class(spec.strategy)
    cfg = spec.config
    if not isinstance(cfg, cls.Config):
        cfg = configuration.build(cls.Config, dict(spec.params), source=f"strategy {spec.strategy}")
    estimator = spec.estimator or cls.default_estimator
    return spec.with_(
        params=configuration.to_params(cfg),
        config=cfg,
        estimator=estimator,
        plugin=plugins_of(spec),
    )


def plugins_of(spec: RunSpec) -> str:
    """The :attr:`RunSpec.plugin` of ``spec``: each plug-in it names (strategy, summarizer)
    with the version of its code, "" when it names none."""
    from ctxbench.registry import is_plugin_path, plugin_version
    from ctxbench.strategies import SHIPPED_STRATEGIES, STRATEGIES
    from ctxbench.summarizers import SUMMARIZERS

    out = []
    if is_plugin_path(spec.strategy, (STRATEGIES, SHIPPED_STRATEGIES)):
        out.append(f"{spec.strategy}@{plugin_version(spec.strategy)}")
    if is_plugin_path(spec.summarizer, (SUMMARIZERS,)):
        SUMMARIZERS.load(spec.summarizer)  # a summarizer a file names is imported only if allowed
        out.append(f"{spec.summarizer}@{plugin_version(spec.summarizer)}")
    return " ".join(out)


def identity_of(spec: RunSpec) -> Identity:
    return Identity(
        run_id=spec.run_id,
        trace_id=spec.trace_id,
        strategy=spec.strategy,
        params=canonical_json(dict(spec.params)),
        window=spec.window,
        reserved=spec.reserved,
        counter=spec.counter,
        estimator=spec.estimator,
        summarizer=spec.summarizer,
        spec=canonical_json(spec.to_dict()),
    )


@dataclass(frozen=True)
class Parts:
    """What one cell is built from: the strategy and its counters, summarizer and provider."""

    strategy: Strategy[Any]
    true_counter: TokenCounter
    estimator: TokenCounter
    summarizer: Summarizer | None
    provider: SimulatedProvider


def build_parts(spec: RunSpec, trace: Trace | None = None) -> Parts:
    """A fresh strategy instance and the counters, summarizer and provider ``spec`` names.
    Both counters count earlier reasoning under the spec's rule, else the rule the trace's
    billed usage supports, else the family's of the model ``trace`` recorded
    (:func:`ctxbench.counting.auto.rule_for`)."""
    cls = strategy_class(spec.strategy)
    if isinstance(spec.config, cls.Config):  # resolve_spec built it: carried, not rebuilt
        strategy: Strategy[Any] = cls(spec.config)
    else:
        strategy = build_strategy(spec.strategy, spec.params)
    model = trace_model(trace) if trace is not None else None
    estimator = spec.estimator or type(strategy).default_estimator
    rule = rule_for(spec.reasoning, model, spec.counter, trace, spec.trace_hash)
    true_counter = counter_under(spec.counter, rule)
    # the provider's rule holds for whatever counts its prompts (a profile keeps its own)
    estimator_rule = rule if rule is not None else rule_for(spec.reasoning, model, estimator)
    if estimator.startswith("profile:"):
        estimator_rule = None
    summarizer = build_summarizer(spec.summarizer, spec.summarizer_params)
    bind = getattr(summarizer, "for_trace", None)  # `recorded`: the trace's own summaries
    if trace is not None and callable(bind):
        summarizer = bind(trace)
    return Parts(
        strategy,
        true_counter,
        counter_under(estimator, estimator_rule),
        summarizer,
        SimulatedProvider(
            spec.window,
            spec.reserved,
            spec.error_style,
            prompt_cache_for(true_counter.tokenizer_name),
        ),
    )


def run_spec(
    spec: RunSpec,
    trace: Trace,
    *,
    prices: Prices | None = None,
    mined: Callable[[], Sequence[Probe]] | None = None,
    on_call: Callable[[int, int], None] | None = None,
    answerer: Answerer | None = None,
    on_ask: Callable[[int, int], None] | None = None,
    caches: Caches | None = None,
    keep_files: KeepFiles = "all",
) -> ReplayOutput:
    """Replay one resolved cell; the row's ``replay_seconds`` is the only clock reading, and
    the row is computed once, after it. A trace reusing a tool call id is refused. ``mined``
    gives the trace's mined probes when the spec asks for them (a sweep mines a trace once
    for all its cells: mining a 300-round trace takes seconds). ``on_call(done, total)`` hears
    each model call (the CLI's progress bar). A spec naming an ``answerer`` model asks
    ``answerer`` (the client serving it) about the prompts the replay scored, after the replay
    (:mod:`ctxbench.answering`); ``on_ask(done, total)`` hears each answer. ``caches`` are
    what the cell shares with the other cells of a sweep (:mod:`ctxbench.engine.caches`): the
    cell is built and replayed under them. ``keep_files``: the files the caller keeps of the
    output (:func:`kept_files`); short of ``all``, a file no probe reads is kept by path and
    hash alone (``ReplayOutput.written``): a cited file is one a probe read."""
    refuse_duplicate_call_ids(trace, source=spec.trace_source)
    if spec.answerer:
        _check_answerer(spec, answerer)
    with using(caches):
        parts = build_parts(spec, trace)
    probes = None
    if spec.mine_probes and not trace.probes:
        probes = (mined or (lambda: mined_probes(trace)))()
    prompts: dict[int, tuple[Message, ...]] = {}
    started = time.perf_counter()
    with paced(), using(caches):
        output = replay(
            trace,
            parts.strategy,
            parts.provider,
            true_counter=parts.true_counter,
            estimator=parts.estimator,
            summarizer=parts.summarizer,
            probes=probes,
            seed=spec.seed,
            identity=identity_of(spec),
            prices=prices,
            on_call=on_call,
            on_prompt=prompts.__setitem__ if spec.answerer else None,
            caches=caches,
            file_contents=keep_files == "all",
        )
    seconds = round(time.perf_counter() - started, 6)
    if spec.answerer and answerer is not None:
        from ctxbench.answering.asking import answer_events

        asked = answer_events(
            trace,
            tuple(trace.probes if probes is None else probes),
            prompts,
            output.events,
            answerer,
            next_action=spec.next_action,
            every=spec.next_action_every,
            on_ask=on_ask,
        )
        output = replace(output, events=output.events + tuple(asked))
    return replace(output, replay_seconds=seconds)


def _check_answerer(spec: RunSpec, answerer: Answerer | None) -> None:
    """A cell asking a model needs the client serving that model."""
    from ctxbench.errors import ConfigError

    if answerer is None or answerer.settings.model != spec.answerer:
        raise ConfigError(
            f"the cell asks the model {spec.answerer!r}, but "
            + (
                "no answerer was given"
                if answerer is None
                else f"the answerer serves {answerer.settings.model!r}"
            ),
            key="answerer",
            hint=f"give --answerer {spec.answerer}@URL (or --answerer-offline to answer "
            "from the cache only)",
        )


def mined_probes(trace: Trace) -> tuple[Probe, ...]:
    """The probes mined from ``trace`` (for a spec with ``mine_probes``)."""
    from ctxbench.probes.mining import mine_probes

    return tuple(mine_probes(trace))


def error_result(spec: RunSpec, error: BaseException) -> RunResult:
    """The row of a cell that raised: identity, zero metrics and the error text (one line
    for a plug-in's fault: its frames go to :func:`fault_report`)."""
    from ctxbench.errors import PluginError

    text = error.message if isinstance(error, PluginError) else str(error)
    return result_from_events((), identity_of(spec), error=f"{type(error).__name__}: {text}")


#: The file, in a failed cell's folder of a results directory, that :func:`fault_report` writes.
TRACEBACK_FILE = "traceback.txt"


def fault_report(spec: RunSpec, error: BaseException) -> str:
    """What a failed cell leaves beside its row: the error, the frames that raised it (a
    plug-in's own frames for a plug-in's fault, the whole traceback otherwise) and the
    command that runs the cell again alone."""
    import traceback

    from ctxbench.errors import CtxbenchError, PluginError

    if isinstance(error, PluginError):
        frames = error.plugin_traceback
        head = error.message
    elif isinstance(error, CtxbenchError):
        frames, head = "", str(error)
    else:
        frames = "".join(traceback.format_exception(error)).rstrip("\n")
        head = f"{type(error).__name__}: {error}"
    return (
        f"run {spec.run_id}: {head}\n"
        + (f"\n{frames}\n" if frames else "")
        + f"\nrun it again alone (add --events FILE to see every event):\n"
        f"  ctxbench run --from-row RESULTS_DIR --run-id {spec.run_id}"
        + (" --allow-plugins" if spec.plugin else "")
        + "\n"
    )


#: What a sweep keeps of the snapshot / offload files its strategies write: every file, only
#: the files a probe's evidence was found in (so a ``via_reference`` outcome stays verifiable),
#: or none (probes are scored during the replay either way).
KeepFiles = Literal["all", "cited", "none"]


def kept_files(output: ReplayOutput, keep: KeepFiles) -> dict[str, bytes]:
    """The files of ``output`` that ``keep`` keeps."""
    if keep == "all":
        return dict(output.files)
    if keep == "cited":
        return {path: output.files[path] for path in sorted(output.cited)}
    return {}
