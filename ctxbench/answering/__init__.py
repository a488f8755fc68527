"""Ask a model: probes answered and next actions chosen by a real model from the compacted
prompt, through any OpenAI-compatible endpoint, cached on disk.

``client.py`` holds the client (settings, meter, the cache-first ``ask``), ``cache.py`` the
answer cache, ``asking.py`` what is asked about one replay and the events the answers become.
"""
