"""Printing and writing rows for the command line (tables, JSONL, CSV, parquet)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from ctxbench.atomic_file import AtomicFile
from ctxbench.errors import ConfigError
from ctxbench.escaping import csv_cell


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
    """Write rows by file suffix: ``.jsonl``, ``.csv`` or ``.parquet``, whole or not at all
    (a failed write raises OutputError and leaves the previous file as it was)."""
    path = Path(path)
    if path.suffix not in (".jsonl", ".csv", ".parquet"):
        raise ConfigError(
            f"cannot write rows to {path.name!r}", path=path, hint="use .jsonl, .csv or .parquet"
        )
    if path.suffix == ".parquet":
        import pandas as pd

        data: bytes = pd.DataFrame(list(rows)).to_parquet(index=False)
        with AtomicFile(path, "wb") as out:
            out.write(data)
        return
    with AtomicFile(path) as out:
        if path.suffix == ".jsonl":
            for row in rows:
                out.write(json.dumps(dict(row), ensure_ascii=False) + "\n")
        else:
            writer = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else [])
            writer.writeheader()
            writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)
