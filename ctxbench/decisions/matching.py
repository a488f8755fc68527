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
from collections.abc import Mapping, Sequence
from typing import Any

from ctxbench.errors import ConfigError
from ctxbench.report.leaderboard import ConfigKey, config_labels

#: --match-by field -> the cell field it reads
MATCH_FIELDS: dict[str, str] = {
    "trace": "trace_id",
    "strategy": "strategy",
    "window": "window",
    "counter": "counter",
}

Cell = Mapping[str, Any]


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
    raw = cell.get("params")
    loaded = json.loads(raw) if isinstance(raw, str) else raw
    return dict(loaded) if isinstance(loaded, Mapping) else {}


def _similarity(a: Cell, b: Cell) -> int:
    pa, pb = _params(a), _params(b)
    return sum(1 for k in set(pa) | set(pb) if pa.get(k) == pb.get(k))


def match_leftovers(
    baseline: Sequence[Cell], current: Sequence[Cell], match_by: Sequence[str]
) -> list[tuple[Cell, Cell]]:
    """Pairs of unmatched baseline and current cells that agree on the ``match_by`` fields."""
    if not match_by:
        return []
    fields = [MATCH_FIELDS[n] for n in match_by]

    def group(cell: Cell) -> str:
        return json.dumps([cell.get(f) for f in fields], default=str)

    pairs: list[tuple[Cell, Cell]] = []
    left = list(current)
    for key in sorted({group(c) for c in baseline}):
        bases = [b for b in baseline if group(b) == key]
        _refuse_guesses(bases, [c for c in left if group(c) == key], match_by)
        options = sorted(
            ((b, c) for b in bases for c in left if group(c) == key),
            key=lambda bc: (-_similarity(*bc), str(bc[0]["run_id"]), str(bc[1]["run_id"])),
        )
        used_b: set[str] = set()
        used_c: set[str] = set()
        for b, c in options:
            if str(b["run_id"]) in used_b or str(c["run_id"]) in used_c:
                continue
            used_b.add(str(b["run_id"]))
            used_c.add(str(c["run_id"]))
            pairs.append((b, c))
        left = [c for c in left if str(c["run_id"]) not in used_c]
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
    where = ", ".join(f"{n}={bases[0].get(MATCH_FIELDS[n])}" for n in match_by)
    if len(bases) > 1 or len(currents) > 1:
        raise ConfigError(
            f"--match-by {fields}: {len(bases)} baseline cells and {len(currents)} current "
            f"cells agree on {where}; pairing them would be a guess",
            key="match_by",
            hint="add fields to --match-by (strategy), or change one knob value at a time",
        )
    old, new = bases[0].get("strategy"), currents[0].get("strategy")
    if old != new:
        raise ConfigError(
            f"--match-by {fields} would compare strategy {old} with {new} ({where})",
            key="match_by",
            hint=f"if {new} replaces {old}, say so with --rename {old}={new}",
        )


def renamed(cells: Sequence[Cell], renames: Mapping[str, str]) -> list[Cell]:
    """Baseline cells with their strategy renamed (``--rename OLD=NEW``: a strategy renamed or
    a plug-in moved to another module), in their key too, so they match by key."""
    if not renames:
        return list(cells)
    out = []
    for cell in cells:
        old = cell.get("strategy")
        if isinstance(old, str) and old in renames:
            new = renames[old]
            key = str(cell.get("key", "")).replace(f"|{old}(", f"|{new}(", 1)
            cell = {**cell, "strategy": new, "key": key}
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
    for field in ("trace_id", "strategy", "window", "counter", "estimator", "summarizer"):
        if (
            base.get(field) is not None
            and cur.get(field) is not None
            and base.get(field) != cur.get(field)
        ):
            parts.append(f"{field} {base.get(field)} -> {cur.get(field)}")
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
    text = cell.get("plugin")
    if not isinstance(text, str):
        return {}
    return {p: v for p, _, v in (item.rpartition("@") for item in text.split())}


def cell_names(cells: Sequence[Cell]) -> dict[str, str]:
    """run_id -> a short readable name: the config (strategy and the knobs that differ among
    that strategy's cells), the trace and the window (the counter when there are several)."""
    by_id = {str(c["run_id"]): c for c in cells}
    keys = {
        run_id: ConfigKey.of({"strategy": c.get("strategy") or "?", **_fields(c)})
        for run_id, c in by_id.items()
    }
    labels = config_labels(keys.values())
    names = {}
    for run_id, cell in by_id.items():
        if cell.get("window") is None:  # a baseline from before names: its key is all we have
            names[run_id] = str(cell.get("key") or run_id)
        else:
            names[run_id] = f"{labels[keys[run_id]]} | {cell.get('trace_id')} | w={cell['window']}"
    return names


def _fields(cell: Cell) -> dict[str, Any]:
    return {
        "params": json.dumps(_params(cell), sort_keys=True),
        "counter": cell.get("counter") or "",
        "estimator": cell.get("estimator") or "",
        "summarizer": cell.get("summarizer") or "",
        "reserved": cell.get("reserved") or 0,
    }
