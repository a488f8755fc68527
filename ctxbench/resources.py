"""Where ctxbench's data folders live: ``tokenizers/`` and ``scenarios/`` at the repository root.

Lookup order: the environment variable ``CTXBENCH_<NAME>_DIR``; the folder beside the package
(a source checkout or an editable install).
"""

from __future__ import annotations

import os
from pathlib import Path

from ctxbench.errors import CtxbenchError

PACKAGE_ROOT = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_ROOT.parent


def resource_dir(name: str) -> Path:
    """The data folder ``name`` (``tokenizers`` or ``scenarios``)."""
    override = os.environ.get(f"CTXBENCH_{name.upper()}_DIR")
    if override:
        path = Path(override)
        if not path.is_dir():
            raise CtxbenchError(
                f"CTXBENCH_{name.upper()}_DIR points to {path}, which is not a directory",
                hint=f"unset it to use the {name}/ folder of the ctxbench checkout",
            )
        return path
    for candidate in (REPO_ROOT / name, PACKAGE_ROOT / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise CtxbenchError(
        f"cannot find ctxbench's {name}/ folder (looked in {REPO_ROOT / name})",
        hint=f"install ctxbench from its repository checkout (pip install -e .) or set CTXBENCH_{name.upper()}_DIR",
    )
