"""Model ids, the table of known models, and where models live in the cache.

An id is `org/name` or `name` (the configured default org), optionally `:file.gguf` to pick one file of a Hugging Face
repository. Ids become directory names in the cache, so they are validated strictly: anything that could climb out
of the cache (`..`, absolute paths, odd characters) is rejected before it reaches the file system.

Cache layout (under `model_cache_dir`, by default `$XDG_CACHE_HOME/infill/models`):
    _default/<file>.gguf                    the embedded default model, assembled once
    <org>/<name>/tabby.json, ggml/…         a known model, downloaded as a Tabby-style directory
    <org>/<name>/<file>.gguf                one file picked with `org/name:file.gguf`
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ModelError
from ..prompt import PromptTemplate
from ..tomlfiles import read_packaged
from .spec import TABBY_JSON, is_tabby_dir

DEFAULT_DIR = "_default"
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_REGISTRY_FILE = "registry.toml"
_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class ModelId:
    org: str
    name: str
    #: A file inside the repository (may contain `/` for subfolders), or None for a known model.
    file: str | None = None

    @property
    def repo_id(self) -> str:
        return f"{self.org}/{self.name}"

    def __str__(self) -> str:
        return f"{self.repo_id}:{self.file}" if self.file else self.repo_id

    def files(self) -> tuple[str, ...]:
        """The file and, for a split GGUF (`…-00001-of-00003.gguf`), its sibling parts: llama.cpp needs them all."""
        if not self.file:
            return ()
        match = _SPLIT.search(self.file)
        if not match:
            return (self.file,)
        total = int(match.group(2))
        stem = self.file[: match.start()]
        return tuple(f"{stem}-{i:05d}-of-{total:05d}.gguf" for i in range(1, total + 1))

    def cache_path(self, cache_dir: Path) -> Path:
        """Where this model lives in the cache: the model directory, or the picked file."""
        base = cache_dir / self.org / self.name
        return base / self.file if self.file else base


def _check_segment(segment: str, text: str, what: str) -> None:
    if not _SEGMENT.match(segment) or ".." in segment:
        raise ModelError(
            f"invalid model id {text!r}: {what} {segment!r} must start with a letter or digit and contain only "
            "letters, digits, '.', '_' and '-' (ids look like org/name or org/name:file.gguf)")


def parse_model_id(text: str, default_org: str) -> ModelId:
    """`org/name[:file.gguf]` or `name[:file.gguf]` → ModelId; raises ModelError saying what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ModelError("empty model id (ids look like org/name or org/name:file.gguf)")
    text = text.strip()
    if text.startswith(("/", "~", "\\")) or re.match(r"^[A-Za-z]:[\\/]", text):
        raise ModelError(f"invalid model id {text!r}: a path is not an id (set model to the path of a .gguf file or "
                         "model directory instead)")
    repo, sep, file = text.partition(":")
    if sep and not file:
        raise ModelError(f"invalid model id {text!r}: nothing after ':' (expected a file name such as model.gguf)")
    parts = repo.split("/")
    if len(parts) == 1:
        _check_segment(default_org, text, "default org")
        org, name = default_org, parts[0]
    elif len(parts) == 2:
        org, name = parts
    else:
        raise ModelError(f"invalid model id {text!r}: expected org/name or name, optionally followed by :file.gguf")
    _check_segment(org, text, "org")
    _check_segment(name, text, "name")
    if sep:
        if "\\" in file:
            raise ModelError(f"invalid model id {text!r}: use '/' in file paths")
        for segment in file.split("/"):
            _check_segment(segment, text, "file path part")
        if not file.lower().endswith(".gguf"):
            raise ModelError(f"invalid model id {text!r}: the file must be a .gguf file, got {file!r}")
        split = _SPLIT.search(file)
        if split and (int(split.group(1)) != 1 or int(split.group(2)) < 1):
            raise ModelError(f"invalid model id {text!r}: name the first part of a split model "
                             f"({file[:split.start()]}-00001-of-{split.group(2)}.gguf)")
    return ModelId(org, name, file or None)


