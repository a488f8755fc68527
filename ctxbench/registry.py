"""One small registry for every pluggable kind (strategies, counters, formats, summarizers).

Entries are lazy: a name maps to ``"module:attribute"`` and is imported only when used, so
``ctxbench --help`` never imports tokenizers or pandas. Unknown names get a "did you mean".
User plug-ins are given as an import path, ``mypkg.module:MyStrategy``.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Any

from ctxbench.errors import UnknownNameError


@dataclass(frozen=True)
class Entry:
    """A registered name: where its factory lives, and a one-line summary for listings (empty
    when the factory itself carries it, as strategy classes do)."""

    name: str
    target: str
    summary: str = ""
    source: str = ""


class Registry:
    """Name -> factory, loaded lazily."""

    def __init__(self, kind: str, list_command: str | None = None) -> None:
        self.kind = kind
        self.list_command = list_command
        self._entries: dict[str, Entry] = {}

    def add(self, name: str, target: str, summary: str = "", source: str = "") -> None:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = Entry(name, target, summary, source)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entries(self) -> list[Entry]:
        return [self._entries[n] for n in self.names()]

    def entry(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            raise self._unknown(name) from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def load(self, name: str) -> Any:
        """The factory for ``name``: a registered name, or a plug-in ``module:attr`` path."""
        if name in self._entries:
            return import_path(self._entries[name].target)
        prefix = name.partition(":")[0]
        if _looks_like_plugin(name) and prefix not in self._name_prefixes():
            return import_path(name, kind=self.kind)
        raise self._unknown(name)

    def _name_prefixes(self) -> set[str]:
        """Prefixes of registered names such as ``tiktoken`` in ``tiktoken:o200k_base``."""
        return {n.partition(":")[0] for n in self._entries if ":" in n}

    def _unknown(self, name: str) -> UnknownNameError:
        close = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else None
        listing = ", ".join(self.names())
        return UnknownNameError(
            f"unknown {self.kind} {name!r}; known: {listing}",
            hint=hint
            or f"run `ctxbench {self.kind}s` to list them, or give a plug-in as module:Class",
        )


def _looks_like_plugin(name: str) -> bool:
    module, sep, attr = name.partition(":")
    return bool(sep and module and attr and module.replace(".", "").replace("_", "").isalnum())


def import_path(path: str, *, kind: str = "object") -> Any:
    """Import ``package.module:attr``; errors name the path and what went wrong."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise UnknownNameError(
            f"{kind} {path!r} is not an import path",
            hint="give it as package.module:Name",
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownNameError(
            f"cannot import module {module_name!r} for {kind} {path!r}: {exc}",
            hint="check that the package is installed and on PYTHONPATH",
        ) from exc
    except Exception as exc:  # a plug-in module that fails while importing
        raise UnknownNameError(
            f"importing module {module_name!r} for {kind} {path!r} failed: "
            f"{type(exc).__name__}: {exc}",
            hint="fix the error in that module (run `python -c 'import "
            f"{module_name}'` to see the traceback)",
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UnknownNameError(
                f"module {module_name!r} has no attribute {attr!r} (for {kind} {path!r})",
            ) from None
    return obj
