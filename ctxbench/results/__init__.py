"""The results directory: its layout written down once (:mod:`~ctxbench.results.layout`), the
one writer of its table (:mod:`~ctxbench.results.table`) and the one reader
(:class:`ResultsDir`), which raises :class:`~ctxbench.errors.ResultsError` naming the file,
the line and the fix."""

from ctxbench.errors import ResultsError
from ctxbench.results.files import write_files
from ctxbench.results.reader import ResultsDir, event_lines, read_result, spec_of_row
from ctxbench.results.table import read_results, write_rows

__all__ = [
    "ResultsDir",
    "ResultsError",
    "event_lines",
    "read_result",
    "read_results",
    "spec_of_row",
    "write_files",
    "write_rows",
]
