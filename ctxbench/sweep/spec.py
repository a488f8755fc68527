"""SweepSpec: the axes of a sweep, read from a TOML file, and their expansion into RunSpecs.

A sweep file names where the traces come from and which configurations replay them::

    windows = [16384, 32768]              # model windows (true tokens); required
    reserved = [4096]                     # output reservations
    counters = ["tiktoken:o200k_base"]    # the provider's TRUE counters ("auto": by meta.model)
    reasoning = ""                        # earlier reasoning counted ("" = the model family's)
    estimators = [""]                     # "" = each strategy's own estimator
    summarizer = "model_like"             # + summarizer_params = {...}
    error_style = "openai"
    seed = 0
    mine_probes = false

    [[traces]]
    scenario = "coding_agent"             # an embedded scenario name, or a .toml path
    seeds = [0, 1]
    count = 1                             # traces per seed

    [[traces]]
    path = "recorded/*.jsonl"             # a file or a glob, relative to this sweep file
    format = "canonical"                  # or a recorded format (see `ctxbench import`)

    [[traces]]
    hf = "org/dataset:train"              # a Hugging Face dataset split (needs the network)
    limit = 100

    [[strategies]]
    name = "dbgpt"
    params = { warning_threshold = [0.6, 0.7], min_keep_recent_rounds = 3 }

    [prices."tiktoken:o200k_base"]        # USD per million tokens, by true counter
    input_per_mtok = 2.5

In ``params`` every TOML list is an axis and every other value is fixed. A knob whose own
type is a list is therefore written as a list of lists: ``keep = [["system", "user"]]`` fixes
it, ``keep = [["system"], ["system", "user"]]`` sweeps it. Top-level keys must come before
the first ``[[traces]]`` / ``[[strategies]]`` table, as TOML requires.

The configurations are a product: strategy x params x window x reserved x counter x
estimator, in that order and in the order the file lists them (params by name). Every cell
is resolved (all knobs filled in), so its ``run_id`` does not depend on how it was written.
"""

from __future__ import annotations

import glob
import itertools
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ctxbench import config as configuration
from ctxbench.cell.runner import KeepFiles
from ctxbench.cell.spec import RunSpec
from ctxbench.cell.traces import AUTO, CANONICAL
from ctxbench.engine.provider import ERROR_STYLES
from ctxbench.engine.result import Prices
from ctxbench.errors import ConfigError, CtxbenchError

C = TypeVar("C")


