"""Decisions from results: intervals, paired comparisons and the config to deploy.

A sweep's point scores are noisy (a trace with 13 probes moves retention in steps of 0.077),
so every answer here carries its uncertainty: a seeded, deterministic bootstrap over traces
and over the probes within each trace (:mod:`ctxbench.bootstrap`), paired between
configs replayed on the same traces; the recommendation (:mod:`ctxbench.decisions.recommend`)
names its constraints, the configs it cannot tell apart and how many more traces would.
"""
