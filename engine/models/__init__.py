"""Which model file llama-server loads, and with which templates.

`resolve_model` turns the `model` setting into a checked file on disk. It never downloads unless told to: a Hugging
Face id that is not in the cache is an error naming the command that downloads it (`infill models download ID`),
unless the configuration opts in with `allow_download = true`."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..types import StatusCallback, StatusEvent
from ..config import EngineConfig, ModelConfig
from ..errors import ModelError
from .default import default_model_path
from .download import DownloadSettings, download_model
from .registry import ModelId, is_cached, known_model, looks_like_path, model_cache_dir, parse_model_id
from .spec import GgufInfo, check_gguf_file, read_tabby_dir

__all__ = ["ResolvedModel", "resolve_model", "resolve_model_id", "download_settings", "GgufInfo"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResolvedModel:
    #: The file to pass to `llama-server -m` (for split models: the first partition).
    path: Path
    #: FIM template with `{prefix}` and `{suffix}` (the user's setting, else tabby.json, else the model list).
    prompt_template: str | None
    chat_template: str | None
    #: "default", "file", "directory" or "huggingface:<id>".
    source: str
    info: GgufInfo | None = field(default=None, compare=False, repr=False)
    warnings: tuple[str, ...] = ()

    @property
    def has_fim(self) -> bool:
        return bool(self.info and self.info.has_fim)

    @property
    def prefix_only(self) -> bool:
        """No template and no FIM tokens: the model can only continue the text before the cursor."""
        return self.prompt_template is None and not self.has_fim


def download_settings(engine_cfg: EngineConfig, *, show_progress_bar: bool = False) -> DownloadSettings:
    return DownloadSettings(endpoint=engine_cfg.hf_endpoint, show_progress_bar=show_progress_bar)


def resolve_model(cfg: ModelConfig, engine_cfg: EngineConfig, on_status: StatusCallback | None = None) -> ResolvedModel:
    """The local model for `cfg`: the default model, a .gguf path, a model directory or a cached Hugging Face id."""
    cache_dir = model_cache_dir(engine_cfg.model_cache_dir)
    if not cfg.model:
        path = default_model_path(cache_dir, on_status)
        return _finish(path, cfg.prompt_template, None, "default")
    if looks_like_path(cfg.model):
        return _resolve_path(cfg, Path(os.path.expanduser(cfg.model)))
    model_id = parse_model_id(cfg.model, engine_cfg.default_org)
    return resolve_model_id(model_id, cfg, engine_cfg, on_status)


def _resolve_path(cfg: ModelConfig, path: Path) -> ResolvedModel:
    if path.is_dir():
        tabby = read_tabby_dir(path)
        return _finish(tabby.entry, cfg.prompt_template or tabby.prompt_template, tabby.chat_template, "directory")
    if not path.exists():
        raise ModelError(f"model file not found: {path} (the completion model setting names it)")
    return _finish(path, cfg.prompt_template, None, "file")


def resolve_model_id(model_id: ModelId, cfg: ModelConfig, engine_cfg: EngineConfig,
                     on_status: StatusCallback | None = None) -> ResolvedModel:
    cache_dir = model_cache_dir(engine_cfg.model_cache_dir)
    source = f"huggingface:{model_id}"
    if not is_cached(model_id, cache_dir):
        elsewhere = _from_hf_cache(model_id)
        if elsewhere is not None:
            return _finish(elsewhere, cfg.prompt_template, None, source)
        if not engine_cfg.allow_download:
            raise ModelError(
                f"model {model_id} is not downloaded yet (looked in {cache_dir}); download it with: "
                f"infill models download {model_id}   (or set allow_download = true to let Infill download it)")
        _download_with_status(model_id, cache_dir, engine_cfg, on_status)
    target = model_id.cache_path(cache_dir)
    if model_id.file:
        return _finish(target, cfg.prompt_template, None, source)
    tabby = read_tabby_dir(target)
    known = known_model(model_id)
    prompt = cfg.prompt_template or tabby.prompt_template or (known.prompt_template if known else None)
    chat = tabby.chat_template or (known.chat_template if known else None)
    return _finish(tabby.entry, prompt, chat, source)


def _from_hf_cache(model_id: ModelId) -> Path | None:
    """A file already in the user's own Hugging Face cache (e.g. fetched with `hf download`), found without network."""
    if not model_id.file:
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    found = [try_to_load_from_cache(model_id.repo_id, name) for name in model_id.files()]
    paths = [Path(path) for path in found if isinstance(path, str)]
    if len(paths) == len(found) and all(path.is_file() for path in paths):
        return paths[0]
    return None


def _download_with_status(model_id: ModelId, cache_dir: Path, engine_cfg: EngineConfig,
                          on_status: StatusCallback | None) -> None:
    emit = on_status or (lambda event: None)
    last = [-1]

    def progress(done: int, total: int | None) -> None:
        percent = int(done * 100 / total) if total else None
        if percent != last[0]:
            last[0] = percent if percent is not None else -1
            emit(StatusEvent("starting", f"Downloading {model_id}", detail=f"{done:,} of {total or '?'} bytes",
                             percent=percent))

    emit(StatusEvent("starting", f"Downloading {model_id} (allow_download is on)", percent=0))
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise ModelError(f"downloading {model_id} needs huggingface_hub: pip install 'infill-lsp[local]'") from None
    download_model(model_id, cache_dir, settings=download_settings(engine_cfg), progress=progress)


def _finish(path: Path, prompt_template: str | None, chat_template: str | None, source: str) -> ResolvedModel:
    info = check_gguf_file(path)
    model = ResolvedModel(path, prompt_template, chat_template, source, info)
    if model.prefix_only:
        warning = (f"{path.name} has no FIM tokens and no prompt_template is set: completions will only continue "
                   "the text before the cursor, with no fill-in-the-middle prompt (the language server shows the "
                   "lines after the cursor as a block of context instead: context.next_lines); set prompt_template "
                   "if the model was trained with FIM tokens")
        log.warning("%s", warning)
        model = ResolvedModel(path, prompt_template, chat_template, source, info, (warning,))
    return model
