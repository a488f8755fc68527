"""The edge around the pure engine: build a cell's parts from its RunSpec, time the replay,
and write the files (snapshots, offloads) it produced under the run's output directory."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from pathlib import Path

from ctxbench import config as configuration
from ctxbench.counting import get_counter
from ctxbench.engine.provider import SimulatedProvider, prompt_cache_for
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.engine.result import Identity, Prices, RunResult, result_from_events
from ctxbench.engine.spec import RunSpec, canonical_json
from ctxbench.errors import OutputError
from ctxbench.strategies import build_strategy, strategy_class
from ctxbench.summarizers import build_summarizer
from ctxbench.trace import Trace


def resolve_spec(spec: RunSpec) -> RunSpec:
    """Fill in every strategy knob (defaults included) and the strategy's own estimator, so
    equal cells get equal ids however they were written."""
    cls = strategy_class(spec.strategy)
    cfg = configuration.build(cls.Config, dict(spec.params), source=f"strategy {spec.strategy}")
    estimator = spec.estimator or cls.default_estimator
    return spec.with_(params=configuration.to_params(cfg), estimator=estimator)


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


def run_spec(spec: RunSpec, trace: Trace, *, prices: Prices | None = None) -> ReplayOutput:
    """Replay one resolved cell; the row's ``replay_seconds`` is the only clock reading."""
    strategy = build_strategy(spec.strategy, spec.params)
    true_counter = get_counter(spec.counter)
    estimator = get_counter(spec.estimator or type(strategy).default_estimator)
    summarizer = build_summarizer(spec.summarizer, spec.summarizer_params)
    provider = SimulatedProvider(
        spec.window, spec.reserved, spec.error_style, prompt_cache_for(true_counter.tokenizer_name)
    )
    probes = None
    if spec.mine_probes and not trace.probes:
        from ctxbench.probes.mining import mine_probes

        probes = mine_probes(trace)
    started = time.perf_counter()
    output = replay(
        trace,
        strategy,
        provider,
        true_counter=true_counter,
        estimator=estimator,
        summarizer=summarizer,
        probes=probes,
        seed=spec.seed,
        identity=identity_of(spec),
        prices=prices,
    )
    elapsed = round(time.perf_counter() - started, 6)
    result = result_from_events(
        output.events, identity_of(spec), prices=prices, replay_seconds=elapsed
    )
    return ReplayOutput(output.events, result, output.files, output.final_view)


def error_result(spec: RunSpec, error: BaseException) -> RunResult:
    """The row of a cell that raised: identity, zero metrics and the error text."""
    return result_from_events((), identity_of(spec), error=f"{type(error).__name__}: {error}")


def write_files(
    root: str | Path, files: Mapping[str, bytes], *, then: str = "run the command again"
) -> list[Path]:
    """Write a replay's files under ``root``. Every path is checked first: one that would
    escape ``root`` (or that the OS cannot name) is refused before anything is written. A
    failed write leaves no temporary file behind (its error's hint ends with ``then``)."""
    root_path = Path(root).resolve()
    targets = []
    for relative, content in sorted(files.items()):
        try:
            target = (root_path / relative).resolve()
        except (ValueError, OSError):  # a NUL byte, a symlink loop
            target = root_path
        if root_path not in target.parents:
            raise OutputError(
                f"refusing to write {relative!r} outside {root_path}",
                path=root_path,
                hint="file names come from the strategy; sanitise them with safe_component",
            )
        targets.append((target, content))
    for target, content in targets:
        tmp = target.with_name(f".{target.name}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(content)
            os.replace(tmp, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise OutputError.from_os_error(exc, target, then=then) from None
    return [target for target, _ in targets]
