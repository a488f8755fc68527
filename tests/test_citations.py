"""Nothing the program prints cites a document that does not ship with it: the design notes
(DESIGN.md, REFERENCE.md, RELEASES.md), the seed documents and docs/ stay in the repository.
Printed text is every string constant except module, class and function docstrings (a click
command's docstring is its ``--help``, so it counts as printed). The source itself (docstrings
and comments) cites only what the repository holds: the facts it takes from the design notes
and seed documents are in ``docs/sources.md``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "ctxbench"
UNSHIPPED = re.compile(r"\b(DESIGN|REFERENCE|RELEASES)\.md|\bseeds/|(?<![.\w])docs/\w+\.md")
#: the design notes and seed documents, which are not in the repository
NOTES = re.compile(r"\b(DESIGN|REFERENCE|RELEASES)\.md|\bseeds/|\b[Ss]eeds? 0\d\d\b")
#: a page of the repository's docs/ (not a path inside another project's docs)
DOCS_PAGE = re.compile(r"(?<![.\w/])docs/([\w.-]+\.md)")


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


def test_no_docstring_or_comment_cites_the_design_notes() -> None:
    found = [
        f"{path.relative_to(REPO)}:{n}: {NOTES.search(line)}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for n, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if NOTES.search(line)
    ]
    assert not found, "cite docs/sources.md instead:\n" + "\n".join(found)


def test_every_docs_page_the_source_cites_is_in_the_repository() -> None:
    cited = {
        match.group(1): path.relative_to(REPO)
        for path in sorted(PACKAGE.rglob("*.py"))
        for match in DOCS_PAGE.finditer(path.read_text("utf-8"))
    }
    assert "sources.md" in cited
    missing = [
        f"{where}: docs/{page}"
        for page, where in cited.items()
        if not (REPO / "docs" / page).is_file()
    ]
    assert not missing, "\n".join(missing)


def test_the_notes_pattern_catches_what_it_must() -> None:
    assert NOTES.search("as RELEASES.md reads it") and NOTES.search("(seed 003)")
    assert NOTES.search("seeds/000") and not NOTES.search("seeds = [0, 1]")
    assert DOCS_PAGE.search("see docs/sources.md").group(1) == "sources.md"  # type: ignore[union-attr]
    assert not DOCS_PAGE.search("``docs/docs/agents/modules/context-management.md``")
