"""The local backend: one supervised llama-server per model file, and the clients (completion, tokenizer, and chat
and embedding ones) pointed at it.

Why shared: two engines configured with the same model file and server settings would otherwise load the model
twice; `start_local_server` hands out one reference-counted LocalServer per (model file, settings) and the last
`close()` stops the child. In practice only the completion role starts one (engine/api.py `Engine._start`, kind
"local"): the completion engine, and a separate next-edit model with kind "local" (lsp_server/next_edit/model.py
builds it as a second Engine), which shares the completion's server when model and settings are the same. Next-edit
prompts for the completion model go to the completion's server too (`LocalCompletion` without `/infill`).
`chat_stream()` and `embedding()` exist, but no feature calls them: no feature uses a `chat` model yet, and a local
`embedding` model is not used for re-ranking (lsp_server/workspace/lsp.py `attach_embedding` takes remote kinds).

Why the engines wait: after a crash the supervisor restarts llama-server (maybe on another port); the engines ask
for the current base URL before each request and wait for the restart instead of failing every request meanwhile.

Across processes (`completion.local.share`, on by default): the llama-server itself is one per machine for the same
model and server settings (engine.local.shared): this process runs it (the owner) or uses another Infill process's
(attached), and takes it over when that process goes away."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path
from typing import Any

from ..backends.llama_cpp import (LlamaCppChat, LlamaCppCompletion, LlamaCppEmbedding, LlamaCppTokenizer,
                                  supports_infill)
from ..config import EngineConfig, HttpSettings, LocalServerSettings, ModelConfig
from ..errors import BackendError, BackendUnavailable
from ..models import ResolvedModel, resolve_model
from ..prompt import PromptTemplate
from ..types import CompletionOptions, Prompt, StatusCallback, StatusEvent
from .binary import require_llama_server
from .shared import ModelServer, RunDirError, SharedLlamaServer, prepare_run_dir, run_dir, server_key
from .slots import SlotRouter
from .supervisor import LlamaServerSupervisor

log = logging.getLogger(__name__)

#: The name of the template used when llama-server applies the model's own FIM tokens (`/infill`).
MODEL_FIM_TEMPLATE = "model-fim-tokens"
#: Local requests never go through a proxy; generation on a busy CPU can pause for a while between tokens.
LOCAL_HTTP = HttpSettings(connect_timeout=5.0, read_timeout=120.0, max_retries=2)


def _threadsafe(on_status: StatusCallback | None) -> StatusCallback:
    """Model resolution (assembly, downloads) runs in a worker thread; its events are delivered on the loop."""
    loop = asyncio.get_running_loop()

    def emit(event: StatusEvent) -> None:
        if on_status is None:
            return
        if loop.is_closed():
            return
        loop.call_soon_threadsafe(on_status, event)

    return emit


# ---------------------------------------------------------------------------------------------------------------------
# Engines bound to the supervised server


class _LocalEndpoint:
    """Mixin: the base URL is the supervisor's current one, waited for while it (re)starts."""

    _server: "LocalServer"

    async def base_url(self) -> str:
        return await self._server.ready_url()


class LocalCompletion(_LocalEndpoint, LlamaCppCompletion):
    """A completion stream on the local server. While other Infill processes use the same server (engine.local.shared),
    requests are not pinned to slots: a pin to a slot another process is busy with would wait while another slot is
    idle. Guesses (prefetches, warm-ups) go on as on a server of one's own, not through the shared-server gate of a
    team's server: the processes are one person's editors, who type in one at a time, and with the gate an idle
    second window held the typing one's prefetches (keystrokes saved 20.3 → 15.5 %, bench.replay.several_editors)."""

    def __init__(self, server: "LocalServer", use_infill: bool):
        self._server = server
        super().__init__(server.endpoint_or_none() or "http://127.0.0.1", use_infill=use_infill, http=LOCAL_HTTP)

    @property
    def router(self) -> SlotRouter | None:  # type: ignore[override]
        """The server's router while this process runs it; None (llama-server chooses) while attached. It only ever
        changes from None to a router (a takeover), so a request's `begin` and `end` go to the same one."""
        return self._server.slot_router

    def _pin(self, body: dict[str, Any], prompt: Prompt, options: CompletionOptions) -> int | None:
        if self._server.shared_with_others:  # a pin to a slot another process is using would wait for it
            return None
        return super()._pin(body, prompt, options)


