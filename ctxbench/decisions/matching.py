"""Which current cell replaced which baseline cell, and short names for cells.

A gate compares a change with what it replaced. Cells match by run id, then by their spec
key (the same cell under a new id); with ``match_by`` (any of trace, strategy, window,
counter) the cells left over are paired when they agree on those fields, so a knob whose value
changed is compared with its old value instead of being reported as one missing and one new
cell. When several leftovers agree, the pairs with the most equal knobs go first (then by
run id), which keeps the pairing deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ctxbench.errors import ConfigError
from ctxbench.report.leaderboard import ConfigKey, config_labels

C = TypeVar("C", bound="Cell")


class Cell(Protocol):
    """What matching and naming read of a gate cell: :class:`ctxbench.gate.baseline.BaselineCell`
    (the gate sits above this package, so it is named by what it has)."""

    @property
    def run_id(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def trace_id(self) -> str | None: ...
    @property
    def strategy(self) -> str | None: ...
    @property
    def params(self) -> str | None: ...
    @property
    def window(self) -> int | None: ...
    @property
    def counter(self) -> str | None: ...
    @property
    def estimator(self) -> str | None: ...
    @property
    def summarizer(self) -> str | None: ...
    @property
    def reserved(self) -> int | None: ...
    @property
    def plugin(self) -> str: ...

    def with_strategy(self: C, strategy: str, key: str) -> C:
        """The same cell under another strategy name and key."""
        ...


#: --match-by field -> what it reads of a cell
MATCH_FIELDS: dict[str, Callable[[Cell], object]] = {
    "trace": lambda c: c.trace_id,
    "strategy": lambda c: c.strategy,
    "window": lambda c: c.window,
    "counter": lambda c: c.counter,
}


def parse_match_by(text: str | None) -> tuple[str, ...]:
    """``trace,strategy`` -> ("trace", "strategy"); unknown names are a ConfigError."""
    if not text:
        return ()
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in MATCH_FIELDS]
    if unknown:
        raise ConfigError(
            f"--match-by: unknown field {unknown[0]!r}",
            key="match_by",
            hint=f"any of {', '.join(MATCH_FIELDS)}, comma-separated",
        )
    return names


def _params(cell: Cell) -> dict[str, Any]:
    loaded = json.loads(cell.params) if cell.params is not None else None
    return dict(loaded) if isinstance(loaded, Mapping) else {}


def _similarity(a: Cell, b: Cell) -> int:
    pa, pb = _params(a), _params(b)
    return sum(1 for k in set(pa) | set(pb) if pa.get(k) == pb.get(k))


def match_leftovers(
    baseline: Sequence[C], current: Sequence[C], match_by: Sequence[str]
) -> list[tuple[C, C]]:
    """Pairs of unmatched baseline and current cells that agree on the ``match_by`` fields."""
    if not match_by:
        return []
    fields = [MATCH_FIELDS[n] for n in match_by]

    def group(cell: C) -> str:
        return json.dumps([read(cell) for read in fields], default=str)

    pairs: list[tuple[C, C]] = []
    left = list(current)
    for key in sorted({group(c) for c in baseline}):
        bases = [b for b in baseline if group(b) == key]
        _refuse_guesses(bases, [c for c in left if group(c) == key], match_by)
        options = sorted(
            ((b, c) for b in bases for c in left if group(c) == key),
            key=lambda bc: (-_similarity(*bc), bc[0].run_id, bc[1].run_id),
        )
        used_b: set[str] = set()
        used_c: set[str] = set()
        for b, c in options:
            if b.run_id in used_b or c.run_id in used_c:
                continue
            used_b.add(b.run_id)
            used_c.add(c.run_id)
            pairs.append((b, c))
        left = [c for c in left if c.run_id not in used_c]
    return pairs


def _refuse_guesses(
    bases: Sequence[Cell], currents: Sequence[Cell], match_by: Sequence[str]
) -> None:
    """A ConfigError when pairing ``bases`` with ``currents`` (the leftovers that agree on
    ``match_by``) would be a guess: several cells on a side, or two different strategies
    (which ``--rename OLD=NEW`` declares to be one replacing the other)."""
    if not currents:
        return
    fields = ",".join(match_by)
    where = ", ".join(f"{n}={MATCH_FIELDS[n](bases[0])}" for n in match_by)
    if len(bases) > 1 or len(currents) > 1:
        raise ConfigError(
            f"--match-by {fields}: {len(bases)} baseline cells and {len(currents)} current "
            f"cells agree on {where}; pairing them would be a guess",
            key="match_by",
            hint="add fields to --match-by (strategy), or change one knob value at a time",
        )
    old, new = bases[0].strategy, currents[0].strategy
    if old != new:
        raise ConfigError(
            f"--match-by {fields} would compare strategy {old} with {new} ({where})",
            key="match_by",
            hint=f"if {new} replaces {old}, say so with --rename {old}={new}",
        )


def renamed(cells: Sequence[C], renames: Mapping[str, str]) -> list[C]:
    """Baseline cells with their strategy renamed (``--rename OLD=NEW``: a strategy renamed or
    a plug-in moved to another module), in their key too, so they match by key."""
    if not renames:
        return list(cells)
    out = []
    for cell in cells:
        old = cell.strategy
        if old is not None and old in renames:
            new = renames[old]
            cell = cell.with_strategy(new, cell.key.replace(f"|{old}(", f"|{new}(", 1))
        out.append(cell)
    return out


def parse_renames(values: Sequence[str]) -> dict[str, str]:
    """``["old=new", ...]`` -> ``{"old": "new"}``; a value without ``=`` is a ConfigError."""
    out: dict[str, str] = {}
    for value in values:
        old, sep, new = value.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise ConfigError(
                f"--rename {value!r} is not OLD=NEW",
                key="rename",
                hint="e.g. --rename mypkg.old:compact=mypkg.new:compact",
            )
        out[old.strip()] = new.strip()
    return out


def changed_knobs(base: Cell, cur: Cell) -> str:
    """``warning_threshold 0.7 -> 0.6`` for the knobs (and fields) a pair differs in."""
    pa, pb = _params(base), _params(cur)
    parts = [
        f"{k} {pa.get(k)} -> {pb.get(k)}"
        for k in sorted(set(pa) | set(pb))
        if pa.get(k) != pb.get(k)
    ]
    for field, was, now in (
        ("trace_id", base.trace_id, cur.trace_id),
        ("strategy", base.strategy, cur.strategy),
        ("window", base.window, cur.window),
        ("counter", base.counter, cur.counter),
        ("estimator", base.estimator, cur.estimator),
        ("summarizer", base.summarizer, cur.summarizer),
    ):
        if was is not None and now is not None and was != now:
            parts.append(f"{field} {was} -> {now}")
    parts += plugin_changes(base, cur)
    return ", ".join(parts)


def plugin_changes(base: Cell, cur: Cell) -> list[str]:
    """``plug-in code mypkg.mod:compact sha256:... -> sha256:...`` for each plug-in whose
    code differs between two cells (both recorded the version of their plug-ins)."""
    before = _plugins(base)
    after = _plugins(cur)
    return [
        f"plug-in code {path} {before[path]} -> {version}"
        for path, version in sorted(after.items())
        if path in before and before[path] != version
    ]


def _plugins(cell: Cell) -> dict[str, str]:
    text = cell.plugin
    return {p: v for p, _, v in (item.rpartition("@") for item in text.split())}


def cell_names(cells: Sequence[Cell]) -> dict[str, str]:
    """run_id -> a short readable name: the config (strategy and the knobs that differ among
    that strategy's cells), the trace and the window (the counter when there are several)."""
    by_id = {c.run_id: c for c in cells}
    keys = {
        run_id: ConfigKey.of({"strategy": c.strategy or "?", **_fields(c)})
        for run_id, c in by_id.items()
    }
    labels = config_labels(keys.values())
    names = {}
    for run_id, cell in by_id.items():
        if cell.window is None:  # a baseline from before names: its key is all we have
            names[run_id] = cell.key or run_id
        else:
            names[run_id] = f"{labels[keys[run_id]]} | {cell.trace_id} | w={cell.window}"
    return names


def _fields(cell: Cell) -> dict[str, Any]:
    return {
        "params": json.dumps(_params(cell), sort_keys=True),
        "counter": cell.counter or "",
        "estimator": cell.estimator or "",
        "summarizer": cell.summarizer or "",
        "reserved": cell.reserved or 0,
    }
