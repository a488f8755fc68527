"""``python -m ctxbench``: the same as the ``ctxbench`` command."""

from ctxbench.cli import main

main()
