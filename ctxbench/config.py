"""Typed configuration: frozen dataclasses built from TOML tables and ``--set KEY=VALUE``.

Precedence is defaults < file < command line. Unknown keys are errors that name the key, the
file and the valid keys (with types and defaults). Values are converted by the field's declared
type, never guessed: ``--set warning_threshold=0.7`` is a float because the field is a float.
Falsy values (0, "", false) are values, never "unset".
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import types
import typing
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ctxbench.errors import ConfigError
from ctxbench.guard import small_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

C = TypeVar("C")

#: The range of an int field: result tables store integers as int64.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def describe_fields(cls: type) -> list[dict[str, Any]]:
    """``[{name, type, default, help}]`` for every field of a config dataclass."""
    hints = _field_types(cls)
    out = []
    for f in dataclasses.fields(cls):
        default: Any = None
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        out.append(
            {
                "name": f.name,
                "type": _type_name(hints[f.name]),
                "default": _jsonable(default),
                "help": f.metadata.get("help", ""),
            }
        )
    return out


def _type_name(tp: Any) -> str:
    if isinstance(tp, type) and typing.get_origin(tp) is None:  # 3.10: dict[str, int] is a type
        return tp.__name__
    return str(tp).replace("typing.", "")


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return value


def _valid_keys(cls: type) -> str:
    return ", ".join(
        f"{d['name']} ({d['type']}, default {d['default']!r})" for d in describe_fields(cls)
    )


class _Expected(Exception):
    """A value that is not of its declared type: what was expected, and the value as read."""

    def __init__(self, expected: str, value: Any) -> None:
        super().__init__(expected)
        self.expected = expected
        self.value = value


def coerce(value: Any, tp: Any, *, key: str, source: str | None) -> Any:
    """Convert ``value`` to the declared type ``tp``; raise ConfigError naming the key."""
    try:
        return _convert(value, tp)
    except _Expected as exc:
        shown = exc.value
        got = json.dumps(shown) if isinstance(shown, bool) else repr(shown)  # as the file has it
        raise ConfigError(
            f"expected {exc.expected}, got {got}",
            path=source,
            key=key,
            hint=f"give {key} as {exc.expected}",
        ) from None


def _convert(value: Any, tp: Any) -> Any:
    """``value`` as ``tp``, or :class:`_Expected` (a list's item: the item's)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _union(value, typing.get_args(tp))
    if origin is typing.Literal:
        if value in typing.get_args(tp):
            return value
        raise _Expected("one of " + ", ".join(repr(a) for a in typing.get_args(tp)), value)
    if origin in (tuple, Sequence, list):
        args = typing.get_args(tp)
        return _sequence(value, args[0] if args else Any)
    if origin in (dict, Mapping) or tp is dict:
        return _mapping(value)
    if tp is Any:
        return value
    scalar = _SCALARS.get(tp)
    if scalar is None:
        raise _Expected(_type_name(tp), value)
    return scalar(value)


def _union(value: Any, args: tuple[Any, ...]) -> Any:
    """The first of ``args`` that takes ``value`` (None, "none" or "null" for an optional)."""
    if type(None) in args and (
        value is None or (isinstance(value, str) and value.lower() in ("none", "null"))
    ):
        return None
    for arg in args:
        if arg is type(None):
            continue
        try:
            return _convert(value, arg)
        except _Expected:
            continue
    raise _Expected(" or ".join(_type_name(a) for a in args), value)


def _sequence(value: Any, item_tp: Any) -> tuple[Any, ...]:
    """A tuple of ``item_tp`` from a list, a JSON list or a comma-separated string."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # not JSON: a comma-separated list
            value = [v.strip() for v in value.split(",") if v.strip()] if value.strip() else []
    if not isinstance(value, (list, tuple)):
        raise _Expected("a list", value)
    return tuple(_convert(v, item_tp) for v in value)


def _mapping(value: Any) -> dict[Any, Any]:
    """A dict from a table or a JSON object."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise _Expected("a JSON object", value) from None
    if not isinstance(value, Mapping):
        raise _Expected("a table / JSON object", value)
    return dict(value)


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.lower() in ("true", "1", "yes")
    raise _Expected("true or false", value)


def _to_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _Expected("an integer", value)
    try:
        number = value if isinstance(value, int) else int(value.replace("_", ""))
    except ValueError:
        raise _Expected("an integer", value) from None
    if not INT64_MIN <= number <= INT64_MAX:  # results are stored as int64
        raise _Expected("an integer of at most 64 bits", value)
    return number


def _to_float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _Expected("a number", value)
    try:
        result = float(value.replace("_", "")) if isinstance(value, str) else float(value)
    except ValueError:
        raise _Expected("a number", value) from None
    if not math.isfinite(result):
        raise _Expected("a finite number (not NaN or infinity)", value)
    return result


