"""Where ctxbench's data folders live: ``tokenizers/`` and ``scenarios/`` at the repository root.

Lookup order: the environment variable ``CTXBENCH_<NAME>_DIR``; the folder beside the package
(a source checkout or an editable install); ``<prefix>/share/ctxbench/<name>``, where
``pip install .`` puts them (pyproject ``data-files``).
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

from ctxbench.errors import CtxbenchError

PACKAGE_ROOT = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_ROOT.parent


def installed_dirs(name: str) -> list[Path]:
    """``share/ctxbench/<name>`` under the data paths of this environment and of the user."""
    dirs = [Path(sysconfig.get_path("data")) / "share" / "ctxbench" / name]
    try:
        scheme = sysconfig.get_preferred_scheme("user")
        dirs.append(Path(sysconfig.get_path("data", scheme)) / "share" / "ctxbench" / name)
    except (AttributeError, KeyError):  # pragma: no cover - an odd platform
        pass
    return dirs


def candidate_dirs(name: str) -> list[Path]:
    """Where :func:`resource_dir` looks, in order (the environment variable aside)."""
    return [REPO_ROOT / name, *installed_dirs(name)]


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
    for candidate in candidate_dirs(name):
        if candidate.is_dir():
            return candidate
    raise CtxbenchError(
        f"cannot find ctxbench's {name}/ folder (looked in {REPO_ROOT / name})",
        hint=f"install ctxbench from its repository checkout (pip install -e .) or set CTXBENCH_{name.upper()}_DIR",
    )