class LocalChat(_LocalEndpoint, LlamaCppChat):
    def __init__(self, server: "LocalServer"):
        self._server = server
        super().__init__(server.endpoint, http=LOCAL_HTTP)


class LocalEmbedding(_LocalEndpoint, LlamaCppEmbedding):
    def __init__(self, server: "LocalServer"):
        self._server = server
        super().__init__(server.endpoint, http=LOCAL_HTTP)


class LocalTokenizer(_LocalEndpoint, LlamaCppTokenizer):
    def __init__(self, server: "LocalServer"):
        self._server = server
        super().__init__(server.endpoint, http=LOCAL_HTTP)


# ---------------------------------------------------------------------------------------------------------------------


class LocalServer:
    """A running llama-server and what the engine needs from it. `backing`: the supervisor of this process's own
    server (`share = false`), or a SharedLlamaServer (this process runs it for the machine, or uses another's)."""

    def __init__(self, backing: ModelServer, model: ResolvedModel, cfg: ModelConfig, key: tuple):
        self.backing = backing
        self.model = model
        self.cfg = cfg
        self._key = key
        self._refs = 1
        self.has_fim = False
        self._tokenizer: LocalTokenizer | None = None
        self._closed = False
        self._router: SlotRouter | None = None

    @property
    def supervisor(self) -> LlamaServerSupervisor | None:
        """This process's supervisor; None while another Infill process runs the server."""
        if isinstance(self.backing, LlamaServerSupervisor):
            return self.backing
        if isinstance(self.backing, SharedLlamaServer):
            return self.backing.supervisor
        return None

    @property
    def settings(self) -> LocalServerSettings:
        return self.backing.settings

    @property
    def shared_with_others(self) -> bool:
        """Other Infill processes use this server now: another runs it, or this one runs it and others are attached."""
        backing = self.backing
        return isinstance(backing, SharedLlamaServer) and (not backing.owns or backing.others_attached())

    @property
    def slot_router(self) -> SlotRouter | None:
        """While this process runs the server, Infill chooses the slot of each completion (see engine.local.slots);
        while another process runs it, llama-server does."""
        if self.supervisor is None:
            return None
        if self._router is None:
            self._router = SlotRouter(self.settings.parallel)
        return self._router

    def describe(self) -> str | None:
        """Who runs the model server (None: this process, not shared)."""
        return self.backing.describe() if isinstance(self.backing, SharedLlamaServer) else None

    @property
    def endpoint(self) -> str:
        return self.backing.base_url

    def endpoint_or_none(self) -> str | None:
        try:
            return self.backing.base_url
        except BackendError:
            return None

    @property
    def failed_reason(self) -> str | None:
        return self.backing.failed_reason

    async def ready_url(self) -> str:
        """The current base URL, waiting (up to the start timeout) while llama-server restarts."""
        if self._closed:
            raise BackendError("llama-server", "the local model server was closed")
        return await self.backing.wait_ready(self.settings.start_timeout)

    async def _detect_fim(self) -> None:
        """`/props` does not list FIM tokens, so ask `/infill` for one token (501 = no FIM tokens); when that fails
        for another reason, trust the GGUF metadata."""
        try:
            self.has_fim = await supports_infill(await self.ready_url(), http=LOCAL_HTTP)
        except BackendError as exc:
            log.warning("could not probe /infill (%s); using the GGUF metadata", exc)
            self.has_fim = self.model.has_fim

    def completion_stream(self, cfg: ModelConfig | None = None) -> LlamaCppCompletion:
        """`/infill` with the model's FIM tokens when it has them and no prompt template is configured, else
        `/completion` with the templated prompt. `cfg`: the caller's configuration (see `_template_setting`)."""
        use_infill = self.has_fim and not self._template_setting(cfg)
        return LocalCompletion(self, use_infill)

    def chat_stream(self) -> LlamaCppChat:
        return LocalChat(self)

    def embedding(self) -> LlamaCppEmbedding:
        """Embeddings need llama-server started with `--embedding`, which is the `local.embedding` setting."""
        if not self.settings.embedding:
            raise BackendUnavailable("llama-server", f"{self.model.path.name} was started without embeddings: "
                                                     "set local.embedding = true for this model")
        return LocalEmbedding(self)

    async def count_tokens(self, text: str) -> int:
        if self._tokenizer is None:
            self._tokenizer = LocalTokenizer(self)
        return await self._tokenizer.count_tokens(text)

    def _template_setting(self, cfg: ModelConfig | None) -> str | None:
        """The template setting of `cfg`, the configuration of the engine asking, else of the one that started this
        server. They differ: the server is shared by every engine with the same model file and server settings,
        and a new engine for a changed `prompt_template` (started before the old one is closed) gets the old one's
        server, whose `cfg` still held the old template (the change took no effect until a restart)."""
        return (cfg or self.cfg).prompt_template or self.model.prompt_template

    def prompt_template(self, cfg: ModelConfig | None = None) -> PromptTemplate:
        """The `engine.prompt.PromptTemplate` for this model: the `prompt_template` setting or the model
        directory's; with neither, the model's own FIM tokens through `/infill` (the template then only says "keep
        the suffix": llama-server adds the tokens); with no FIM tokens either, prefix-only with a warning."""
        setting = self._template_setting(cfg)
        if setting:
            return PromptTemplate.from_setting(setting)
        if self.has_fim:
            return PromptTemplate(name=MODEL_FIM_TEMPLATE, template="{prefix}{suffix}")
        if self.model.has_fim:  # else resolving the model already said so, from the same metadata
            log.warning("the model %s has no FIM tokens and no prompt_template is configured: completing from the "
                        "text before the cursor only (set completion.prompt_template to use the text after it)",
                        self.model.path)
        return PromptTemplate.from_setting(None)

    async def close(self) -> None:
        """Drop one reference; the last one stops llama-server."""
        if self._closed:
            return
        self._refs -= 1
        if self._refs > 0:
            return
        self._closed = True
        if _SERVERS.get(self._key) is self:
            del _SERVERS[self._key]
        if self._tokenizer is not None:
            await self._tokenizer.close()
        await self.backing.stop()


