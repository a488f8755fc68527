"""``python -m ctxbench.cli``: the same as the ``ctxbench`` command."""

from ctxbench.cli import main

main()
