"""Reports: the self-contained HTML report of a results directory, and the drift report of
traces (how far token estimates drift from real tokenizers, and when that flips a decision).

``write_report(results_dir, out)`` and ``write_drift_report(traces, out, counters=...)`` are
the entry points (``ctxbench report`` and ``ctxbench drift``); the analyses they draw on
(leaderboard, Pareto frontier, threshold maps, timelines, lost facts, token density, decision
drift) are pure functions in their own modules, usable on their own.
"""

from ctxbench.report.write import Written, write_drift_report, write_report

__all__ = ["Written", "write_drift_report", "write_report"]