def looks_like_path(text: str) -> bool:
    """True when a configured `model` is meant as a path rather than an id: it exists, or is spelled like a path."""
    expanded = Path(os.path.expanduser(text))
    if expanded.exists():
        return True
    if text.startswith(("/", "~", "./", "../", ".\\", "..\\")) or re.match(r"^[A-Za-z]:[\\/]", text):
        return True
    return ":" not in text and text.lower().endswith(".gguf")


# ---------------------------------------------------------------------------------------------------------------------
# Known models


@dataclass(frozen=True)
class KnownFile:
    file: str
    sha256: str | None = None


@dataclass(frozen=True)
class KnownModel:
    id: str
    repo: str
    files: tuple[KnownFile, ...]
    #: A template family of engine/templates.toml (by name, so that the family's stop words come with it).
    prompt_template: str | None = None
    chat_template: str | None = None


def _template_family(value: object, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or "{" in value:
        raise ModelError(f"{where}: prompt_template must name a template family of engine/templates.toml, "
                         f"got {value!r}")
    try:
        PromptTemplate.from_setting(value)
    except ValueError as exc:
        raise ModelError(f"{where}: {exc}") from None
    return value


def _parse_registry(data: dict, source: str) -> dict[str, KnownModel]:
    models: dict[str, KnownModel] = {}
    for model_id, entry in data.get("models", {}).items():
        where = f"{source}: models.{model_id!r}"
        try:
            files = tuple(KnownFile(f["file"], f.get("sha256") or None) for f in entry["files"])
            repo = entry["repo"]
        except (KeyError, TypeError) as exc:
            raise ModelError(f"{where}: each entry needs repo and files = [{{file, sha256}}] ({exc})") from None
        if not files:
            raise ModelError(f"{where}: files is empty")
        models[model_id] = KnownModel(model_id, repo, files, _template_family(entry.get("prompt_template"), where),
                                      entry.get("chat_template"))
    return models


@functools.lru_cache(maxsize=1)
def load_registry() -> dict[str, KnownModel]:
    return _parse_registry(read_packaged("engine.models", _REGISTRY_FILE), _REGISTRY_FILE)


def known_model(model_id: ModelId) -> KnownModel | None:
    if model_id.file is not None:
        return None
    return load_registry().get(model_id.repo_id)


# ---------------------------------------------------------------------------------------------------------------------
# The cache


def model_cache_dir(configured: str | None = None) -> Path:
    """The configured directory, else `$XDG_CACHE_HOME/infill/models`, else `~/.cache/infill/models`."""
    if configured:
        return Path(os.path.expanduser(configured))
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "infill" / "models"


CachedKind = Literal["default", "directory", "file"]


@dataclass(frozen=True)
class CachedModel:
    id: str
    path: Path
    size: int
    kind: CachedKind


def _gguf_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.gguf") if ".cache" not in p.relative_to(root).parts and p.is_file())


def list_cached(cache_dir: Path) -> list[CachedModel]:
    """Every complete model in the cache. Partial downloads (no tabby.json yet, `.incomplete` files) are skipped."""
    found: list[CachedModel] = []
    default_dir = cache_dir / DEFAULT_DIR
    if default_dir.is_dir():
        for path in _gguf_files(default_dir):
            found.append(CachedModel(f"(default) {path.name}", path, path.stat().st_size, "default"))
    if not cache_dir.is_dir():
        return found
    for org in sorted(p for p in cache_dir.iterdir() if p.is_dir() and _SEGMENT.match(p.name)):
        for model in sorted(p for p in org.iterdir() if p.is_dir()):
            repo = f"{org.name}/{model.name}"
            if is_tabby_dir(model):
                size = sum(p.stat().st_size for p in _gguf_files(model / "ggml")) if (model / "ggml").is_dir() else 0
                found.append(CachedModel(repo, model, size, "directory"))
                continue
            for path in _gguf_files(model):
                rel = path.relative_to(model).as_posix()
                found.append(CachedModel(f"{repo}:{rel}", path, path.stat().st_size, "file"))
    return found


def is_cached(model_id: ModelId, cache_dir: Path) -> bool:
    if model_id.file:
        base = cache_dir / model_id.org / model_id.name
        return all((base / name).is_file() for name in model_id.files())
    return (model_id.cache_path(cache_dir) / TABBY_JSON).is_file()
