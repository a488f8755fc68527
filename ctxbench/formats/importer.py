"""What every recorded-format importer provides: a detector and a reader of canonical traces.

An importer is a pair of pure functions over an opened :class:`Document`. ``detect`` looks at
the document's first value and answers whether the file is in its format; ``read`` yields
canonical traces and raises :class:`~ctxbench.errors.TraceFormatError` naming the file, line
and JSON path when the shape is wrong. Keys an importer does not map go to ``meta``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ctxbench.formats.document import Document
from ctxbench.trace import Trace


@dataclass(frozen=True)
class ImportOptions:
    """Knobs a few formats need. ``messages_column`` names the messages field of dataset rows."""

    messages_column: str | None = None


@dataclass(frozen=True)
class Importer:
    """A recorded format: its name, what its files look like, how to detect and read them."""

    name: str
    expects: str
    detect: Callable[[Document], bool]
    read: Callable[[Document, ImportOptions], Iterator[Trace]]
