"""One small registry for every pluggable kind (strategies, counters, formats, summarizers).

Entries are lazy: a name maps to ``"module:attribute"`` and is imported only when used, so
``ctxbench --help`` never imports tokenizers or pandas. Unknown names get a "did you mean".
User plug-ins are given as an import path, ``mypkg.module:MyStrategy``.

Files are data (issue 22): a results directory, a row, a sweep file, a baseline or an events
file can name a plug-in, but naming it must not run it. The Python API trusts its caller; the
command line (:func:`plugin_policy`) imports only the plug-ins its arguments name, or any
plug-in with ``ctxbench --allow-plugins``. A refused plug-in is an error naming it and the fix.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import importlib
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
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


@dataclass(frozen=True)
class PluginPolicy:
    """Which plug-in import paths may be imported: every one (``allowed`` is None: the Python
    API, or ``--allow-plugins``), or only those named on the command line."""

    allowed: frozenset[str] | None = None

    def permits(self, path: str) -> bool:
        return self.allowed is None or path in self.allowed


_policy = PluginPolicy()


@contextlib.contextmanager
def plugin_policy(allowed: Iterable[str] | None) -> Iterator[PluginPolicy]:
    """Import only the plug-ins in ``allowed`` (every one when None) while the block runs."""
    global _policy
    previous = _policy
    _policy = PluginPolicy(None if allowed is None else frozenset(allowed))
    try:
        yield _policy
    finally:
        _policy = previous


def plugin_permitted(path: str) -> bool:
    """Whether plug-in ``path`` may be imported under the policy in force."""
    return _policy.permits(path)


def plugin_words(args: Iterable[str]) -> set[str]:
    """The plug-in paths a command line names: every argument, ``--opt=VALUE`` and
    ``KEY=VALUE`` value that has the ``module:attr`` shape."""
    words = set()
    for arg in args:
        for word in (arg, arg.partition("=")[2]):
            if _looks_like_plugin(word):
                words.add(word)
    return words


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
            if not _policy.permits(name):
                raise UnknownNameError(
                    f"{self.kind} plug-in {name!r} is named by a file, not on the command "
                    "line: ctxbench does not import code that data names",
                    hint="if you trust it, add --allow-plugins to the command (`ctxbench "
                    "sweep FILE -o DIR --allow-plugins`, `ctxbench report DIR --allow-plugins`), "
                    f"or name it on the command line (`ctxbench run ... --{self.kind} {name}`)",
                )
            return import_path(name, kind=self.kind)
        raise self._unknown(name)

    def _name_prefixes(self) -> set[str]:
        """Prefixes of registered names such as ``tiktoken`` in ``tiktoken:o200k_base``."""
        return {n.partition(":")[0] for n in self._entries if ":" in n}

    def _unknown(self, name: str) -> UnknownNameError:
        close = suggestions(name, self.names())
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else None
        listing = ", ".join(self.names())
        listed = f"run `{self.list_command}` to list them, or " if self.list_command else ""
        return UnknownNameError(
            f"unknown {self.kind} {name!r}; known: {listing}",
            hint=hint or f"{listed}give a plug-in as module:Class",
        )


def suggestions(name: str, names: list[str], n: int = 3) -> list[str]:
    """Known names close to ``name``: those that contain it or that it contains (``o200k``
    -> ``tiktoken:o200k_base``, ``sql`` -> ``sql_agent``), then close spellings."""
    lowered = name.lower()
    within = [k for k in names if lowered and (lowered in k.lower() or k.lower() in lowered)]
    close = difflib.get_close_matches(name, names, n=n, cutoff=0.5)
    return list(dict.fromkeys([*within, *close]))[:n]


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


#: A package holding more source than this is hashed by its plug-in's module file alone.
MAX_HASHED_BYTES = 64 * 1024 * 1024

_versions: dict[str, str] = {}


def plugin_version(path: str) -> str:
    """What identifies the code of plug-in ``path`` (``module:attr``), for a cell's identity:
    ``version:V`` when the plug-in (or its module) declares ``__version__ = "V"`` (the
    author's promise that behaviour changes bump it), else ``sha256:`` of its source: every
    ``.py`` file of the top-level package its module belongs to (a helper it imports counts
    too), or the module's file alone when it is not in a package. Computed once per process;
    a module without a source file gives "" (not tracked)."""
    found = _versions.get(path)
    if found is not None:
        return found
    module_name = path.partition(":")[0]
    obj: Any = import_path(path)
    module = sys.modules.get(module_name)
    version = getattr(obj, "__version__", None) or getattr(module, "__version__", None)
    if isinstance(version, str) and version:
        found = f"version:{version}"
    else:
        found = _source_hash(module_name)
    _versions[path] = found
    return found


def _source_hash(module_name: str) -> str:
    top = sys.modules.get(module_name.partition(".")[0])
    module = sys.modules.get(module_name)
    files: list[tuple[str, Path]] = []
    roots = [Path(p) for p in getattr(top, "__path__", ()) if p]
    for root in roots:
        for file in sorted(root.rglob("*.py")):
            if "__pycache__" not in file.parts:
                files.append((f"{root.name}/{file.relative_to(root).as_posix()}", file))
    if not files or sum(f.stat().st_size for _, f in files) > MAX_HASHED_BYTES:
        origin = getattr(module, "__file__", None)
        files = [(Path(origin).name, Path(origin))] if origin else []
    if not files:
        return ""
    digest = hashlib.sha256()
    for name, file in files:
        try:
            data = file.read_bytes()
        except OSError:
            continue
        digest.update(name.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(hashlib.sha256(data).digest())
    return "sha256:" + digest.hexdigest()[:16]


def is_plugin_path(name: str, registries: Iterable[Registry]) -> bool:
    """Whether ``name`` is a plug-in import path rather than a name one of ``registries`` holds."""
    return _looks_like_plugin(name) and not any(
        name in r or name.partition(":")[0] in r._name_prefixes() for r in registries
    )
