"""The optional parts of ctxbench and the one way to load them.

``pip install ctxbench`` (the core) runs every command but ``sweep`` and ``demo`` (``gen``,
``run``, ``baseline``, ``check``, ``diff``, ``score``, ``view``, ``report``, ...) with the
tokenizers' own packages (``tiktoken``, ``tokenizers``), ``click``, ``jinja2`` and ``numpy``. The heavy packages are extras, each
imported only where it is used, through :func:`require`: a missing one is a
:class:`MissingExtraError` naming the extra to install, never a bare ``ModuleNotFoundError``.

============  =====================  ==========================================================
extra         packages               needed by
============  =====================  ==========================================================
``parquet``   pyarrow                ``sweep``'s results.parquet (else .jsonl), .parquet rows
``pandas``    pandas                 ``ResultsDir.frame()``
``hf``        datasets               ``import`` of Hugging Face datasets (``--hf``, ``.parquet``)
``dask``      dask[distributed]      ``sweep --scheduler`` / ``--dask-local``
``browser``   playwright             screenshots of reports and the viewer
``all``       every extra and dev    the test suite (``make test``)
============  =====================  ==========================================================
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ctxbench.errors import CtxbenchError

#: Top-level module -> the extra that installs it.
EXTRAS: dict[str, str] = {
    "pyarrow": "parquet",
    "pandas": "pandas",
    "datasets": "hf",
    "distributed": "dask",
    "dask": "dask",
    "playwright": "browser",
}


class MissingExtraError(CtxbenchError):
    """An optional package a command needs is not installed; the hint names the extra."""

    def __init__(self, module: str, what: str) -> None:
        self.module = module
        self.extra = EXTRAS[module]
        super().__init__(
            f"{what} needs {module}, which this installation does not have",
            hint=f"pip install 'ctxbench[{self.extra}]' (or 'ctxbench[all]')",
        )


def require(module: str, *, what: str) -> ModuleType:
    """Import ``module`` (``"pyarrow.parquet"``) of an extra, for ``what`` (the feature, as
    the error names it). A module missing from its package, or a package that fails on
    import for another reason, raises as it is: only an absent package is the user's fix."""
    top = module.partition(".")[0]
    if top not in EXTRAS:
        raise ValueError(f"{top} is not an optional package of ctxbench")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != top:
            raise
        raise MissingExtraError(top, what) from None
