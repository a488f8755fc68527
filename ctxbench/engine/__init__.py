"""The pure replay engine: a recorded trace, call by call, through one strategy against a
simulated provider (:mod:`~ctxbench.engine.replay`); what a strategy sees
(:mod:`~ctxbench.engine.context`) and the protocol it implements
(:mod:`~ctxbench.engine.strategy`). No files, no clock. User code imports from :mod:`ctxbench`."""
