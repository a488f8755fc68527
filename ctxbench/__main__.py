"""``python -m ctxbench``: the same as the ``ctxbench`` command (exit codes included)."""

import sys

from ctxbench.cli import main

sys.exit(main())
