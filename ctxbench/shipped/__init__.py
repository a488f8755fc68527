"""Replay through released framework code: ``shipped:<framework>@<version>`` strategies.

- :mod:`~ctxbench.shipped.releases`: the releases and what each installs;
- :mod:`~ctxbench.shipped.environment`: one virtual environment per release under
  ``$CTXBENCH_CACHE`` (``ctxbench shipped install | list | remove``), with a manifest;
- :mod:`~ctxbench.shipped.protocol` and :mod:`~ctxbench.shipped.process`: the line-delimited
  JSON spoken with a driver process, its timeouts and its pool;
- :mod:`~ctxbench.shipped.strategy`: the adaptor that makes a driver a ctxbench strategy;
- ``drivers/``: one program per framework, run with the release environment's python (they
  import the framework, never ctxbench); each docstring says which parts of the agent loop are
  the framework's code and which are emulated.
"""
