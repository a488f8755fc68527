"""Result rows on disk: one Arrow schema derived from :class:`RunResult`, one writer of the
table (parquet in row groups, optionally CSV; JSON Lines for ``run --out``), one row reader.

``ctxbench run --out rows.parquet`` and a sweep's ``results.parquet`` therefore have the same
column types whatever the values (a column of Nones is still a float column)."""

from __future__ import annotations

import array
import csv
import json
import math
import os
import typing
from collections.abc import Mapping, Sequence
from functools import cache
from itertools import accumulate, compress, count
from pathlib import Path
from typing import Any

from ctxbench import jsontext
from ctxbench.atomic_file import AtomicFile, discard, fsync_file, fsync_folder
from ctxbench.engine.result import RunResult
from ctxbench.errors import ConfigError, OutputError, ResultsError
from ctxbench.escaping import csv_cell
from ctxbench.extras import require
from ctxbench.guard import regular_file
from ctxbench.results.layout import REBUILD, RESUME

#: Rows per parquet row group when writing a table.
ROW_GROUP = 10_000
#: The columns every row file must have (a file without them is not ctxbench's).
IDENTITY_COLUMNS = ("run_id", "trace_id", "strategy", "window")
#: The suffixes ``write_rows`` writes.
ROW_SUFFIXES = (".jsonl", ".csv", ".parquet")


def _arrow() -> Any:
    return require("pyarrow", what="a .parquet results table")


def _parquet() -> Any:
    return require("pyarrow.parquet", what="a .parquet results table")


@cache
def column_types() -> dict[str, type]:
    """Result column -> its Python type (``float | None`` -> float)."""
    out: dict[str, type] = {}
    for name, tp in typing.get_type_hints(RunResult).items():
        out[name] = next((a for a in typing.get_args(tp) if a is not type(None)), tp)
    return out


def arrow_schema() -> Any:
    """The parquet schema, from the RunResult field types (stable whatever the values)."""
    pa = _arrow()

    types = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
    return pa.schema([pa.field(name, types[tp]) for name, tp in column_types().items()])


def arrow_column(values: Sequence[Any], tp: type) -> Any:
    """``pyarrow.array(values, type)`` for a column of ints, floats, bools or texts (None for a
    missing value), built from its buffers: ``pyarrow.array`` asks first whether the values
    are a pandas object, which imports pandas (half a second) in a process that never uses
    it. The same array: the same values, validity bits only when a value is missing."""
    pa = _arrow()

    missing = [v is None for v in values]
    nulls = sum(missing)
    validity = _bits([not m for m in missing]) if nulls else None
    if tp is str:
        data = [b"" if v is None else v.encode("utf-8") for v in values]
        offsets = array.array("i", accumulate(map(len, data), initial=0))
        buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
        return pa.Array.from_buffers(pa.string(), len(values), buffers, nulls)
    if tp is bool:
        values_buffer = _bits([bool(v) for v in values])
        return pa.Array.from_buffers(pa.bool_(), len(values), [validity, values_buffer], nulls)
    if tp is int:
        ints = array.array("q", [0 if v is None else v for v in values])
        return pa.Array.from_buffers(pa.int64(), len(values), [validity, pa.py_buffer(ints)], nulls)
    if tp is float:
        floats = array.array("d", [0.0 if v is None else v for v in values])
        buffers = [validity, pa.py_buffer(floats)]
        return pa.Array.from_buffers(pa.float64(), len(values), buffers, nulls)
    raise TypeError(f"no Arrow column for {tp.__name__} values")


