"""Typed configuration of models and backends.

Configuration arrives as nested dicts (TOML file, LSP initializationOptions, workspace/configuration). `from_dict`
turns a dict into a frozen dataclass, checking every value against the field's type; an unknown key or a wrong type
raises ConfigError naming the dotted key, so the user can find the line to fix. The LSP layer reuses `from_dict` for
its own settings."""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping

from .errors import ConfigError
from .validation import check_stop_words, check_token_budget

# ---------------------------------------------------------------------------------------------------------------------
# Generic dict → dataclass conversion


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (tuple, list):
        return "a list"
    if origin in (dict, Mapping):
        return "a table"
    if tp is type(None):
        return "null"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(
        tp, getattr(tp, "__name__", str(tp)))


def _convert(value: Any, tp: Any, key: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, key)
            except ConfigError as exc:
                errors.append(exc)
        if len(errors) == 1:  # Optional[X]: X's own error names the nested key at fault
            raise errors[0]
        raise ConfigError(key, f"expected {_type_name(tp)}, got {value!r}")
    if origin is typing.Literal:
        if value in args:
            return value
        raise ConfigError(key, f"expected {_type_name(tp)}, got {value!r}")
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(key, f"expected a table, got {value!r}")
        return from_dict(tp, value, key)
    if origin in (tuple, list):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ConfigError(key, f"expected a list, got {value!r}")
        item_tp = args[0] if args else Any
        items = [_convert(v, item_tp, f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ConfigError(key, f"expected a table, got {value!r}")
        k_tp, v_tp = args if args else (Any, Any)
        return {_convert(k, k_tp, key): _convert(v, v_tp, f"{key}.{k}") for k, v in value.items()}
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return value
    elif isinstance(tp, type) and isinstance(value, tp):
        return value
    raise ConfigError(key, f"expected {_type_name(tp)}, got {value!r}")


def from_dict(cls: type, data: Mapping[str, Any] | None, key: str = "") -> Any:
    """Build dataclass `cls` from `data`. Keys may use camelCase or snake_case (editors send camelCase).

    Missing keys take the field default. The dataclass's own ``__post_init__`` may raise ValueError; it is re-raised
    as ConfigError under `key`."""
    data = dict(data or {})
    hints = typing.get_type_hints(cls)
    names = {f.name: f for f in dataclasses.fields(cls) if f.init}
    kwargs: dict[str, Any] = {}
    for raw_key, value in data.items():
        name = _snake(raw_key)
        full = f"{key}.{raw_key}" if key else raw_key
        if name not in names:
            valid = ", ".join(sorted(names))
            raise ConfigError(full, f"unknown setting (valid settings here: {valid})")
        kwargs[name] = _convert(value, hints[name], full)
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:
        raise ConfigError(key or cls.__name__, str(exc)) from exc


def _snake(name: str) -> str:
    out = []
    for ch in name:
        if ch.isupper():
            out.append("_" + ch.lower())
        else:
            out.append(ch)
    return "".join(out).replace("-", "_")


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge two config dicts; tables merge key by key, anything else in `override` wins."""
    out = dict(base)
    for k, v in override.items():
        k = _snake(k)
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


# ---------------------------------------------------------------------------------------------------------------------
# The engine's settings


@dataclass(frozen=True)
class HttpSettings:
    """How to reach a remote endpoint. Loopback endpoints always bypass proxies."""

    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    proxy: str | None = None
    ca_bundle: str | None = None
    verify_tls: bool = True
    headers: dict[str, str] = field(default_factory=dict)
    max_retries: int = 2

    def __post_init__(self) -> None:
        if self.connect_timeout <= 0 or self.read_timeout <= 0:
            raise ValueError("timeouts must be positive numbers of seconds")
        if self.max_retries < 0:
            raise ValueError("max_retries must not be negative")


@dataclass(frozen=True)
class LocalServerSettings:
    """How Infill starts its own llama-server."""

    binary: str | None = None
    parallel: int = 2
    ctx_size: int = 4096
    #: llama-server's generation threads; None: on Linux one per core other programs leave free, adjusted while it
    #: runs (engine/local/threads.py, docs/busy-machine.md); elsewhere, or when extra_args has -t/--threads,
    #: llama-server's default.
    threads: int | None = None
    #: Prompt-processing threads; None: the same as `threads`.
    threads_batch: int | None = None
    gpu_layers: int = 0
    flash_attention: bool = False
    chat_template: str | None = None
    embedding: bool = False
    #: Keep a full-size cache for sliding-window-attention models (Gemma 3). Without it llama-server cannot reuse
    #: the cached prompt after a request was cancelled during its prefill, which is what typing does all the time.
    swa_full: bool = True
    #: `--cache-reuse N`: reuse cached chunks of at least N tokens by shifting them (llama.cpp PR #9866), so a
    #: context block that changed in the middle does not cost a full prefill of what follows. 0 turns it off.
    cache_reuse: int = 256
    #: `--cache-ram N` (MiB): llama-server keeps the prompts a slot moves away from in RAM and restores one when a
    #: request continues it (switching files, a prefetch with another context block). Its own default, 8 GiB, let the
    #: accepting-user replay grow it by ~10 MiB per distinct prompt (684 MiB after 100 s of typing with Gemma 270M);
    #: 256 keeps the last few dozen prompts of a small model. -1: no limit, 0: off.
    cache_ram: int = 256
    #: `-b`: llama-server's `/infill` keeps at most n_ctx(slot) - batch - 2·n_predict tokens of `input_extra` (other
    #: files) and at most 3/4 of a batch of prefix, so the default batch (2048 = a whole 2048-token slot) silently
    #: drops all context. 0 picks 11/16 of a slot (1408 of 2048: prefix ≤ 1056, room for ~500 context tokens).
    batch_size: int = 0
    start_timeout: float = 120.0
    extra_args: tuple[str, ...] = ()
    #: Infill processes on this machine with the same model and server settings use one llama-server: the first runs
    #: it, the others use it, and one of them takes over when it exits (engine/local/shared.py). False: each process
    #: starts its own.
    share: bool = True

    def __post_init__(self) -> None:
        if self.parallel < 1:
            raise ValueError("parallel must be at least 1")
        if any(n is not None and n < 1 for n in (self.threads, self.threads_batch)):
            raise ValueError("threads and threads_batch must be at least 1 (or unset: adaptive)")
        if self.ctx_size < 256:
            raise ValueError("ctx_size must be at least 256")
        if self.cache_reuse < 0:
            raise ValueError("cache_reuse must not be negative")
        if self.cache_ram < -1:
            raise ValueError("cache_ram must be a number of MiB, 0 (off) or -1 (no limit)")
        if self.batch_size < 0:
            raise ValueError("batch_size must not be negative")
        if self.start_timeout <= 0:
            raise ValueError("start_timeout must be a positive number of seconds")


@dataclass(frozen=True)
class ModelConfig:
    """One model endpoint: the local llama-server (`kind = "local"`) or a remote kind such as `openai/completion`.

    `model` is, for `local`: a `.gguf` path, a Tabby-style model directory, or a Hugging Face id (`org/name` or
    `org/name:file.gguf`); for remote kinds: the model name the vendor expects."""

    kind: str = "local"
    model: str | None = None
    api_endpoint: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str | None = None
    prompt_template: str | None = None
    additional_stop_words: tuple[str, ...] = ()
    max_prefix_tokens: int = 1024
    max_suffix_tokens: int = 256
    #: Clip points move in steps of 1/8 of the budget, at line starts, so the prompt's beginning stays the same across
    #: keystrokes and the server reuses its cached prefill. False clips afresh to the exact budget on every request
    #: (what most completion servers do; the typing benchmark's naive pipeline uses it to show the difference).
    stable_clip: bool = True
    rate_limit_rpm: int | None = None
    #: The endpoint is a server the user or their team runs (not a vendor billing per request), which turns on
    #: speculative prefetch for it. None: decided from the kind and the endpoint's address (loopback, link-local
    #: and private addresses count as self-hosted).
    self_hosted: bool | None = None
    #: The llama-server at `api_endpoint` may serve other clients too (a team's): speculative requests ask it first
    #: and step aside, and no cache warm-up is sent, since a prefill cannot step aside
    #: (engine/backends/shared_server.py). None: so for every llama-server Infill did not start; false: it is this
    #: editor's alone, and prefetches and warm-ups go to it unasked, as to Infill's own.
    shared: bool | None = None
    supported_models: tuple[str, ...] = ()
    http: HttpSettings = field(default_factory=HttpSettings)
    local: LocalServerSettings = field(default_factory=LocalServerSettings)

    def __post_init__(self) -> None:
        check_token_budget(self.max_prefix_tokens, "max_prefix_tokens")
        check_token_budget(self.max_suffix_tokens, "max_suffix_tokens")
        check_stop_words(self.additional_stop_words, "additional_stop_words")
        if self.rate_limit_rpm is not None and self.rate_limit_rpm <= 0:
            raise ValueError("rate_limit_rpm must be a positive integer")

    def resolved_api_key(self) -> str | None:
        """The key from `api_key`, else from the environment variable named by `api_key_env`."""
        if self.api_key:
            return self.api_key
        if self.api_key_env:
            return os.environ.get(self.api_key_env) or None
        return None


@dataclass(frozen=True)
class LanguageOverride:
    """A user-added language or extra stop words for an existing one."""

    language_ids: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    line_comment: str | None = None
    top_level_keywords: tuple[str, ...] = ()
    extra_stop_words: tuple[str, ...] = ()
    multiline_strings: tuple[str, ...] = ()


@dataclass(frozen=True)
class EngineConfig:
    completion: ModelConfig = field(default_factory=ModelConfig)
    chat: ModelConfig | None = None
    embedding: ModelConfig | None = None
    languages: dict[str, LanguageOverride] = field(default_factory=dict)
    model_cache_dir: str | None = None
    default_org: str = "TabbyML"
    #: Hugging Face models download only through `infill models download ID`, unless this opt-in is set.
    allow_download: bool = False
    #: A Hugging Face mirror (e.g. "https://hf-mirror.com"); None uses HF_ENDPOINT or huggingface.co.
    hf_endpoint: str | None = None
