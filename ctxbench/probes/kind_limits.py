"""The per-kind limits of the gate: a floor on a probe kind's retention in every cell
(``--min-kind safety=1.0``) and the drop a kind may take from its baseline
(``--max-kind-drop constraint=0``). Written on the command line (``KIND=VALUE``, repeatable), in
a sweep file (``min_kind_retention = { safety = 1.0 }``, ``max_kind_drop = { constraint = 0 }``)
or to the pytest plugin; parsed here once, with errors that name the bad value and the kinds."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench.errors import ConfigError
from ctxbench.probes.model import PROBE_KINDS

#: The sweep-file keys (and the command-line options they stand for).
MIN_KEY, DROP_KEY = "min_kind_retention", "max_kind_drop"
OPTIONS = {MIN_KEY: "--min-kind", DROP_KEY: "--max-kind-drop"}
_EXAMPLES = {MIN_KEY: "safety=1.0", DROP_KEY: "constraint=0"}


@dataclass(frozen=True)
class KindLimits:
    """Per probe kind: the least retention a cell may have (``min_retention``) and the most its
    retention may drop from the baseline's (``max_drop``); both shares in [0, 1]."""

    min_retention: Mapping[str, float] = field(default_factory=dict)
    max_drop: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, table in ((MIN_KEY, self.min_retention), (DROP_KEY, self.max_drop)):
            for kind, value in table.items():
                _check(kind, value, key, f"{kind}={value!r}")

    def __bool__(self) -> bool:
        return bool(self.min_retention or self.max_drop)

    def kinds(self) -> list[str]:
        return sorted({*self.min_retention, *self.max_drop})

    def over(self, other: KindLimits) -> KindLimits:
        """These limits, with ``other``'s in their place where both name a kind (the command
        line over the sweep file)."""
        return KindLimits(
            {**self.min_retention, **other.min_retention}, {**self.max_drop, **other.max_drop}
        )

    def describe(self) -> str:
        parts = [f"{k} >= {v:g}" for k, v in sorted(self.min_retention.items())]
        parts += [f"{k} drop <= {v:g}" for k, v in sorted(self.max_drop.items())]
        return ", ".join(parts) or "none"


def _check(kind: Any, value: Any, key: str, given: str, path: str | Path | None = None) -> None:
    """A kind and its share, or an error: named by the option and the value given on the
    command line, by the file and its ``key.kind`` in a file."""
    name = f"{key}.{kind}" if path else OPTIONS[key]
    said = "" if path else f"{given}: "
    example = f"{key} = {{ {_EXAMPLES[key].replace('=', ' = ')} }}" if path else None
    if kind not in PROBE_KINDS:
        raise ConfigError(
            f"{said}unknown probe kind {kind!r}",
            path=path,
            key=name,
            hint=f"known kinds: {', '.join(PROBE_KINDS)}",
        )
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 <= value <= 1
    ):
        raise ConfigError(
            f"{said}the {'retention' if key == MIN_KEY else 'drop'} of {kind} must be a "
            f"share from 0 to 1, not {value!r}",
            path=path,
            key=name,
            hint=f"e.g. {example or OPTIONS[key] + ' ' + _EXAMPLES[key]}",
        )


def parse_option(values: Iterable[str], key: str) -> dict[str, float]:
    """``KIND=VALUE`` strings of ``--min-kind`` (``key`` = ``min_kind_retention``) or
    ``--max-kind-drop`` as a table; a bad one is an error naming it and the known kinds."""
    out: dict[str, float] = {}
    for raw in values:
        kind, sep, text = raw.partition("=")
        kind = kind.strip()
        if not sep or not kind or not text.strip():
            raise ConfigError(
                f"{raw!r} is not KIND=VALUE",
                key=OPTIONS[key],
                hint=f"e.g. {OPTIONS[key]} {_EXAMPLES[key]}; kinds: {', '.join(PROBE_KINDS)}",
            )
        number = text.strip()
        try:
            value = float(number.removesuffix("%")) / (100 if number.endswith("%") else 1)
        except ValueError:
            raise ConfigError(
                f"{raw!r}: {number!r} is not a number",
                key=OPTIONS[key],
                hint=f"e.g. {OPTIONS[key]} {_EXAMPLES[key]} (a share from 0 to 1, or 90%)",
            ) from None
        _check(kind, value, key, repr(raw))
        out[kind] = value
    return out


def from_options(min_kind: Iterable[str] = (), max_kind_drop: Iterable[str] = ()) -> KindLimits:
    """The limits the command line gives."""
    return KindLimits(parse_option(min_kind, MIN_KEY), parse_option(max_kind_drop, DROP_KEY))


def limits_table(data: Mapping[str, Any], *, source: str | Path | None = None) -> KindLimits:
    """The limits of a sweep file (or of its ``sweep.json``): its ``min_kind_retention`` and
    ``max_kind_drop`` tables (absent: none). Files are data: a bad value names the file and key."""
    tables: dict[str, dict[str, float]] = {}
    for key in (MIN_KEY, DROP_KEY):
        table = data.get(key) or {}
        if not isinstance(table, Mapping):
            raise ConfigError(
                f"{key} must be a table of probe kind = share, not {table!r}",
                path=source,
                key=key,
                hint=f"e.g. {key} = {{ {_EXAMPLES[key].replace('=', ' = ')} }}",
            )
        for kind, value in table.items():
            _check(kind, value, key, f"{key}.{kind} = {value!r}", source)
        tables[key] = {str(k): float(v) for k, v in table.items()}
    return KindLimits(tables[MIN_KEY], tables[DROP_KEY])
