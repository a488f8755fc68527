"""Tables as data: every table of the report is rendered server-side from these, so it reads
with JavaScript off; the inline script only sorts (by ``sort`` keys) and filters rows.

Cells hold plain text. Markup never comes from data: the template escapes every value, and a
cell's ``kind`` picks one of a few fixed renderings (plain, code, a collapsible pre block).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

CellKind = Literal["text", "code", "details"]


@dataclass(frozen=True)
class Cell:
    """One cell: its text, an optional numeric sort key, and how to render it."""

    text: str
    sort: float | None = None
    kind: CellKind = "text"
    #: the summary line of a ``details`` cell
    summary: str = ""


@dataclass(frozen=True)
class Column:
    label: str
    numeric: bool = False
    help: str = ""
    #: a label column that should not wrap into a narrow strip
    wide: bool = False
    #: a key column that stays in view when a wide table scrolls sideways
    pin: bool = False
    #: shown in a full-width row under its row (long text: specs and commands)
    below: bool = False


@dataclass(frozen=True)
class Table:
    """A sortable, filterable table (``id`` must be unique within the page)."""

    id: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption: str = ""
    note: str = ""


def number(value: float | int | None, digits: int = 3, *, percent: bool = False) -> Cell:
    """A numeric cell: formatted text, exact sort key; None and NaN read as an en dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return Cell("–")
    if percent:
        return Cell(f"{value * 100:.1f}%", float(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return Cell(f"{value:,}", float(value))
    if abs(value) >= 1000:
        return Cell(f"{value:,.0f}", float(value))
    if abs(value) >= 10:
        return Cell(f"{value:.1f}", float(value))
    return Cell(f"{value:.{digits}f}", float(value))


def money(value: float | None) -> Cell:
    """US dollars: cents, or four decimals below one cent."""
    if value is None or math.isnan(value):
        return Cell("–")
    return Cell(f"{value:,.2f}" if abs(value) >= 0.01 or value == 0 else f"{value:.4f}", value)


def count(value: int | None) -> Cell:
    return number(value)


def text(value: object) -> Cell:
    return Cell("" if value is None else str(value))


def code(value: str) -> Cell:
    return Cell(value, kind="code")


def details(summary: str, body: str) -> Cell:
    return Cell(body, kind="details", summary=summary)


def columns(
    *specs: str | Column | tuple[str, bool] | tuple[str, bool, str],
) -> tuple[Column, ...]:
    """Columns from labels, ``(label, numeric)``, ``(label, numeric, help)`` or Columns."""
    out = []
    for spec in specs:
        if isinstance(spec, Column):
            out.append(spec)
        elif isinstance(spec, str):
            out.append(Column(spec))
        else:
            out.append(Column(*spec))
    return tuple(out)


def table(
    id: str,
    cols: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    *,
    caption: str = "",
    note: str = "",
) -> Table:
    return Table(id, tuple(cols), tuple(tuple(r) for r in rows), caption, note)
