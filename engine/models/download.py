"""Hugging Face downloads into Infill's model cache.

Why it is built this way:
- `huggingface_hub.hf_hub_download` with `local_dir` does the transfer: it honours `HF_ENDPOINT`, `HF_TOKEN` and
  `HF_HUB_OFFLINE`, resumes interrupted transfers, and writes to an `.incomplete` file that only becomes the real name
  when complete, so a partial file is never used.
- The sha256 is checked after every download, from the registry when the model is known, else from the hub's
  `X-Linked-Etag` (the sha256 of an LFS file). A mismatch deletes the file: a corrupt model is never left behind.
- Transient failures (connection errors, timeouts, HTTP 5xx/429) are retried with exponential backoff; "not found"
  and "access denied" are not, because retrying them only delays the message.
- A known model is stored as a Tabby-style directory whose `tabby.json` is written last: its presence means the
  directory is complete.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import ModelError
from .registry import KnownModel, ModelId, known_model
from .spec import TABBY_JSON

log = logging.getLogger(__name__)

#: Called with (bytes done, total bytes or None) while a file downloads.
ProgressCallback = Callable[[int, "int | None"], None]


@dataclass(frozen=True)
class DownloadSettings:
    #: A mirror such as "https://hf-mirror.com"; None means HF_ENDPOINT, else huggingface.co.
    endpoint: str | None = None
    attempts: int = 4
    #: Seconds before the first retry; doubles each time.
    backoff: float = 1.0
    #: Print a progress bar on stderr (the `infill models download` command) instead of reporting to `progress`.
    show_progress_bar: bool = False


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _is_sha256(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value.lower())


def _tqdm_class(settings: DownloadSettings, progress: ProgressCallback | None, label: str):
    """A tqdm class for hf_hub_download: a visible bar for the command line, or a silent one that reports numbers."""
    from tqdm import tqdm

    if settings.show_progress_bar:
        class _Bar(tqdm):
            def __init__(self, *args, **kwargs):
                kwargs["desc"] = label
                kwargs["disable"] = False
                super().__init__(*args, **kwargs)
        return _Bar

    class _Reporter(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = False
            kwargs["file"] = io.StringIO()
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            result = super().update(n)
            if progress is not None:
                progress(int(self.n), int(self.total) if self.total else None)
            return result
    return _Reporter


def _retryable(exc: BaseException) -> bool:
    from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError,
                                        OfflineModeIsEnabled, RepositoryNotFoundError, RevisionNotFoundError)

    if isinstance(exc, (RepositoryNotFoundError, GatedRepoError, RevisionNotFoundError, OfflineModeIsEnabled)):
        return False
    if isinstance(exc, LocalEntryNotFoundError):
        # hf_hub_download's way of saying "the metadata request failed and nothing is cached". With no HTTP answer
        # at all (offline, refused) it has already retried with backoff itself, so more tries only delay the error.
        cause = exc.__cause__
        return isinstance(cause, HfHubHTTPError) and _retryable(cause)
    if isinstance(exc, EntryNotFoundError):
        return False
    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else None
        return status is None or status >= 500 or status in (408, 429)
    return isinstance(exc, (OSError, TimeoutError)) or type(exc).__module__.split(".")[0] in ("httpx", "httpx2",
                                                                                              "httpcore")


def _explain(exc: BaseException, repo: str, file: str, endpoint: str) -> str:
    from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, LocalEntryNotFoundError,
                                        OfflineModeIsEnabled, RepositoryNotFoundError)

    if isinstance(exc, GatedRepoError):
        return f"{repo} on {endpoint} is gated: accept its licence on the website and set HF_TOKEN"
    if isinstance(exc, RepositoryNotFoundError):
        return f"repository {repo} not found on {endpoint} (or it is private: set HF_TOKEN)"
    if isinstance(exc, OfflineModeIsEnabled):
        return "HF_HUB_OFFLINE is set, so nothing can be downloaded"
    if isinstance(exc, LocalEntryNotFoundError):
        return f"cannot reach {endpoint} to download {file} from {repo}"
    if isinstance(exc, EntryNotFoundError):
        return f"file {file} not found in repository {repo} on {endpoint}"
    return f"downloading {file} from {repo} on {endpoint} failed: {exc}"


def _endpoint(settings: DownloadSettings) -> str:
    if settings.endpoint:
        return settings.endpoint.rstrip("/")
    from huggingface_hub import constants

    return constants.ENDPOINT


def download_file(repo: str, file: str, local_dir: Path, *, sha256: str | None = None,
                  settings: DownloadSettings = DownloadSettings(), progress: ProgressCallback | None = None,
                  sleep: Callable[[float], None] = time.sleep) -> Path:
    """One file of a Hugging Face repository into `local_dir/file`, verified; returns its path.

    An already present file is returned as is (it only got its name once complete and verified)."""
    from huggingface_hub import hf_hub_download

    target = local_dir / file
    if target.is_file():
        return target
    endpoint = _endpoint(settings)
    local_dir.mkdir(parents=True, exist_ok=True)
    tqdm_class = _tqdm_class(settings, progress, file)
    delay = settings.backoff
    for attempt in range(1, settings.attempts + 1):
        try:
            path = Path(hf_hub_download(repo, file, local_dir=local_dir, endpoint=settings.endpoint,
                                        tqdm_class=tqdm_class))
            break
        except Exception as exc:  # classified below: retried, or turned into a ModelError naming the file
            if attempt == settings.attempts or not _retryable(exc):
                raise ModelError(_explain(exc, repo, file, endpoint)
                                 + (f" (after {attempt} attempts)" if attempt > 1 else "")) from exc
            log.warning("download of %s from %s failed (%s); retrying in %.1f s", file, repo, exc, delay)
            sleep(delay)
            delay *= 2
    expected = sha256 or _hub_sha256(local_dir, file)
    if expected:
        actual = sha256_file(path)
        if actual != expected.lower():
            _remove_download(local_dir, file)
            raise ModelError(f"{file} from {repo}: sha256 mismatch (expected {expected}, got {actual}); "
                             "the file was deleted, download it again")
    return path


def _hub_sha256(local_dir: Path, file: str) -> str | None:
    """The etag hf_hub_download recorded; for LFS files (all model weights) it is the file's sha256."""
    try:
        from huggingface_hub._local_folder import read_download_metadata
    except ImportError:  # pragma: no cover - a private helper; without it we only lose the check
        return None
    meta = read_download_metadata(local_dir, file)
    etag = meta.etag if meta is not None else None
    return etag.lower() if etag is not None and _is_sha256(etag) else None