@dataclass(frozen=True)
class TraceSource:
    """Where traces come from: exactly one of ``path`` (a file or glob), ``scenario`` or ``hf``."""

    path: str = field(default="", metadata={"help": "trace file or glob (relative to the sweep)"})
    format: str = field(default=CANONICAL, metadata={"help": "format of path ('auto' detects)"})
    probes: str = field(default="", metadata={"help": "JSONL of {trace_id, probes} to attach"})
    scenario: str = field(default="", metadata={"help": "embedded scenario name or .toml path"})
    seeds: tuple[int, ...] = field(default=(0,), metadata={"help": "scenario seeds"})
    count: int = field(default=1, metadata={"help": "traces generated per seed"})
    hf: str = field(default="", metadata={"help": "Hugging Face dataset NAME[:SPLIT]"})
    messages_column: str = field(default="", metadata={"help": "messages column of dataset rows"})
    limit: int = field(default=0, metadata={"help": "first N traces of each file (0 = all)"})

    def __post_init__(self) -> None:
        given = [k for k in ("path", "scenario", "hf") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError(
                "each [[traces]] table needs exactly one of path, scenario, hf"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if self.count < 1:
            raise ValueError(f"count must be >= 1, not {self.count}")
        if self.limit < 0:
            raise ValueError(f"limit must be >= 0, not {self.limit}")
        if self.scenario and not self.seeds:
            raise ValueError("seeds must list at least one seed")

    @property
    def label(self) -> str:
        """How listings name the source."""
        if self.scenario:
            return f"scenario {self.scenario} seeds {list(self.seeds)} x{self.count}"
        if self.hf:
            return f"hf {self.hf}"
        return self.path


@dataclass(frozen=True)
class StrategyGrid:
    """One strategy and its parameter grid: a list value is an axis, anything else is fixed."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def axes(self) -> list[tuple[str, list[Any]]]:
        """``(knob, values)`` per knob, by knob name; a fixed knob has one value."""
        return [
            (key, list(value) if isinstance(value, list) else [value])
            for key, value in sorted(self.params.items())
        ]

    def combinations(self) -> Iterator[dict[str, Any]]:
        axes = self.axes()
        for values in itertools.product(*(vals for _, vals in axes)):
            yield {key: value for (key, _), value in zip(axes, values)}


def _help(text: str, example: str) -> dict[str, str]:
    return {"help": text, "example": example}


def _per_kind(text: str, example: str) -> Any:
    """A field of probe kind -> share (unset: an empty mapping)."""
    return field(default_factory=dict, metadata=_help(text, example))


@dataclass(frozen=True, kw_only=True)
class SweepSettings:
    """The scalar and list keys of a sweep file (its tables are built on their own); the
    defaults are one replay's (:mod:`ctxbench.cell.spec`)."""

    windows: tuple[int, ...] = field(
        default=(),
        metadata=_help(
            "model windows in true tokens (32k = 32,768; sizes and model names quoted, "
            "`ctxbench windows`); required",
            '[32768, "128k", "gpt-4o"]',
        ),
    )
    reserved: tuple[int, ...] = field(
        default=(RunSpec.reserved,),
        metadata=_help("output reservations: prompts fit window - reserved", "[4096]"),
    )
    counters: tuple[str, ...] = field(
        default=(RunSpec.counter,),
        metadata=_help("the provider's TRUE counters (`ctxbench counters`)", '["hf:qwen2.5"]'),
    )
    estimators: tuple[str, ...] = field(
        default=("",),
        metadata=_help(
            'estimators the strategies decide with; "" = each one\'s own', '["", "chars4"]'
        ),
    )
    reasoning: str = field(
        default=RunSpec.reasoning,
        metadata=_help(
            "which earlier reasoning the counters count: tool_turns, current_turn, all, none "
            '("" = the family rule of each trace\'s meta.model)',
            '"tool_turns"',
        ),
    )
    summarizer: str = field(
        default=RunSpec.summarizer,
        metadata=_help(
            "summarizer of summarising strategies (extractive: the verbatim upper bound)",
            '"extractive"',
        ),
    )
    summarizer_params: Mapping[str, Any] = field(
        default_factory=dict,
        metadata=_help("the summarizer's parameters", '{ model = "gpt-4o-mini" }'),
    )
    error_style: str = field(
        default=RunSpec.error_style,
        metadata=_help(f"provider error wording: {', '.join(ERROR_STYLES)}", '"anthropic"'),
    )
    seed: int = field(default=RunSpec.seed, metadata=_help("seed of randomised summarizers", "0"))
    mine_probes: bool = field(
        default=False, metadata=_help("mine probes for traces that have none", "true")
    )
    keep_files: KeepFiles = field(
        default="all",
        metadata=_help(
            'the snapshot / offload files strategies write: "all"; "cited" (only those a '
            'probe\'s evidence was found in, so via_reference stays verifiable); "none" '
            "(probes are scored during the replay either way)",
            '"cited"',
        ),
    )
    kind_weights: Mapping[str, float] = _per_kind(
        "weight of each probe kind in the retention recommend and the report's verdict "
        "rank by (unset kinds count 1; 0 leaves a kind out); per-kind retention is "
        "always reported",
        "{ task = 2, recall = 0.5 }",
    )
    min_kind_retention: Mapping[str, float] = _per_kind(
        "`ctxbench check` fails a cell whose retention of a probe kind is under this share "
        "(as --min-kind; the command line wins per kind)",
        "{ safety = 1.0 }",
    )
    max_kind_drop: Mapping[str, float] = _per_kind(
        "`ctxbench check` fails a cell whose retention of a probe kind dropped more than "
        "this from the baseline (as --max-kind-drop)",
        "{ constraint = 0 }",
    )
    name: str = field(default="", metadata=_help("the sweep's name (report title)", '"nightly"'))
    description: str = field(default="", metadata=_help("a line about the sweep", '"..."'))


@dataclass(frozen=True, kw_only=True)
class SweepSpec(SweepSettings):
    """The whole sweep; ``expand()`` yields its cells. Built by :func:`load_sweep`."""

    traces: tuple[TraceSource, ...]
    strategies: tuple[StrategyGrid, ...]
    prices: Mapping[str, Prices] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key in ("traces", "strategies", "windows", "reserved", "counters", "estimators"):
            if not getattr(self, key):
                raise ValueError(f"{key} must list at least one value")
        if any(w <= 0 for w in self.windows):
            raise ValueError(f"windows must be positive, got {list(self.windows)}")
        if any(r < 0 for r in self.reserved):
            raise ValueError(f"reserved must be >= 0, got {list(self.reserved)}")
        if max(self.reserved) >= min(self.windows):
            raise ValueError(
                f"reserved {max(self.reserved)} leaves no room in window {min(self.windows)}: "
                "every reserved value must be smaller than every window"
            )
        if self.error_style not in ERROR_STYLES:
            raise ValueError(f"error_style must be one of {', '.join(ERROR_STYLES)}")

    def configs(self) -> list[RunSpec]:
        """Every configuration, resolved, without its trace; duplicates (equal once resolved)
        are dropped, keeping the first."""
        from ctxbench.cell.runner import resolve_spec

        out: list[RunSpec] = []
        seen: set[str] = set()
        for grid in self.strategies:
            for params in grid.combinations():
                for window, reserved, counter, estimator in itertools.product(
                    self.windows, self.reserved, self.counters, self.estimators
                ):
                    spec = resolve_spec(
                        RunSpec(
                            trace_id="",
                            trace_hash="",
                            strategy=grid.name,
                            params=params,
                            window=window,
                            reserved=reserved,
                            counter=counter,
                            reasoning=self.reasoning,
                            estimator=estimator,
                            summarizer=self.summarizer,
                            summarizer_params=dict(self.summarizer_params),
                            error_style=self.error_style,
                            seed=self.seed,
                            mine_probes=self.mine_probes,
                        )
                    )
                    if spec.run_id not in seen:
                        seen.add(spec.run_id)
                        out.append(spec)
        return out

    def axes(self) -> list[tuple[str, list[Any]]]:
        """The sweep's axes, for ``--dry-run`` and the report: ``(name, values)``."""
        out: list[tuple[str, list[Any]]] = [("strategy", [g.name for g in self.strategies])]
        for grid in self.strategies:
            out += [(f"{grid.name}.{key}", vals) for key, vals in grid.axes() if len(vals) > 1]
        out += [
            ("window", list(self.windows)),
            ("reserved", list(self.reserved)),
            ("counter", list(self.counters)),
            ("estimator", [e or "(strategy's own)" for e in self.estimators]),
        ]
        return out

    def expand(self) -> Iterator[RunSpec]:
        """Every cell, trace by trace, in a deterministic order. Traces are read lazily: one
        is in memory at a time."""
        from ctxbench.sweep.sources import catalogue

        configs = self.configs()
        for entry in catalogue(self.traces):
            for config in configs:
                yield entry.cell(config)

    def to_dict(self) -> dict[str, Any]:
        """The resolved spec as plain JSON (what ``sweep.json`` records)."""
        out = configuration.to_params(self)
        for key in _OMITTED_WHEN_UNSET:  # older sweep.json files stay equal to the spec
            if not out[key]:
                del out[key]
        out["summarizer_params"] = dict(self.summarizer_params)
        for key in ("kind_weights", "min_kind_retention", "max_kind_drop"):
            if getattr(self, key):
                out[key] = dict(getattr(self, key))
        out["traces"] = [configuration.to_params(t) for t in self.traces]
        out["strategies"] = [{"name": g.name, "params": dict(g.params)} for g in self.strategies]
        out["prices"] = {k: configuration.to_params(v) for k, v in sorted(self.prices.items())}
        return out


def with_endpoint(spec: SweepSpec, given: Mapping[str, str], *, source: Path) -> SweepSpec:
    """``spec`` with the summarizer endpoint the command line gives (``--summarizer-set
    base_url=URL --summarizer-set api_key_env=VARIABLE``). A sweep file is data: when it names
    an endpoint or a key variable itself, the command line must give both, and the same
    values, or the sweep is refused before any request (issue 22)."""
    from dataclasses import replace

    from ctxbench.summarizers import summarizer_params
    from ctxbench.summarizers.openai_compat import ENDPOINT_KEYS

    other = sorted(set(given) - set(ENDPOINT_KEYS))
    if other:
        raise ConfigError(
            f"--summarizer-set {other[0]} is not an endpoint parameter",
            key="--summarizer-set",
            hint=f"on sweep it gives {' and '.join(ENDPOINT_KEYS)}; put other summarizer "
            "parameters in the sweep file's summarizer_params",
        )
    typed = summarizer_params(spec.summarizer, given, source="--summarizer-set") if given else {}
    named = {k: spec.summarizer_params[k] for k in ENDPOINT_KEYS if k in spec.summarizer_params}
    for key, value in named.items():
        if set(typed) != set(ENDPOINT_KEYS) or typed[key] != value:
            allow = " ".join(
                f"--summarizer-set {k}={named.get(k, typed.get(k, k.upper()))}"
                for k in ENDPOINT_KEYS
            )
            raise ConfigError(
                f"the sweep file names the summarizer's {key} ({value!r}); ctxbench sends no "
                "API key to an address, and reads no key variable, that a file chose",
                path=source,
                key=f"summarizer_params.{key}",
                hint=f"to allow it, give the same on the command line: {allow}",
            )
    if not typed:
        return spec
    return replace(spec, summarizer_params={**spec.summarizer_params, **typed})


#: Keys added after sweep.json was first written, recorded only when set.
_OMITTED_WHEN_UNSET = ("reasoning", "kind_weights", "min_kind_retention", "max_kind_drop")

#: Top-level keys that hold tables and are built separately.
_TABLES = ("traces", "strategies", "prices")


def load_sweep(path: str | Path) -> SweepSpec:
    """Read a sweep TOML file. Relative paths resolve against the file's folder; unknown keys,
    bad values and unknown strategies are errors naming the key and the file."""
    path = Path(path)
    data = configuration.load_toml(path)
    return sweep_from_dict(data, source=path)


def sweep_from_dict(data: Mapping[str, Any], *, source: Path) -> SweepSpec:
    """Build a SweepSpec from parsed TOML; ``source`` is the file (for messages and paths)."""
    base = source.resolve().parent
    _check_keys(data, source)
    top = _build(
        SweepSettings,
        _sizes({k: v for k, v in data.items() if k not in _TABLES}, source),
        source,
        "",
    )
    traces = tuple(
        _resolve_paths(_build(TraceSource, table, source, f"traces[{i}]"), base, source, i)
        for i, table in enumerate(_tables(data, "traces", source))
    )
    strategies = tuple(
        _strategy_grid(table, source, i)
        for i, table in enumerate(_tables(data, "strategies", source))
    )
    prices_table = data.get("prices", {})
    if not isinstance(prices_table, Mapping):
        raise ConfigError(
            "expected a table of prices by counter",
            path=source,
            key="prices",
            hint='write [prices."tiktoken:o200k_base"] with input_per_mtok = ...',
        )
    prices = {
        str(counter): _build(Prices, table, source, f"prices.{counter}")
        for counter, table in prices_table.items()
    }
    _check_names(top, source)
    for required in ("traces", "strategies", "windows"):
        if not data.get(required):
            raise ConfigError(
                f"missing {required!r}",
                path=source,
                key=required,
                hint=_REQUIRED_HINTS[required],
            )
    try:
        return SweepSpec(
            traces=traces,
            strategies=strategies,
            prices=prices,
            **{k: getattr(top, k) for k in SweepSettings.__dataclass_fields__},
        )
    except ValueError as exc:
        names = list(SweepSpec.__dataclass_fields__)
        raise ConfigError(
            str(exc),
            path=source,
            key=configuration.field_named(str(exc), names),
            hint="see the example at the top of `ctxbench sweep --help`",
        ) from None


def _check_keys(data: Mapping[str, Any], source: Path) -> None:
    """Unknown top-level keys, with "did you mean" over the keys and the table names."""
    known = [*SweepSettings.__dataclass_fields__, *_TABLES]
    for key in data:
        if key not in known:
            raise configuration.unknown_key(key, known, valid=", ".join(known), path=source)


def _check_names(top: SweepSettings, source: Path) -> None:
    """Counters, estimators, the summarizer and the reasoning rule must exist, and the kind
    weights be numbers for known kinds (checked now, not in a worker)."""
    from ctxbench.counting import check_counter
    from ctxbench.counting.auto import AUTO as AUTO_COUNTER
    from ctxbench.counting.reasoning import check_rule
    from ctxbench.probes.kind_limits import limits_table
    from ctxbench.probes.weights import weights_table
    from ctxbench.summarizers import SUMMARIZERS

    if AUTO_COUNTER in top.counters and len(top.counters) > 1:
        raise ConfigError(
            f"counters lists {AUTO_COUNTER!r} with other counters",
            path=source,
            key="counters",
            hint=f"{AUTO_COUNTER!r} picks each trace's counter from its meta.model: list it alone, "
            "or list the counters themselves",
        )
    names: list[tuple[str, Callable[[str], object], str]] = [
        ("counters", check_counter, c) for c in top.counters if c != AUTO_COUNTER
    ]
    names += [("estimators", check_counter, e) for e in top.estimators if e]
    names.append(("summarizer", SUMMARIZERS.load, top.summarizer))
    if top.reasoning:
        names.append(("reasoning", check_rule, top.reasoning))
    weights_table(top.kind_weights, source=source)
    limits_table(
        {"min_kind_retention": top.min_kind_retention, "max_kind_drop": top.max_kind_drop},
        source=source,
    )
    for key, check, name in names:
        try:
            check(name)
        except CtxbenchError as exc:
            raise ConfigError(exc.message, path=source, key=key, hint=exc.hint) from None


_REQUIRED_HINTS = {
    "traces": "add a [[traces]] table (path, scenario or hf)",
    "strategies": 'add a [[strategies]] table with name = "..."',
    "windows": "list the model windows, e.g. windows = [32768]",
}


def _sizes(data: Mapping[str, Any], source: Path) -> dict[str, Any]:
    """``windows`` and ``reserved`` may be written as 32k / 128k (quoted in TOML); a window
    may also be a model name (:mod:`ctxbench.windows`)."""
    from ctxbench.sizes import parse_tokens
    from ctxbench.windows import parse_window

    out = dict(data)
    for key, parse in (("windows", parse_window), ("reserved", parse_tokens)):
        if isinstance(out.get(key), list):
            try:
                out[key] = [parse(v, key=key) for v in out[key]]
            except ConfigError as exc:
                raise ConfigError(exc.message, path=source, key=key, hint=exc.hint) from None
    return out


def _tables(data: Mapping[str, Any], key: str, source: Path) -> list[Mapping[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(t, Mapping) for t in value):
        raise ConfigError(
            "expected an array of tables", path=source, key=key, hint=f"write [[{key}]] tables"
        )
    return value


def _build(cls: type[C], table: Any, source: Path, prefix: str) -> C:
    """``configuration.build`` with the key path (``traces[1].seeds``) in the error."""
    if not isinstance(table, Mapping):
        raise ConfigError(
            f"expected a table, got {table!r}",
            path=source,
            key=prefix or None,
            hint=f"write [{prefix}] as a table of key = value" if prefix else None,
        )
    try:
        return configuration.build(cls, table, source=str(source))
    except ConfigError as exc:
        key = ".".join(k for k in (prefix, exc.key or "") if k) or None
        raise ConfigError(exc.message, path=source, key=key, hint=exc.hint) from None


def _strategy_grid(table: Mapping[str, Any], source: Path, index: int) -> StrategyGrid:
    from ctxbench.strategies import strategy_class

    prefix = f"strategies[{index}]"
    if "name" not in table:
        raise ConfigError(
            "missing 'name'",
            path=source,
            key=f"{prefix}.name",
            hint='name the strategy, e.g. name = "dbgpt" (see `ctxbench strategies`)',
        )
    grid = _build(StrategyGrid, table, source, prefix)
    try:
        cls = strategy_class(grid.name)
    except CtxbenchError as exc:
        raise ConfigError(exc.message, path=source, key=f"{prefix}.name", hint=exc.hint) from None
    for params in grid.combinations():
        _build(cls.Config, params, source, f"{prefix}.params")
    return grid


def _resolve_paths(spec: TraceSource, base: Path, source: Path, index: int) -> TraceSource:
    """Make file paths absolute (relative to the sweep file); a plain file must exist."""
    from dataclasses import replace

    changes: dict[str, Any] = {}
    if spec.format not in (CANONICAL, AUTO):
        from ctxbench.formats import FORMATS

        try:
            FORMATS.entry(spec.format)
        except CtxbenchError as exc:
            raise ConfigError(
                exc.message, path=source, key=f"traces[{index}].format", hint=exc.hint
            ) from None
    if spec.path:
        changes["path"] = str(base / spec.path)
        if not glob.has_magic(spec.path) and not os.path.isfile(changes["path"]):
            raise ConfigError(
                f"no such trace file {changes['path']}",
                path=source,
                key=f"traces[{index}].path",
                hint="paths are relative to the sweep file's folder",
            )
    if spec.probes:
        changes["probes"] = str(base / spec.probes)
    if spec.scenario.endswith(".toml"):
        changes["scenario"] = str(base / spec.scenario)
    resolved = replace(spec, **changes)
    if resolved.scenario:
        _check_scenario(resolved, source, index)
    return resolved


def _check_scenario(spec: TraceSource, source: Path, index: int) -> None:
    """The scenario loads, and what it generates (count x seeds traces) is within limits;
    an error inside the scenario file names that file."""
    from ctxbench.synth.scenario import check_generation
    from ctxbench.synth.scenario_file import load_scenario

    try:
        scenario = load_scenario(spec.scenario)
    except CtxbenchError as exc:
        if exc.path is not None:
            raise
        raise ConfigError(
            exc.message, path=source, key=f"traces[{index}].scenario", hint=exc.hint
        ) from None
    check_generation(
        scenario, spec.count * len(spec.seeds), key=f"traces[{index}].count", source=source
    )
