"""The kind → backend registry: ONE table (`KINDS`) saying, for every remote `kind`, what it is for, how to build it,
and what it needs from the configuration.

Every factory returns the backend wrapped in the model's rate limiter; the wrapper also hands the shared HTTP client
back to the pool on close. Configuration problems are ConfigErrors naming the key (e.g. `completion.api_endpoint`),
raised here, before any request, so the user sees them when the engine starts. `kind = "local"` is not here: the
engine starts its own llama-server and points a `llama.cpp/*` backend at it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping

import httpx

from ..config import HttpSettings, ModelConfig
from ..errors import ConfigError
from ..streams import ChatCompletionStream, CompletionStream, Embedding
from . import http
from .rate_limit import DEFAULT_REMOTE_RPM, RateLimited, limiter_for

Role = Literal["completion", "chat", "embedding"]


@dataclass(frozen=True)
class Resolved:
    """A ModelConfig checked and completed with the kind's defaults: what a builder needs."""

    kind: str
    endpoint: str
    model: str | None
    api_key: str | None
    http: HttpSettings
    fim: bool
    supported_models: tuple[str, ...]
    client: httpx.AsyncClient
    #: `ModelConfig.shared`: None or True gate a llama-server's speculation (engine.backends.shared_server).
    shared: bool | None = None


# --- builders (imports are local so a kind's module loads only when used) -------------------------------------------

def _llama_completion(r: Resolved, infill: bool):
    from .llama_cpp import LlamaCppCompletion
    # A user's llama-server may serve other clients too: speculation there yields (engine.backends.shared_server),
    # unless the user says it is this editor's alone (completion.shared = false).
    return LlamaCppCompletion(r.endpoint, use_infill=infill, http=r.http, api_key=r.api_key, client=r.client,
                              shared=r.shared is not False)


def _llama_chat(r: Resolved):
    from .llama_cpp import LlamaCppChat
    return LlamaCppChat(r.endpoint, model=r.model, http=r.http, api_key=r.api_key, client=r.client)


def _llama_embedding(r: Resolved):
    from .llama_cpp import LlamaCppEmbedding
    return LlamaCppEmbedding(r.endpoint, http=r.http, api_key=r.api_key, client=r.client)


def _openai_completion(r: Resolved, vendor: str, fim: bool):
    from .openai import OpenAICompletion
    return OpenAICompletion(r.endpoint, model=r.model, fim=fim and r.fim, vendor=vendor, http_settings=r.http,
                            api_key=r.api_key, client=r.client)


def _openai_chat(r: Resolved):
    from .chat_normalize import ChatNormalizer
    from .openai import OpenAIChat
    return OpenAIChat(r.endpoint, normalizer=ChatNormalizer("openai", r.model, r.supported_models),
                      http_settings=r.http, api_key=r.api_key, client=r.client)


def _openai_embedding(r: Resolved):
    from .openai import OpenAIEmbedding
    return OpenAIEmbedding(r.endpoint, model=r.model, http_settings=r.http, api_key=r.api_key, client=r.client)


def _mistral_completion(r: Resolved):
    from .mistral import MistralCompletion
    return MistralCompletion(r.endpoint, model=r.model, http_settings=r.http, api_key=r.api_key, client=r.client)


def _mistral_chat(r: Resolved):
    from .mistral import mistral_chat
    return mistral_chat(r.endpoint, model=r.model, supported_models=r.supported_models, http_settings=r.http,
                        api_key=r.api_key, client=r.client)


def _mistral_embedding(r: Resolved):
    from .mistral import mistral_embedding
    return mistral_embedding(r.endpoint, model=r.model, http_settings=r.http, api_key=r.api_key, client=r.client)


def _required_model(r: Resolved) -> str:
    """The model of a kind with `requires_model` (resolve() has refused a configuration without one)."""
    if not r.model:
        raise ConfigError("model", f"is required for kind {r.kind!r}")
    return r.model


def _ollama(r: Resolved, role: Role):
    from . import ollama
    model = _required_model(r)
    if role == "completion":
        return ollama.OllamaCompletion(r.endpoint, model=model, fim=r.fim, http_settings=r.http, api_key=r.api_key,
                                       client=r.client)
    if role == "chat":
        return ollama.OllamaChat(r.endpoint, model=model, supported_models=r.supported_models, http_settings=r.http,
                                 api_key=r.api_key, client=r.client)
    return ollama.OllamaEmbedding(r.endpoint, model=model, http_settings=r.http, api_key=r.api_key, client=r.client)


