"""One replay, start to row: its spec and defaults (:mod:`~ctxbench.cell.spec`), where its
trace comes from (:mod:`~ctxbench.cell.traces`, the front door every command reads traces
through) and the runner that builds its parts, replays, times it and computes its row once
(:mod:`~ctxbench.cell.runner`). User code imports these names from :mod:`ctxbench`."""
