"""A report page as data: sections made of a few block kinds, rendered by one template.

Building the page (what to say) is separate from rendering it (how it looks): section
builders return these frozen objects; :mod:`ctxbench.report.render` turns them into HTML with
autoescaping, so every string here is plain text, never markup. The one exception is
:class:`Chart`, whose SVG is drawn by :mod:`ctxbench.report.svg` (every text escaped there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ctxbench.report.table import Table


@dataclass(frozen=True)
class Paragraph:
    kind: ClassVar[str] = "paragraph"
    text: str
    style: str = ""


@dataclass(frozen=True)
class Bullets:
    kind: ClassVar[str] = "bullets"
    items: tuple[str, ...]


@dataclass(frozen=True)
class Heading:
    kind: ClassVar[str] = "heading"
    text: str
    id: str = ""


@dataclass(frozen=True)
class Chart:
    kind: ClassVar[str] = "chart"
    id: str
    svg: str
    caption: str


@dataclass(frozen=True)
class TableBlock:
    kind: ClassVar[str] = "table"
    table: Table


Block = Paragraph | Bullets | Heading | Chart | TableBlock


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    blocks: tuple[Block, ...] = ()


@dataclass(frozen=True)
class Page:
    title: str
    subtitle: str
    #: (label, value) shown as chips under the title of the first section
    facts: tuple[tuple[str, str], ...] = ()
    sections: tuple[Section, ...] = field(default=())
    generator: str = "ctxbench"
    #: VERDICT SLOT: the verdict strip shown above everything else (the recommendation of
    #: ctxbench.report.verdict when one is available); empty: nothing is shown
    verdict: tuple[Block, ...] = ()
