"""JSON text from the user's files, parsed so that every failure is a ctxbench error.

``json.loads`` rejects bad input in three ways: a syntax error (``JSONDecodeError``), an
integer longer than Python's conversion limit (a plain ``ValueError``) and nesting deeper
than the recursion limit (``RecursionError``). Every reader of a user file parses through
:func:`loads`, so all three name the file, the line and the fix, in the reader's own error
class.

It also accepts one thing ``json.loads`` lets through but nothing after it can handle: a lone
surrogate escape (``"\\ud83d"``, half an emoji cut by a recorder that truncates UTF-16
strings). Python keeps it as a code point that cannot be encoded, so printing, hashing,
tokenizing or writing the value would fail far from the file. Like Go's ``encoding/json``,
:func:`loads` replaces it with U+FFFD.

The other way, :func:`compact_json` is the one compact encoder of ctxbench's own lines (events,
journal records): a sweep writes a hundred thousand events.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, AnyStr

from ctxbench.errors import ConfigError, CtxbenchError
from ctxbench.limits import MAX_LINE_CHARS


def _compact_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``: the C encoder made
    once (``JSONEncoder.encode`` makes one per call, a third of its time on an event), when
    this Python has it and it gives the same text; no check for circular references (a
    cycle ends in a RecursionError)."""
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encode
    try:
        chunks = make(
            None, json.JSONEncoder().default, json.encoder.encode_basestring,
            None, ":", ",", False, False, True,
        )  # fmt: skip
    except TypeError:  # another signature
        return encode

    def compact(value: Any) -> str:
        return "".join(chunks(value, 0))

    sample = {"a": [1, 2.5, None, True, "\u00e9\n"], "b": {"c": float("nan"), "d": 1e16}}
    return compact if compact(sample) == encode(sample) else encode


#: ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, faster
compact_json = _compact_encoder()

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # the JSON escape of a surrogate
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def loads(
    text: str | bytes,
    *,
    path: str | Path,
    line: int | None = None,
    error: type[CtxbenchError] = ConfigError,
    hint: str = "fix the JSON syntax",
) -> Any:
    """The value of ``text``; ``line`` is the line of a JSON Lines file (else the error's).
    A leading UTF-8 byte-order mark (as Windows editors write) is skipped."""
    if isinstance(text, str):
        text = text.removeprefix("\ufeff")
    try:
        return well_formed(json.loads(text), text)
    except json.JSONDecodeError as exc:
        raise error(
            f"malformed JSON: {exc.msg} (column {exc.colno})",
            path=path,
            line=line if line is not None else exc.lineno,
            hint=hint,
        ) from None
    except UnicodeDecodeError as exc:  # bytes that are not UTF-8
        raise error(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})",
            path=path,
            line=line,
            hint="re-encode the file as UTF-8",
        ) from None
    except ValueError:  # an integer literal longer than sys.get_int_max_str_digits()
        raise error(
            "a number has too many digits to read",
            path=path,
            line=line,
            hint="numbers are counts and ids: write them with fewer digits, or as strings",
        ) from None
    except RecursionError:
        raise error(
            "JSON nested too deeply", path=path, line=line, hint="flatten the data"
        ) from None


def well_formed(value: Any, text: str | bytes) -> Any:
    """``value`` (parsed from ``text``) with lone surrogates replaced by U+FFFD. Only text
    with a surrogate escape can hold one, so other values are returned as they are."""
    escaped = (
        _SURROGATE_ESCAPE.search(text) is not None
        if isinstance(text, str)
        else _SURROGATE_ESCAPE_BYTES.search(text) is not None
    )
    if not escaped:
        return value
    return _replace_surrogates(value)


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        if _SURROGATE.search(value) is None:
            return value
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value


def bounded_lines(
    fh: IO[AnyStr], *, path: str | Path, error: type[CtxbenchError] = ConfigError
) -> Iterator[tuple[int, AnyStr]]:
    """``(line number, line)`` of a JSON Lines file; a line over
    :data:`~ctxbench.limits.MAX_LINE_CHARS` is an error as soon as that much of it is read."""
    lineno = 0
    while True:
        line = fh.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        lineno += 1
        if len(line) > MAX_LINE_CHARS:
            raise _too_long(f"line {lineno} is", path, lineno, error)
        yield lineno, line


def bounded_read(
    fh: IO[AnyStr], *, path: str | Path, error: type[CtxbenchError] = ConfigError
) -> AnyStr:
    """A whole JSON document, refused when over :data:`~ctxbench.limits.MAX_LINE_CHARS`."""
    text = fh.read(MAX_LINE_CHARS + 1)
    if len(text) > MAX_LINE_CHARS:
        raise _too_long("the document is", path, None, error)
    return text


def _too_long(
    what: str, path: str | Path, line: int | None, error: type[CtxbenchError]
) -> CtxbenchError:
    return error(
        f"{what} longer than {MAX_LINE_CHARS:,} characters, the limit of one JSON record "
        "(ctxbench.limits.MAX_LINE_CHARS)",
        path=path,
        line=line,
        hint="one record per line: split the file, or is this not a JSON (Lines) file?",
    )


def refuse_device(path: str | Path, error: type[CtxbenchError] = ConfigError) -> None:
    """An error for a FIFO, a device or a socket given as a file (``/dev/zero`` never ends, a
    FIFO hangs its reader): :func:`ctxbench.guard.regular_file`."""
    from ctxbench.guard import regular_file

    regular_file(path, error=error, hint="give a regular file (a trace or results file)")


def json_lines(
    lines: Iterable[tuple[int, str]],
    *,
    path: str | Path,
    error: type[CtxbenchError] = ConfigError,
    hint: str,
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of the non-blank ``lines`` of a JSON Lines file (from
    :func:`bounded_lines` or :func:`text_lines`); a line that is not JSON raises ``error``."""
    for lineno, line in lines:
        if line.strip():
            yield lineno, loads(line, path=path, line=lineno, error=error, hint=hint)


def text_lines(
    path: str | Path, *, error: type[CtxbenchError] = ConfigError, hint: str
) -> Iterator[tuple[int, str]]:
    """Numbered lines of a UTF-8 text file (a byte-order mark skipped; gunzipped, bounded, when
    it ends in ``.gz``), streamed; a file that is missing, unreadable, not UTF-8 or not a
    regular file raises ``error`` naming it, with ``hint``."""
    from ctxbench.guard import open_text

    try:
        with open_text(path, error=error) as fh:
            yield from bounded_lines(fh, path=path, error=error)
    except FileNotFoundError:
        raise error("no such file", path=path, hint=hint) from None
    except UnicodeDecodeError as exc:
        raise error(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=path, hint=hint
        ) from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", path=path, hint=hint) from None


def require_object(data: Any, what: str) -> Mapping[str, Any]:
    """``data`` when it is a JSON object, else a ``TypeError`` saying that ``what`` must be one."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{what} must be an object, not {type(data).__name__}")
    return data


def with_meta(out: dict[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """``out`` with ``meta`` as its last key when there is any (an empty one is left out)."""
    if meta:
        out["meta"] = dict(meta)
    return out


def attrs(obj: object, names: str) -> dict[str, Any]:
    """``{name: obj.name}`` for each of the space-separated ``names``, in their order: the
    plain fields of an object's JSON dict (its ``to_dict`` adds the converted ones)."""
    return {name: getattr(obj, name) for name in names.split()}
