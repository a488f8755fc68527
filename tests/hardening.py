"""What the hardening tests feed ctxbench, and what they demand of the errors it raises.

Damage comes in two kinds: to the bytes of a file (truncation, flipped bytes, the wrong
encoding, an empty file, nesting deeper than any parser recurses) and to the values of a
parsed document (NaN, infinities, 1e308, 10**40, an integer of 5,000 digits, deep nesting,
every JSON type in every place). Whatever the damage, the only exceptions allowed out are
``CtxbenchError`` subclasses that name the file, say where in it (line, key or JSON path)
unless the whole file is unreadable, and carry a hint.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import strategies as st

from ctxbench.cli import cli, main
from ctxbench.errors import CtxbenchError

#: Nesting no recursive parser survives (the default recursion limit is 1,000).
DEEP = 100_000
HUGE_DIGITS = 5_000  # over Python's 4,300-digit int conversion limit
_HUGE = "\x00huge\x00"
_DEEP = "\x00deep\x00"

#: Messages about the file as a whole, where no line or key applies.
FILE_LEVEL = (
    "not UTF-8",
    "empty",
    "no such",
    "cannot read",
    "holds 0 runs",
    "too many digits",
    "nested too deeply",
)

EXTREME_VALUES: st.SearchStrategy[Any] = st.sampled_from(
    [
        float("nan"),
        float("inf"),
        float("-inf"),
        1e308,
        -1e308,
        10**40,
        -(10**40),
        _HUGE,
        _DEEP,
        0,
        -1,
        "",
        True,
        None,
        [],
        {},
        "x" * 300,
        "\ud800",
        "\x00",
    ]
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=5,
)


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that can also write the unparseable: integers of 5,000 digits and
    nesting 100,000 deep (placeholders, as ``json.dumps`` refuses both)."""
    text = json.dumps(value, **kwargs)
    return text.replace(json.dumps(_HUGE), "9" * HUGE_DIGITS).replace(
        json.dumps(_DEEP), "[" * DEEP + "]" * DEEP
    )


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every node address in a JSON document (the root is the empty path)."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, (*prefix, i))
    return out


@st.composite
def mutated(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one to three nodes replaced by an extreme or random value, or deleted."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths(doc)))
        value = draw(EXTREME_VALUES | JSON_VALUES)
        if not path:
            doc = value
            continue
        parent = doc
        try:
            for step in path[:-1]:
                parent = parent[step]
            if draw(st.booleans()) and isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed this path
    return doc


@st.composite
def damaged(draw: st.DrawFn, text: str) -> bytes:
    """The bytes of ``text`` (a valid file) damaged one way."""
    data = text.encode("utf-8")
    kind = draw(
        st.sampled_from(
            ["truncate", "flip", "latin-1", "utf-16", "invalid-utf8", "empty", "deep", "bom"]
        )
    )
    if kind == "truncate":
        return data[: draw(st.integers(0, max(len(data) - 1, 0)))]
    if kind == "flip":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(out) - 1))
            out[i] ^= draw(st.integers(1, 255))
        return bytes(out)
    if kind == "latin-1":
        at = draw(st.integers(0, len(text)))
        return (text[:at] + "café" + text[at:]).encode("latin-1", "replace")
    if kind == "utf-16":
        return text.encode("utf-16")  # with its byte-order mark
    if kind == "invalid-utf8":
        at = draw(st.integers(0, len(data)))
        return data[:at] + b"\xff\xfe\xc3" + data[at:]
    if kind == "empty":
        return draw(st.sampled_from([b"", b"\n", b"  \n\n"]))
    if kind == "deep":
        return b"[" * DEEP + b"]" * DEEP + b"\n"
    return b"\xef\xbb\xbf" + data  # a UTF-8 byte-order mark: must be read like the file


def assert_names_the_problem(exc: BaseException, path: str | Path) -> None:
    """``exc`` is a ctxbench error naming ``path``, where in it (unless the whole file is
    unreadable), and the fix."""
    assert isinstance(exc, CtxbenchError), repr(exc)
    assert exc.path == str(path), exc
    assert exc.hint, f"no hint: {exc}"
    if not any(words in exc.message for words in FILE_LEVEL):
        assert exc.line is not None or exc.key is not None, f"no line or key: {exc}"


def run_main(argv: Sequence[str]) -> tuple[int, str]:
    """``ctxbench ARGV`` through the console entry point: (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(list(argv))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue()


def assert_cli_reports(argv: Sequence[str], path: str | Path) -> None:
    """The command raises a ctxbench error (nothing else), and the console entry point turns
    it into exit code 2 and an ``error:`` line naming ``path`` plus its hint: no traceback."""
    result = CliRunner().invoke(cli, list(argv))
    assert isinstance(result.exception, CtxbenchError), repr(result.exception)
    code, err = run_main(argv)
    assert code == 2, (code, err)
    assert err.startswith("error: ") and str(path) in err.splitlines()[0], err
    assert "Traceback" not in err and "hint: " in err, err


#: A one-trace, one-strategy sweep (``{strategy}``; ``{extra}`` adds top-level keys).
SMALL_SWEEP = """
windows = [3000]
reserved = [200]
counters = ["chars4"]
{extra}
[[traces]]
path = "traces.jsonl"

[[strategies]]
name = "{strategy}"
"""


def small_sweep(folder: Path, strategy: str = "sliding_window", extra: str = "") -> Path:
    """``folder/sweep.toml`` over one small trace ``a`` in ``folder/traces.jsonl``."""
    from ctxbench.formats.canonical import write_traces
    from tests.factories import tool_trace

    write_traces(folder / "traces.jsonl", [tool_trace(6, output="x" * 800, trace_id="a")])
    path = folder / "sweep.toml"
    path.write_text(SMALL_SWEEP.format(strategy=strategy, extra=extra), "utf-8")
    return path
