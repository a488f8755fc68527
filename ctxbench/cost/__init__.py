"""What compaction costs: a provider prompt-cache model per call, price tables with their
source and date, the payback of each compaction, and the cache model's error against the
cache usage providers recorded.

- :mod:`ctxbench.cost.cache`: cache reads / writes / fresh tokens of one call, per provider;
- :mod:`ctxbench.cost.prices`: USD per million tokens, the page and the date read, overridable;
- :mod:`ctxbench.cost.ledger`: a replay's events priced call by call, with and without
  compaction, and each compaction's payback;
- :mod:`ctxbench.cost.gaps`: seconds between calls from a trace's timestamps (cache expiry);
- :mod:`ctxbench.cost.calibration`: simulated against recorded cache reads, per provider.
"""
