"""The package layers, enforced: every import (module level or lazy, found by walking the
AST) points down or sideways in :data:`LAYERS`, and no two units import each other in a cycle.

To place a new module or package, add its dotted name to the layer it belongs to; the
longest listed prefix wins. A top-level module nobody placed yet lands in ``unplaced``, just
below the command line: it may import anything but the command line, and nothing placed
below it may import it, so it can never break the layering silently.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ctxbench"

#: Lowest first. A unit imports only units of its own layer or of lower ones.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "ctxbench.errors",
            "ctxbench.config",
            "ctxbench.registry",
            "ctxbench.jsontext",
            "ctxbench.event_json",
            "ctxbench.resources",
            "ctxbench.atomic_file",
            "ctxbench.version",
            "ctxbench.sizes",
            "ctxbench.limits",
            "ctxbench.memo",
            "ctxbench.collector",
            "ctxbench.escaping",
            "ctxbench.bootstrap",
            "ctxbench.guard",
            "ctxbench.windows",
            "ctxbench.extras",
        ),
    ),
    (
        # the data model, and the protocols the pure engine is written against
        "model",
        (
            "ctxbench.trace",
            "ctxbench.pairing",
            "ctxbench.probes.model",
            # which probes a run lost and each kind's cliff: a pure function of the events
            "ctxbench.probes.losses",
            "ctxbench.engine.events",
            "ctxbench.engine.result",
            "ctxbench.counting.base",
            "ctxbench.summarizers.base",
            # the prompt-cache model the row is priced with (pure functions of events)
            "ctxbench.cost.cache",
            "ctxbench.cost.prices",
            "ctxbench.cost.ledger",
            "ctxbench.cost.summary",
            "ctxbench.cost.gaps",
        ),
    ),
    # validation checks a probe's answer with the scorer's matching; the replay finds the needed
    # values of its trace (a pure function of the trace) to see where the open loop breaks
    (
        "engine",
        (
            "ctxbench.engine",
            "ctxbench.probes.scoring",
            "ctxbench.probes.needed",
            "ctxbench.validation",
        ),
    ),
    (
        "components",
        (
            "ctxbench.counting",
            "ctxbench.strategies",
            "ctxbench.summarizers",
            "ctxbench.answering",
            "ctxbench.probes",
            "ctxbench.synth",
            "ctxbench.formats",
            "ctxbench.shipped",
            "ctxbench.trace_defaults",
        ),
    ),
    ("single replay", ("ctxbench.cell",)),
    ("results", ("ctxbench.results",)),
    (
        "analysis",
        (
            "ctxbench.sweep",
            "ctxbench.report",
            "ctxbench.divergence",
            "ctxbench.calibration",
            "ctxbench.recorded",
            "ctxbench.view",
            "ctxbench.parity",
            "ctxbench.cost",
        ),
    ),
    # answers drawn from the analyses: recommendations with their uncertainty, and the gate
    ("decisions", ("ctxbench.decisions",)),
    (
        "gate",
        ("ctxbench.gate", "ctxbench.testing", "ctxbench.pytest_plugin"),
    ),
    ("unplaced", ()),
    ("command line", ("ctxbench.cli", "ctxbench.__main__", "ctxbench")),
)
UNPLACED = "unplaced"


def module_names() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """Every ctxbench module ``name`` imports (``from pkg import sub`` names the submodule)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("ctxbench"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            if base.split(".")[0] != "ctxbench":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield sub if sub in modules else base


def unit_of(name: str) -> tuple[int, str]:
    """(layer index, unit): the longest listed prefix of ``name``; an unlisted top-level
    module is its own unit in ``unplaced``."""
    best: tuple[int, str] | None = None
    for index, (_, units) in enumerate(LAYERS):
        for unit in units:
            if (name == unit or name.startswith(unit + ".")) and (
                best is None or len(unit) > len(best[1])
            ):
                best = (index, unit)
    top = ".".join(name.split(".")[:2])
    if best is None or (best[1] == "ctxbench" and name != "ctxbench"):
        return [n for n, _ in LAYERS].index(UNPLACED), top
    return best


def arrows() -> set[tuple[str, str]]:
    modules = module_names()
    return {
        (name, target)
        for name, path in modules.items()
        for target in imports_of(name, path, modules)
        if unit_of(name)[1] != unit_of(target)[1]
    }


def test_every_import_points_down_or_sideways() -> None:
    wrong = sorted(
        f"{a} ({LAYERS[unit_of(a)[0]][0]}) imports {b} ({LAYERS[unit_of(b)[0]][0]})"
        for a, b in arrows()
        if unit_of(b)[0] > unit_of(a)[0]
    )
    assert not wrong, "\n".join(wrong)


def test_no_two_units_import_each_other() -> None:
    graph: dict[str, set[str]] = {}
    for a, b in arrows():
        graph.setdefault(unit_of(a)[1], set()).add(unit_of(b)[1])
    cycles = []
    for start in sorted(graph):
        stack, seen = [(start, [start])], set()
        while stack:
            node, trail = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    cycles.append(" -> ".join([*trail, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*trail, nxt]))
    assert not cycles, "\n".join(cycles)


def test_the_table_places_every_existing_unit() -> None:
    """The checks above are only as good as the table: its units exist, and the walk sees
    the arrows it must (a lazy import inside a function included)."""
    modules = module_names()
    for _, units in LAYERS:
        for unit in units:
            assert unit in modules, f"{unit} is in LAYERS but not in the package"
    assert ("ctxbench.cell.runner", "ctxbench.strategies") in arrows()
    assert ("ctxbench.report.write", "ctxbench.cell.traces") in arrows()  # a lazy import