_SERVERS: dict[tuple, LocalServer] = {}
_STARTING: dict[tuple, asyncio.Future] = {}


def server_settings(settings: LocalServerSettings, model: ResolvedModel) -> LocalServerSettings:
    """The settings the server is started with: the model directory's chat template unless one is configured."""
    if model.chat_template and not settings.chat_template:
        return dataclasses.replace(settings, chat_template=model.chat_template)
    return settings


def _machine_server(binary: str, model: ResolvedModel, settings: LocalServerSettings,
                    on_status: StatusCallback | None) -> LlamaServerSupervisor | SharedLlamaServer:
    """The server shared with the other Infill processes of this machine (`share`), else this process's own."""
    if settings.share:
        directory = run_dir()
        try:
            prepare_run_dir(directory)
            key = server_key(binary, model.path, settings)
        except (RunDirError, OSError) as exc:
            log.warning("not sharing llama-server with other Infill processes: %s", exc)
        else:
            return SharedLlamaServer(binary, model.path, settings, directory, key, on_status=on_status)
    return LlamaServerSupervisor(binary, model.path, settings, on_status=on_status)


async def start_local_server(cfg: ModelConfig, engine_cfg: EngineConfig,
                             on_status: StatusCallback | None = None) -> LocalServer:
    """The shared LocalServer for `cfg`'s model file and server settings, started (and healthy) when this returns.

    Raises BackendUnavailable (no binary, or the supervisor gave up, with its diagnosis) or ModelError."""
    emit = _threadsafe(on_status)
    model = await asyncio.to_thread(resolve_model, cfg, engine_cfg, emit)
    settings = server_settings(cfg.local, model)
    key = (str(Path(model.path).resolve()), settings)

    existing = _SERVERS.get(key)
    if existing is not None and not existing._closed and existing.failed_reason is None:
        existing._refs += 1  # taken before the wait, so that the other holders' close() does not stop it meanwhile
        try:
            await existing.ready_url()
        except BaseException:
            await existing.close()  # not ready (it gave up) or the start was cancelled: the reference goes back
            raise
        return existing
    pending = _STARTING.get(key)
    if pending is not None:
        server = await asyncio.shield(pending)
        server._refs += 1
        return server

    future: asyncio.Future = asyncio.get_running_loop().create_future()
    _STARTING[key] = future
    try:
        binary = require_llama_server(settings.binary)
        backing = _machine_server(binary, model, settings, on_status)
        await backing.start()
        server = LocalServer(backing, model, cfg, key)
        try:
            await server._detect_fim()
        except BaseException:
            await backing.stop()
            raise
        _SERVERS[key] = server
        future.set_result(server)
        return server
    except BaseException as exc:
        if not future.done():
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # retrieved here so an unshared failure is not reported as "never retrieved"
        raise
    finally:
        _STARTING.pop(key, None)