def _bits(flags: Sequence[bool]) -> Any:
    """An Arrow bitmap of ``flags`` (bit i of byte i // 8 is flag i, least significant first)."""
    pa = _arrow()

    out = bytearray((len(flags) + 7) // 8)
    for i in compress(count(), flags):
        out[i >> 3] |= 1 << (i & 7)
    return pa.py_buffer(bytes(out))


class TableWriter:
    """Rows to parquet (in row groups), or to JSON Lines for a ``.jsonl`` path (the core
    install's table), and optionally CSV, all written atomically: the files appear when the
    block ends without an error (``then`` ends a failed write's hint)."""

    def __init__(self, path: Path, csv_path: Path | None = None, *, then: str = RESUME) -> None:
        self.parquet = path
        self.parquet_tmp = path.with_name(f".{path.name}.tmp")
        self.then = then
        self.csv = AtomicFile(csv_path, then=then) if csv_path else None
        self.jsonl = AtomicFile(path, then=then) if path.suffix == ".jsonl" else None
        self._batch: list[Mapping[str, Any]] = []

    def __enter__(self) -> TableWriter:
        self._csv_writer = None
        if self.csv is not None:
            self._csv_writer = csv.DictWriter(self.csv.__enter__(), RunResult.columns())
            self._csv_writer.writeheader()
        if self.jsonl is not None:
            self._lines = self.jsonl.__enter__()
            return self
        pq = _parquet()

        self.schema = arrow_schema()
        try:
            self._parquet_writer = pq.ParquetWriter(str(self.parquet_tmp), self.schema)
        except OSError as exc:
            raise OutputError.from_os_error(exc, self.parquet, then=self.then) from None
        return self

    def add(self, row: Mapping[str, Any]) -> None:
        if self._csv_writer is not None:
            self._csv_writer.writerow({k: csv_cell(v) for k, v in row.items()})
        if self.jsonl is not None:
            self._lines.write(json.dumps(dict(row), ensure_ascii=False) + "\n")
            return
        self._batch.append(row)
        if len(self._batch) >= ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        pa = _arrow()

        if self._batch:
            columns = [
                arrow_column([row[name] for row in self._batch], tp)
                for name, tp in column_types().items()
            ]
            try:
                table = pa.Table.from_arrays(columns, schema=self.schema)
                self._parquet_writer.write_table(table)
            except OSError as exc:
                raise OutputError.from_os_error(exc, self.parquet, then=self.then) from None
            self._batch = []

    def __exit__(self, exc_type: object, *rest: object) -> None:
        """Close both files; rename them into place only when every row was written."""
        if self.jsonl is not None:
            try:
                if self.csv is not None:
                    self.csv.__exit__(exc_type)
            except BaseException:  # the CSV failed: no table either
                self.jsonl.__exit__(OutputError)
                raise
            self.jsonl.__exit__(exc_type)
            return
        error: OutputError | None = None
        try:
            if exc_type is None:
                self._flush()
        except OutputError as exc:
            error = exc
        try:
            self._parquet_writer.close()
        except OSError as exc:
            error = error or OutputError.from_os_error(exc, self.parquet, then=self.then)
        if exc_type is None and error is None:
            try:
                if self.csv is not None:
                    self.csv.__exit__(None)
                fsync_file(self.parquet_tmp)
                os.replace(self.parquet_tmp, self.parquet)
                fsync_folder(self.parquet.parent)
                return
            except OutputError as exc:
                error = exc
            except OSError as exc:
                error = OutputError.from_os_error(exc, self.parquet, then=self.then)
        elif self.csv is not None:
            self.csv.__exit__(OutputError)
        discard(self.parquet_tmp)
        if error is not None and exc_type is None:
            raise error


def write_rows(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Write rows by file suffix: ``.jsonl``, ``.csv`` or ``.parquet`` (the table's schema),
    whole or not at all (a failed write raises OutputError and leaves the previous file)."""
    path = Path(path)
    if path.suffix not in ROW_SUFFIXES:
        raise ConfigError(
            f"cannot write rows to {path.name!r}", path=path, hint="use .jsonl, .csv or .parquet"
        )
    then = "run the command again"
    if path.suffix in (".parquet", ".jsonl"):
        with TableWriter(path, then=then) as table:
            for row in rows:
                table.add(row)
        return
    with AtomicFile(path, then=then) as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)


def _clean(value: Any) -> Any:
    """Parquet nulls of float columns come back as NaN from some writers: make them None."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def read_results(path: Path) -> list[RunResult]:
    """The rows of a ``.parquet`` table or a ``.jsonl`` file of rows, as :class:`RunResult`
    (a column added after the file was written reads as its default); a row without a column
    every row has had is a :class:`ResultsError` naming the file and the row."""
    results = []
    for number, row in enumerate(read_rows(path), 1):
        try:
            results.append(RunResult.from_row(row))
        except KeyError as exc:
            raise ResultsError(
                f"row {number} has no column {exc.args[0]!r}",
                path=path,
                line=None if path.suffix == ".parquet" else number,
                hint="it was written by another ctxbench version: rerun it",
            ) from None
    return results


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a ``.parquet`` table or a ``.jsonl`` file of rows, as plain Python values.

    Transitional (issue 44): readers take rows as :class:`RunResult` from
    :func:`read_results`; this dict form stays for code written before it.

    A damaged file, a foreign table or a row without the identity columns is a
    :class:`ResultsError` naming the file (and the line or column)."""
    regular_file(path, error=ResultsError, hint="give a results file or directory")
    if path.suffix == ".parquet":
        records = _parquet_records(path)
    else:
        records = []
        for number, line in jsontext.text_lines(path, error=ResultsError, hint=REBUILD):
            if line.strip():
                records.append(
                    jsontext.loads(
                        line,
                        path=path,
                        line=number,
                        error=ResultsError,
                        hint="each line of a results file is one JSON row",
                    )
                )
    from ctxbench.results.journal import row_spec_problem

    rows = []
    for number, record in enumerate(records, 1):
        if not isinstance(record, dict):
            raise ResultsError(
                f"row {number} is not a JSON object",
                path=path,
                line=number,
                hint="this is not a ctxbench results file",
            )
        missing = [c for c in IDENTITY_COLUMNS if c not in record]
        if missing:
            raise ResultsError(
                f"row {number} has no {', '.join(missing)}",
                path=path,
                line=number,
                hint="this is not a ctxbench results file",
            )
        problem = row_spec_problem(record) if "spec" in record else ""
        if problem:
            raise ResultsError(
                f"row {number} (run {record.get('run_id')!r}): {problem}",
                path=path,
                line=None if path.suffix == ".parquet" else number,
                key="spec",
                hint=REBUILD,
            )
        older = {k: v for k, v in RunResult.column_defaults().items() if k not in record}
        row = {**record, **older}  # a row written before these columns existed
        rows.append({k: _clean(v) for k, v in row.items()})
    return rows


def _parquet_records(path: Path) -> list[dict[str, Any]]:
    pa, pq = _arrow(), _parquet()

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise ResultsError(
            f"cannot read the results table: {exc}", path=path, hint=REBUILD
        ) from None
    optional = RunResult.column_defaults()
    missing = [c for c in RunResult.columns() if c not in table.column_names and c not in optional]
    if missing:
        raise ResultsError(
            f"not a ctxbench results table: no column {missing[0]!r}",
            path=path,
            key=missing[0],
            hint=REBUILD,
        )
    records: list[dict[str, Any]] = table.to_pylist()
    return records
