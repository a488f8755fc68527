"""ctxbench's tests, laid out like the package: ``tests/<package>/test_<module>.py`` tests
``ctxbench/<package>/<module>.py`` (``tests/test_layout.py`` keeps it so); the shared helpers
(factories, hardening, replaying, ...) sit here, importable as ``tests.<helper>``."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden"
