"""`python -m bench.reliability.lsp_fuzz`: the command line of report.py."""

import sys

from .report import main

if __name__ == "__main__":
    sys.exit(main())
