"""Runnable benchmarks; ``python -m benchmarks`` (``make bench``) prints one JSON object."""
