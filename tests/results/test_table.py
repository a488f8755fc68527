"""The results table's Arrow columns are built from buffers: the same arrays as
``pyarrow.array`` gives, without the pandas check that imports pandas."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.results.table import arrow_column

ARROW = {int: pa.int64(), float: pa.float64(), bool: pa.bool_(), str: pa.string()}
VALUES = {
    int: st.integers(-(2**63), 2**63 - 1),
    float: st.floats(allow_nan=False),
    bool: st.booleans(),
    str: st.text(st.characters(exclude_categories=["Cs"])),
}


def _same(values: list[Any], tp: type) -> None:
    built = arrow_column(values, tp)
    expected = pa.array(values, ARROW[tp])
    assert built.equals(expected)
    assert built.null_count == expected.null_count
    assert built.to_pylist() == values


@settings(deadline=None)  # pyarrow.array imports pandas the first time
@given(st.data())
def test_a_column_equals_pyarrows_array(data: st.DataObject) -> None:
    tp = data.draw(st.sampled_from([int, float, bool, str]))
    values = data.draw(st.lists(st.none() | VALUES[tp], max_size=40))
    _same(values, tp)


def test_columns_by_example() -> None:
    _same([1, None, 3], int)
    _same([0.5, None], float)
    _same([True, None, False, True, True, False, False, False, True], bool)  # over a byte
    _same(["é", None, "", "ctx"], str)
    _same([], str)
