"""Nothing the program prints cites a document that does not ship with it: the design notes
(DESIGN.md, REFERENCE.md, RELEASES.md), the seed documents and docs/ stay in the repository.
Printed text is every string constant except module, class and function docstrings (a click
command's docstring is its ``--help``, so it counts as printed)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ctxbench"
UNSHIPPED = re.compile(r"\b(DESIGN|REFERENCE|RELEASES)\.md|\bseeds/|(?<![.\w])docs/\w+\.md")


def printed_strings(tree: ast.Module) -> list[tuple[int, str]]:
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                is_command = isinstance(node, ast.FunctionDef) and any(
                    "command" in ast.unparse(d) for d in node.decorator_list
                )
                if not is_command:
                    docstrings.add(id(body[0].value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    ]


def test_no_printed_text_cites_an_unshipped_document() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {UNSHIPPED.search(text)}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in printed_strings(ast.parse(path.read_text("utf-8")))
        if UNSHIPPED.search(text)
    ]
    assert not found, "\n".join(found)


def test_the_pattern_catches_what_it_must() -> None:
    assert UNSHIPPED.search("compare with the schema in DESIGN.md")
    assert UNSHIPPED.search("ContextManager design document (seeds/003)")
    assert UNSHIPPED.search("see docs/plugins.md")
    assert not UNSHIPPED.search("docs.claude.com/en/docs/build-with-claude/context-editing")