def _azure(r: Resolved, role: Role):
    from .azure import AzureChat, AzureEmbedding
    deployment = _required_model(r)
    if role == "chat":
        return AzureChat(r.endpoint, deployment=deployment, supported_models=r.supported_models, http_settings=r.http,
                         api_key=r.api_key, client=r.client)
    return AzureEmbedding(r.endpoint, deployment=deployment, http_settings=r.http, api_key=r.api_key,
                          client=r.client)


def _voyage(r: Resolved):
    from .voyage import voyage_embedding
    return voyage_embedding(r.endpoint, model=r.model, http_settings=r.http, api_key=r.api_key, client=r.client)


# --- the table -------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KindSpec:
    role: Role
    build: Callable[[Resolved], Any]
    #: Used when `api_endpoint` is not set; None makes `api_endpoint` required.
    default_endpoint: str | None = None
    #: Used when `model` is not set; with `requires_model` and no default, `model` is required.
    default_model: str | None = None
    requires_model: bool = False
    requires_api_key: bool = False
    note: str = ""


KINDS: dict[str, KindSpec] = {
    # completion
    "llama.cpp/completion": KindSpec("completion", lambda r: _llama_completion(r, False),
                                     note="llama-server /completion with Infill's prompt template"),
    "llama.cpp/infill": KindSpec("completion", lambda r: _llama_completion(r, True),
                                 note="llama-server /infill with the model's own FIM tokens"),
    "openai/completion": KindSpec("completion", lambda r: _openai_completion(r, "openai", True), requires_model=True,
                                  note="/completions with `suffix` for FIM"),
    "openai/legacy_completion_no_fim": KindSpec("completion", lambda r: _openai_completion(r, "openai", False),
                                                requires_model=True, note="/completions, templated prompt only"),
    # vLLM's OpenAI server rejects `suffix`: it takes Infill's templated prompt.
    "vllm/completion": KindSpec("completion", lambda r: _openai_completion(r, "vllm", False), requires_model=True,
                                note="vLLM /v1/completions, templated prompt"),
    "deepseek/completion": KindSpec("completion", lambda r: _openai_completion(r, "deepseek", True),
                                    default_endpoint="https://api.deepseek.com/beta", default_model="deepseek-chat",
                                    requires_api_key=True, note="DeepSeek FIM beta (/completions with `suffix`)"),
    "mistral/completion": KindSpec("completion", _mistral_completion, default_endpoint="https://api.mistral.ai",
                                   default_model="codestral-latest", requires_api_key=True,
                                   note="/v1/fim/completions"),
    "ollama/completion": KindSpec("completion", lambda r: _ollama(r, "completion"), requires_model=True,
                                  default_endpoint="http://127.0.0.1:11434", note="/api/generate with `suffix`"),
    # chat
    "llama.cpp/chat": KindSpec("chat", _llama_chat),
    "openai/chat": KindSpec("chat", _openai_chat, requires_model=True),
    "azure/chat": KindSpec("chat", lambda r: _azure(r, "chat"), requires_model=True, requires_api_key=True,
                           note="`model` is the deployment name"),
    "mistral/chat": KindSpec("chat", _mistral_chat, default_endpoint="https://api.mistral.ai",
                             default_model="codestral-latest", requires_api_key=True),
    "ollama/chat": KindSpec("chat", lambda r: _ollama(r, "chat"), requires_model=True,
                            default_endpoint="http://127.0.0.1:11434"),
    # embedding
    "llama.cpp/embedding": KindSpec("embedding", _llama_embedding, note="needs llama-server --embedding"),
    "openai/embedding": KindSpec("embedding", _openai_embedding, requires_model=True),
    "azure/embedding": KindSpec("embedding", lambda r: _azure(r, "embedding"), requires_model=True,
                                requires_api_key=True, note="`model` is the deployment name"),
    "mistral/embedding": KindSpec("embedding", _mistral_embedding, default_endpoint="https://api.mistral.ai",
                                  default_model="mistral-embed", requires_api_key=True),
    "ollama/embedding": KindSpec("embedding", lambda r: _ollama(r, "embedding"), requires_model=True,
                                 default_endpoint="http://127.0.0.1:11434"),
    "voyage/embedding": KindSpec("embedding", _voyage, default_endpoint="https://api.voyageai.com/v1",
                                 default_model="voyage-code-3", requires_api_key=True),
}


def _role_table(role: Role) -> Mapping[str, KindSpec]:
    return {kind: spec for kind, spec in KINDS.items() if spec.role == role}


