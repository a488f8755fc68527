"""No module outside ``ctxbench/strategies/`` names a strategy: what a strategy takes from a
trace, a native config file or a recorded compaction comes from hooks on its class
(``reproduces``, ``starter``, ``native_section``, ``trace_defaults``,
``recorded_summary_request``), so a new strategy needs no edit anywhere else.

The scan walks every module's AST (docstrings left out) for a text constant equal to a
registered strategy's name. A name that is also something else (the estimators named after
their frameworks, the recorded formats, the word ``none``) counts only where it stands for a
strategy: a ``strategy=`` argument, a parameter named ``strategy``'s default, a comparison with
something called ``strategy``, a ``--strategy`` option's default. ``ctxbench/shipped/`` names
the frameworks its released code comes from (a release and the reproduction it is checked
against) and is left out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from ctxbench.counting import COUNTERS
from ctxbench.formats import FORMATS
from ctxbench.strategies import STRATEGIES

PACKAGE = Path(__file__).resolve().parents[1] / "ctxbench"
#: where strategies may be named: their own package, and the released frameworks' drivers
HOMES = ("strategies", "shipped")
#: the names that mean something else too
OTHER_MEANINGS = frozenset(COUNTERS.names()) | frozenset(FORMATS.names()) | {"none"}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of ``tree``'s module, classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _says_strategy(node: ast.AST) -> bool:
    return "strateg" in ast.unparse(node).lower()


def _strategy_positions(tree: ast.AST) -> set[int]:
    """The ids of the constants that stand where a strategy's name goes."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "strategy":
            out.add(id(node.value))
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_says_strategy(s) for s in sides if not isinstance(s, ast.Constant)):
                out.update(id(s) for s in sides)
                out.update(
                    id(e) for s in sides if isinstance(s, (ast.Tuple, ast.Set)) for e in s.elts
                )
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = args.posonlyargs + args.args
            for arg, default in zip(
                positional[len(positional) - len(args.defaults) :], args.defaults
            ):
                if "strategy" in arg.arg:
                    out.add(id(default))
            for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults):
                if kw_default is not None and "strategy" in arg.arg:
                    out.add(id(kw_default))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_says_strategy(t) for t in targets):  # a table of strategies
                out.update(id(c) for c in ast.walk(node.value) if isinstance(c, ast.Constant))
        elif isinstance(node, ast.Call) and any(
            isinstance(a, ast.Constant) and a.value == "--strategy" for a in node.args
        ):
            out.update(id(k.value) for k in node.keywords if k.arg == "default")
    return out


def strategy_names_outside(package: Path = PACKAGE) -> Iterator[str]:
    """``path:line: name`` for every strategy named outside :data:`HOMES`."""
    names = set(STRATEGIES.names())
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] in HOMES:
            continue
        tree = ast.parse(path.read_text("utf-8"))
        skip, positions = _docstrings(tree), _strategy_positions(tree)
        found = [
            (node.lineno, node.col_offset, node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in names
            and id(node) not in skip
            and (node.value not in OTHER_MEANINGS or id(node) in positions)
        ]
        for line, _, name in sorted(found):
            yield f"{path.relative_to(package).as_posix()}:{line}: {name}"


def test_no_module_outside_strategies_names_a_strategy() -> None:
    found = list(strategy_names_outside())
    assert not found, "strategies named outside ctxbench/strategies/ (use a hook):\n" + "\n".join(
        found
    )


def test_the_scan_finds_a_strategy_special_cased_by_name(tmp_path: Path) -> None:
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "running.py").write_text(
        '"""Named in a docstring: sliding_window is fine here."""\n'
        "def params(strategy: str = 'none') -> None:\n"
        "    if strategy != 'dbgpt':\n"
        "        raise ValueError\n"
        "ESTIMATORS = ('chars4', 'dbgpt')\n"
        "STARTERS = ('sliding_window',)\n"
        "FRAMEWORK_STRATEGIES = {'codex': 'codex'}\n",
        "utf-8",
    )
    (tmp_path / "strategies").mkdir()
    (tmp_path / "strategies" / "own.py").write_text("NAME = 'sliding_window'\n", "utf-8")
    assert list(strategy_names_outside(tmp_path)) == [
        "cli/running.py:2: none",
        "cli/running.py:3: dbgpt",
        "cli/running.py:6: sliding_window",
        "cli/running.py:7: codex",
        "cli/running.py:7: codex",
    ]