def _remove_download(local_dir: Path, file: str) -> None:
    (local_dir / file).unlink(missing_ok=True)
    try:
        from huggingface_hub._local_folder import get_local_download_paths

        paths = get_local_download_paths(local_dir, file)
        paths.metadata_path.unlink(missing_ok=True)
    except Exception:  # best effort: the metadata file only speeds up the next download
        pass


def download_model(model_id: ModelId, cache_dir: Path, *, settings: DownloadSettings = DownloadSettings(),
                   progress: ProgressCallback | None = None,
                   sleep: Callable[[float], None] = time.sleep) -> Path:
    """Download `model_id` into the cache; returns the model directory (known models) or the .gguf file."""
    if model_id.file:
        repo_dir = cache_dir / model_id.org / model_id.name
        paths = [download_file(model_id.repo_id, name, repo_dir, settings=settings, progress=progress, sleep=sleep)
                 for name in model_id.files()]
        return paths[0]
    known = known_model(model_id)
    if known is None:
        raise ModelError(f"unknown model id {model_id}: it is not in Infill's model list, so name the file to "
                         f"download: {model_id}:FILE.gguf")
    return _download_known(known, model_id.cache_path(cache_dir), settings, progress, sleep)


def _download_known(known: KnownModel, root: Path, settings: DownloadSettings, progress: ProgressCallback | None,
                    sleep: Callable[[float], None]) -> Path:
    if (root / TABBY_JSON).is_file():
        return root
    ggml = root / "ggml"
    ggml.mkdir(parents=True, exist_ok=True)
    total = len(known.files)
    staging = root / ".download"
    for index, entry in enumerate(known.files, start=1):
        final = ggml / (f"model-{index:05d}-of-{total:05d}.gguf" if total > 1 else "model.gguf")
        if final.is_file():
            continue
        path = download_file(known.repo, entry.file, staging, sha256=entry.sha256, settings=settings,
                             progress=progress, sleep=sleep)
        path.replace(final)
    shutil.rmtree(staging, ignore_errors=True)
    meta = {"prompt_template": known.prompt_template, "chat_template": known.chat_template,
            "source": {"repo": known.repo, "files": [f.file for f in known.files]}}
    partial = root / (TABBY_JSON + ".partial")
    partial.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.replace(root / TABBY_JSON)
    return root
