"""Printing and writing rows for the command line (tables, JSONL, CSV, parquet)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from ctxbench.errors import ConfigError


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def print_table(rows: Sequence[Mapping[str, Any]], columns: Iterable[str]) -> None:
    """A plain aligned text table of ``columns`` (missing values print as ``-``)."""
    cols = list(columns)
    cells = [[_cell(row.get(c)) for c in cols] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(cols)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip())
    for r in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())


def write_rows(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Write rows by file suffix: ``.jsonl``, ``.csv`` or ``.parquet``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        with path.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(dict(row), ensure_ascii=False) + "\n")
    elif path.suffix == ".csv":
        columns = list(rows[0]) if rows else []
        with path.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
    elif path.suffix == ".parquet":
        import pandas as pd

        pd.DataFrame(list(rows)).to_parquet(path, index=False)
    else:
        raise ConfigError(
            f"cannot write rows to {path.name!r}", path=path, hint="use .jsonl, .csv or .parquet"
        )