def _to_str(value: Any) -> str:
    if not isinstance(value, str):
        raise _Expected("a string", value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: not text any file could hold
        raise _Expected("valid Unicode text", value) from None
    return value


_SCALARS: dict[Any, Any] = {bool: _to_bool, int: _to_int, float: _to_float, str: _to_str}


def unknown_key(
    key: str, known: Sequence[str], *, valid: str, path: str | Path | None
) -> ConfigError:
    """The error for a key that is not one of ``known`` (``valid`` lists them), with the
    closest known key as its hint."""
    import difflib

    close = difflib.get_close_matches(key, list(known), n=1)
    return ConfigError(
        f"unknown key {key!r}; valid keys: {valid}",
        path=path,
        key=key,
        hint=f"did you mean {close[0]!r}?" if close else "remove it or fix its spelling",
    )


def build(cls: type[C], params: Mapping[str, Any], *, source: str | None = None) -> C:
    """Build config ``cls`` from ``params``; unknown keys and bad values are ConfigErrors."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = _field_types(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs: dict[str, Any] = {}
    for key, value in params.items():
        if key not in hints:
            raise unknown_key(key, names, valid=_valid_keys(cls), path=source)
        kwargs[key] = coerce(value, hints[key], key=key, source=source)
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            str(exc),
            path=source,
            key=field_named(str(exc), names, given=kwargs),
            hint=f"valid keys: {_valid_keys(cls)}",
        ) from None


def require_non_negative(config: object, *names: str) -> None:
    """A ``__post_init__`` check: the first of ``names`` below 0 is a ``ValueError`` (None, a
    field left unset, passes), worded the same for every config."""
    for name in names:
        value = getattr(config, name)
        if value is not None and value < 0:
            raise ValueError(f"{name} must be >= 0, not {value}")


def require_positive(config: object, *names: str) -> None:
    """A ``__post_init__`` check: the first of ``names`` at or below 0 is a ``ValueError``."""
    for name in names:
        value = getattr(config, name)
        if value is not None and value <= 0:
            raise ValueError(f"{name} must be > 0, not {value}")


def field_named(message: str, names: Sequence[str], given: Collection[str] = ()) -> str | None:
    """The field a ``__post_init__`` check's message is about: the first field it names,
    preferring fields the user set (``0 < warning_threshold <= error_threshold``, only
    ``error_threshold`` given, is about ``error_threshold``)."""
    import re

    found = sorted(
        (match.start(), name)
        for name in names
        if (match := re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message))
    )
    chosen = [name for _, name in found if name in given] or [name for _, name in found]
    return chosen[0] if chosen else None


def to_params(config: Any) -> dict[str, Any]:
    """The config as plain JSON-able params (every field, so a row can be re-run exactly)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def parse_set(values: Sequence[str]) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``; values stay text until typed by ``build``."""
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                f"--set {item!r} is not KEY=VALUE",
                hint="for example --set warning_threshold=0.6",
            )
        out[key.strip()] = value.strip()
    return out


def load_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file; syntax errors name the file and line. A UTF-8 byte-order mark
    (as Windows editors write) is skipped."""
    path = small_file(path, what="a TOML file", hint="give a TOML file")
    try:
        text = path.read_text("utf-8-sig")
    except FileNotFoundError:
        raise ConfigError("no such file", path=path, hint="check the path") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})",
            path=path,
            hint="save the file as UTF-8",
        ) from None
    except OSError as exc:  # a directory, no permission
        raise ConfigError(
            f"cannot read: {exc.strerror or exc}", path=path, hint="give a readable TOML file"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        if line is None:
            import re

            found = re.search(r"line (\d+)", str(exc))
            line = int(found.group(1)) if found else text.count("\n") + 1  # "end of document"
        raise ConfigError(
            f"invalid TOML: {exc}",
            path=path,
            line=line,
            hint="fix the TOML syntax on that line (strings in quotes, one key = value per line)",
        ) from None
    except RecursionError:
        raise ConfigError(
            "TOML nested too deeply", path=path, hint="flatten the arrays and tables"
        ) from None
    except ValueError:  # an integer longer than Python converts
        raise ConfigError(
            "a number has too many digits to read",
            path=path,
            hint="numbers are counts and sizes: write them with fewer digits",
        ) from None


def check_template(template: str, fields: Collection[str], *, key: str) -> None:
    """A ``str.format`` template from a config: only ``fields``, no attribute or index access,
    and no width or precision over :data:`~ctxbench.limits.MAX_FORMAT_WIDTH` (checked without
    formatting, so ``{summary:>1000000000}`` costs nothing). Raises ValueError naming ``key``."""
    import re
    import string

    from ctxbench.limits import MAX_FORMAT_WIDTH

    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"{key} is not a valid format template: {exc}") from None
    for _, name, spec, _ in parsed:
        if name is None:
            continue
        if name not in fields:
            raise ValueError(f"{key} must only use the fields {', '.join(fields)}, not {{{name}}}")
        if "{" in (spec or ""):
            raise ValueError(
                f"nested fields in a format spec of {key} are not allowed ({{{name}}})"
            )
        widths = [int(n) for n in re.findall(r"\d+", spec or "")]
        if widths and max(widths) > MAX_FORMAT_WIDTH:
            raise ValueError(
                f"the width or precision {max(widths)} in {{{name}:{spec}}} of {key} is over "
                f"the limit of {MAX_FORMAT_WIDTH}"
            )