COMPLETION_KINDS: Mapping[str, KindSpec] = _role_table("completion")
CHAT_KINDS: Mapping[str, KindSpec] = _role_table("chat")
EMBEDDING_KINDS: Mapping[str, KindSpec] = _role_table("embedding")


# --- checking the configuration --------------------------------------------------------------------------------------

def spec_for(cfg: ModelConfig, role: Role, section: str) -> KindSpec:
    table = _role_table(role)
    spec = table.get(cfg.kind)
    if spec is None:
        valid = ", ".join(table)
        if cfg.kind == "local":
            raise ConfigError(f"{section}.kind", f'"local" is started by the engine, not by the remote backends; '
                                                 f"remote {role} kinds: {valid}")
        other = KINDS.get(cfg.kind)
        why = f"{cfg.kind!r} is a kind for {other.role}" if other else f"unknown kind {cfg.kind!r}"
        raise ConfigError(f"{section}.kind", f"{why}; valid {role} kinds: {valid}")
    return spec


def resolve(cfg: ModelConfig, role: Role, section: str | None = None) -> tuple[KindSpec, dict[str, Any]]:
    """Check `cfg` for `role`; return the spec and the settings a builder needs (without the client)."""
    section = section or role
    spec = spec_for(cfg, role, section)
    endpoint = cfg.api_endpoint or spec.default_endpoint
    if not endpoint:
        raise ConfigError(f"{section}.api_endpoint", f"is required for kind {cfg.kind!r} "
                                                     f"(the server's base URL, e.g. http://127.0.0.1:8080/v1)")
    endpoint = http.check_endpoint(endpoint, f"{section}.api_endpoint")
    model = cfg.model or spec.default_model
    if spec.requires_model and not model:
        azure = "; for Azure the deployment name" if "azure" in cfg.kind else ""
        raise ConfigError(f"{section}.model", f"is required for kind {cfg.kind!r} (the model name the server "
                                              f"expects{azure})")
    api_key = cfg.resolved_api_key()
    if spec.requires_api_key and not api_key:
        where = (f"the environment variable {cfg.api_key_env} is not set or empty" if cfg.api_key_env
                 else "set api_key_env to the name of an environment variable holding it (or api_key)")
        raise ConfigError(f"{section}.api_key", f"kind {cfg.kind!r} needs an API key: {where}")
    settings = dict(kind=cfg.kind, endpoint=endpoint, model=model, api_key=api_key, http=cfg.http,
                    fim=cfg.prompt_template is None, supported_models=tuple(cfg.supported_models),
                    shared=cfg.shared)
    return spec, settings


def _limiter(cfg: ModelConfig, endpoint: str, model: str | None):
    rpm = cfg.rate_limit_rpm
    if rpm is None:
        if http.is_loopback(endpoint):
            return None  # a server on this machine: no limit unless configured
        rpm = DEFAULT_REMOTE_RPM
    return limiter_for(cfg.kind, endpoint, model, rpm)


def _build(cfg: ModelConfig, role: Role, section: str | None):
    spec, settings = resolve(cfg, role, section)
    try:
        client = http.acquire_client(settings["endpoint"], settings["http"])
    except ConfigError as exc:  # e.g. http.ca_bundle: name it under this section
        raise ConfigError(f"{section or role}.{exc.key}", str(exc)[len(exc.key) + 2:]) from None
    try:
        backend = spec.build(Resolved(client=client, **settings))
    except BaseException:
        # Nothing holds the client yet; drop the reference (a fresh client has no connections to close).
        http.forget_client(client)
        raise
    limiter = _limiter(cfg, settings["endpoint"], settings["model"])

    async def release() -> None:
        await http.release_client(client)

    return backend, limiter, release


def create_completion_stream(cfg: ModelConfig, section: str | None = None) -> CompletionStream:
    backend, limiter, release = _build(cfg, "completion", section)
    return RateLimited(backend, limiter, release)


def create_chat_stream(cfg: ModelConfig, section: str | None = None) -> ChatCompletionStream:
    backend, limiter, release = _build(cfg, "chat", section)
    return RateLimited(backend, limiter, release)


def create_embedding(cfg: ModelConfig, section: str | None = None) -> Embedding:
    backend, limiter, release = _build(cfg, "embedding", section)
    return RateLimited(backend, limiter, release)


__all__ = ["KINDS", "COMPLETION_KINDS", "CHAT_KINDS", "EMBEDDING_KINDS", "KindSpec", "create_completion_stream",
           "create_chat_stream", "create_embedding", "resolve"]
