"""ACME's agent (the parts ctxbench gates: its context compaction)."""
