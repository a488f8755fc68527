"""The tests mirror the package: ``tests/<package>/test_<module>.py`` for ``ctxbench/<package>/``,
``tests/test_<module>[_<topic>].py`` for a top-level module ``ctxbench/<module>.py``, hardening
tests beside what they harden. A test file that sits flat under a name no module has, or in a
folder no package has, fails here (issue 15), so the layout stays as new tests arrive."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import REPO

TESTS = REPO / "tests"
PACKAGE = REPO / "ctxbench"
# importable helpers shared by the test files (``from tests.factories import ...``)
HELPERS = frozenset(
    {
        "__init__.py",
        "conftest.py",
        "factories.py",
        "fuzz_inputs.py",
        "hardening.py",
        "replaying.py",
        "report_data.py",
        "shipped_cases.py",
        "viewing.py",
    }
)
# tests of the package as a whole, not of one module
WHOLE_PACKAGE = frozenset(
    {
        "test_citations.py",
        "test_events_golden.py",
        "test_layers.py",
        "test_layout.py",
        "test_onboarding.py",
        "test_strategy_names.py",
        "test_structure_golden.py",
    }
)
# folders that are not a package's mirror: golden files and their generators, the releases'
# own unit tests, parity against the released frameworks, the scripted shipped driver, the
# benchmarks' own logic (``benchmarks/``)
OTHER_FOLDERS = frozenset({"golden", "upstream", "parity", "shipped_drivers", "benchmarks"})


def top_level_modules(package: Path) -> frozenset[str]:
    return frozenset(p.stem for p in package.glob("*.py") if p.stem != "__init__")


def misplaced(files: list[Path], tests: Path, package: Path) -> list[str]:
    """Each file under ``tests`` that breaks the layout, with the reason."""
    modules = top_level_modules(package)
    problems: list[str] = []
    for path in files:
        rel = path.relative_to(tests)
        if rel.parts[0] in OTHER_FOLDERS or "__pycache__" in rel.parts:
            continue
        if len(rel.parts) == 1:
            if rel.name in HELPERS or rel.name in WHOLE_PACKAGE:
                continue
            stem = rel.stem.removeprefix("test_")
            if not rel.name.startswith("test_"):
                problems.append(f"{rel}: a helper not listed in HELPERS")
            elif not any(stem == m or stem.startswith(m + "_") for m in modules):
                problems.append(f"{rel}: flat, but ctxbench has no module {stem.split('_')[0]}.py")
            continue
        folder = package.joinpath(*rel.parts[:-1])
        if not (folder / "__init__.py").is_file():
            problems.append(f"{rel}: ctxbench/{'/'.join(rel.parts[:-1])} is not a package")
        elif not (path.parent / "__init__.py").is_file():
            problems.append(f"{rel}: its folder has no __init__.py (basenames would collide)")
    return problems


def test_every_test_file_mirrors_the_package() -> None:
    files = sorted(TESTS.rglob("*.py"))
    assert len(files) > 100
    assert misplaced(files, TESTS, PACKAGE) == []


@pytest.mark.parametrize(
    ("relative", "reason"),
    [
        ("test_report_pareto.py", "no module report.py"),
        ("test_hardening_resume.py", "no module hardening.py"),
        ("helpers.py", "a helper not listed"),
        ("nowhere/test_x.py", "ctxbench/nowhere is not a package"),
        ("report/templates/test_x.py", "ctxbench/report/templates is not a package"),
    ],
)
def test_a_misplaced_file_is_named_with_its_reason(
    tmp_path: Path, relative: str, reason: str
) -> None:
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("", encoding="utf-8")
    problems = misplaced([path], tmp_path, PACKAGE)
    assert len(problems) == 1
    assert reason in problems[0]


@pytest.mark.parametrize(
    "relative",
    ["test_trace.py", "test_guard_fuzz.py", "report/test_pareto.py", "conftest.py"],
)
def test_a_file_in_its_place_passes(tmp_path: Path, relative: str) -> None:
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "__init__.py").write_text("", encoding="utf-8")
    path.write_text("", encoding="utf-8")
    assert misplaced([path], tmp_path, PACKAGE) == []


def test_a_mirror_folder_without_init_is_named(tmp_path: Path) -> None:
    path = tmp_path / "report" / "test_pareto.py"
    path.parent.mkdir()
    path.write_text("", encoding="utf-8")
    assert misplaced([path], tmp_path, PACKAGE) == [
        "report/test_pareto.py: its folder has no __init__.py (basenames would collide)"
    ]
