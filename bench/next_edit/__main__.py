"""`python -m bench.next_edit build|run|describe ...` (see the package docstring)."""

from .cli import main

raise SystemExit(main())
