"""The small surface the LSP layer uses: build an Engine from configuration, start it, ask for completions.

The engine reports its state as StatusEvents through a callback (it never prints); the LSP layer maps them to
`$/progress` and `infill/didChangeStatus`."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable

from .config import EngineConfig, ModelConfig
from .deadlines import wait_for
from .errors import BackendError, BackendUnavailable, ConfigError, InfillError
from .types import (Completion, CompletionOptions, CompletionRequest, StatusCallback,
                    StatusEvent)

if TYPE_CHECKING:  # imported when the engine starts: a remote backend never loads the local server's modules
    from .code import CodeGeneration
    from .local.server import LocalServer
    from .next_edit.types import NextEditOptions, NextEditRequest, Prediction
    from .streams import ChatCompletionStream, CompletionStream

__all__ = ["Engine", "StatusCallback", "StatusEvent"]

log = logging.getLogger(__name__)


def check_config(config: EngineConfig) -> None:
    """Check everything an engine start would reject, without starting anything: the language table, each model's
    kind (known, and of the right role), endpoint, model name, API key and prompt template.

    The LSP layer calls this when settings arrive, so a bad value is refused there, naming its key, while the
    running engine keeps serving; otherwise it would surface only when the new engine fails to start."""
    from .backends import resolve
    from .languages import LanguageTable
    from .prompt import PromptTemplate

    LanguageTable.load(config.languages)
    for role in ("completion", "chat", "embedding"):
        cfg: ModelConfig | None = getattr(config, role)
        if cfg is None:
            continue
        if cfg.kind != "local":  # "local" is checked when llama-server starts
            resolve(cfg, role, role)
        if role == "completion":
            try:
                PromptTemplate.from_setting(cfg.prompt_template)
            except ConfigError:
                raise
            except ValueError as exc:
                raise ConfigError(f"{role}.prompt_template", str(exc).removeprefix("prompt_template: ")) from None


def is_chat_kind(kind: str) -> bool:
    from .backends import CHAT_KINDS

    return kind in CHAT_KINDS


def check_next_edit_model(cfg: ModelConfig, section: str = "next_edit.model") -> None:
    """Check a next-edit model's configuration without starting anything: a completion kind (or "local"), or a chat
    kind (it gets the instruction form). ConfigError naming the key otherwise."""
    from .backends import resolve

    if cfg.kind == "local":
        return
    resolve(cfg, "chat" if is_chat_kind(cfg.kind) else "completion", section)


class Engine:
    """Owns the completion backend (and the local llama-server when `kind = "local"`).

    `start()` returns at once after scheduling the backend start; `complete()` waits for readiness up to
    `ready_timeout` so that requests made while the model loads are served when it is ready, not failed."""

    def __init__(self, config: EngineConfig, on_status: StatusCallback | None = None):
        self.config = config
        self._on_status = on_status or (lambda event: None)
        self._ready = asyncio.Event()
        self._start_task: asyncio.Task | None = None
        self._start_error: BaseException | None = None
        self._local: LocalServer | None = None  # when kind == "local"
        self._generation: CodeGeneration | None = None
        #: A chat kind as the model (a next-edit engine with the instruction form): no completions.
        self._chat: ChatCompletionStream | None = None
        #: The raw `/completion` stream of next-edit suggestions (made on first use; see _next_edit_stream).
        self._next_edit_completion: CompletionStream | None = None
        self._owns_next_edit_completion = False
        self.status = StatusEvent("starting", "Infill is starting")

    def _emit(self, event: StatusEvent) -> None:
        self.status = event
        try:
            self._on_status(event)
        except Exception:  # a status listener must never break the engine
            log.exception("status callback failed")

    def _emit_server(self, event: StatusEvent) -> None:
        """The local server's events. While the engine starts, the server answering is a step of the start (the
        engine probes it and builds its generation after that): the engine says "ready" once, when it can complete.
        After the start, the server's "ready" ends a restart and is passed on as it is."""
        if event.kind == "ready" and not self._ready.is_set():
            event = StatusEvent("starting", event.message, event.detail, percent=100)
        self._emit(event)

    async def start(self) -> None:
        if self._start_task is None:
            self._start_task = asyncio.create_task(self._start())

    async def _start(self) -> None:
        from .code import CodeGeneration
        from .languages import LanguageTable
        from .prompt import PromptTemplate

        cfg: ModelConfig = self.config.completion
        try:
            languages = LanguageTable.load(self.config.languages)
            self._emit(StatusEvent("starting", f"Starting the {cfg.kind} completion backend", percent=0))
            count_tokens = None
            stream: CompletionStream
            if cfg.kind == "local":
                from .local.server import start_local_server

                self._local = await start_local_server(cfg, self.config, on_status=self._emit_server)
                stream = self._local.completion_stream(cfg)
                count_tokens = self._local.count_tokens
                template = self._local.prompt_template(cfg)
            elif is_chat_kind(cfg.kind):
                from .backends import create_chat_stream

                # Only a next-edit engine has a chat kind as its model (check_config refuses it for completion):
                # it answers predict_next_edit in the instruction form and has no code generation.
                self._chat = create_chat_stream(cfg, "completion")
                self._emit(StatusEvent("ready", "Infill is ready"))
                return
            else:
                from .backends import create_completion_stream

                stream = create_completion_stream(cfg)
                if cfg.prompt_template is None and getattr(stream, "native_fim", False):
                    # No template set and the API takes `prompt` + `suffix` itself: send the suffix natively.
                    template = PromptTemplate.native_fim()
                else:
                    template = PromptTemplate.from_setting(cfg.prompt_template)
                    if template.prefix_only:
                        log.warning("kind %s takes a templated prompt and no prompt_template with {suffix} is set: "
                                    "completing from the text before the cursor only", cfg.kind)
            self._generation = CodeGeneration(
                stream, template, languages, count_tokens=count_tokens,
                max_prefix_tokens=cfg.max_prefix_tokens, max_suffix_tokens=cfg.max_suffix_tokens,
                stable_clip=cfg.stable_clip, extra_stop_words=cfg.additional_stop_words)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # shown to the user; the LSP server keeps running
            self._start_error = exc
            self._emit(StatusEvent("error", f"Infill could not start its model: {exc}"))
            log.error("engine start failed: %s", exc)
        else:
            # with a shared local server: who runs it (this process, or which other Infill process)
            self._emit(StatusEvent("ready", "Infill is ready",
                                   detail=self._local.describe() if self._local is not None else None))
        finally:
            self._ready.set()

    async def wait_ready(self, timeout: float) -> None:
        if self._start_task is None:
            await self.start()
        try:
            await wait_for(self._ready.wait(), timeout)
        except asyncio.TimeoutError:
            raise BackendUnavailable("infill", f"the model is still loading after {timeout:g} s") from None
        if self._start_error is not None:
            raise BackendUnavailable("infill", f"the model could not start: {self._start_error}")
        if self._local is not None and self._local.failed_reason:
            raise BackendUnavailable("llama-server", self._local.failed_reason)

    async def complete(self, request: CompletionRequest, options: CompletionOptions,
                       ready_timeout: float = 120.0, deadline: float | None = None,
                       on_text: Callable[[str], None] | None = None) -> Completion:
        """`deadline`: seconds the generation may take once the model is ready (None: no limit). `on_text`: called
        with the text so far each time it grows."""
        await self.wait_ready(ready_timeout)
        return await self._require_generation().generate(request, options, deadline, on_text)

    def _require_generation(self) -> CodeGeneration:
        if self._generation is None:
            raise BackendUnavailable("infill", f"the model (kind {self.config.completion.kind}) is a chat model: it "
                                               "gives next-edit suggestions only, not completions")
        return self._generation

    async def warm(self, request: CompletionRequest) -> bool:
        """Prefill the request's context into the model server's cache when the engine is ready (never waits)."""
        if self._generation is None or not self._ready.is_set():
            return False
        return await self._generation.warm(request)

    async def complete_choices(self, request: CompletionRequest, options: CompletionOptions, count: int,
                               ready_timeout: float = 120.0) -> list[Completion] | None:
        """Several completions from one prefill where the backend supports it (llama-server `n_cmpl`, at most
        one per slot of Infill's own server); None otherwise (or when the server refuses), so the caller falls
        back to separate requests."""
        await self.wait_ready(ready_timeout)
        generation = self._require_generation()
        if self._local is not None:
            count = min(count, self._local.settings.parallel)
        try:
            return await generation.generate_choices(request, options, count)
        except BackendError as exc:
            if exc.status != 400:  # 400: an older server without n_cmpl, or more choices than slots
                raise
            log.info("several choices from one prefill refused (%s): separate requests", exc)
            return None

    async def shared_server_busy(self) -> str | None:
        """Why optional work should wait now on a model server others share (other users' requests hold its slots,
        or it answered 429/503); None when it need not, or when the server is not a shared one (Infill's own)."""
        gate = getattr(self._generation.stream, "gate", None) if self._generation is not None else None
        return await gate.busy_with_others() if gate is not None else None

    @property
    def generation(self):
        return self._generation

    # --- next-edit suggestions ------------------------------------------------------------------------------------

    def next_edit_format(self, options: NextEditOptions) -> str:
        """The prompt format: the option when set, else chosen from the model (its setting and, for Infill's own
        llama-server, the GGUF metadata) and its kind."""
        from .next_edit.formats import choose_format

        if options.format != "auto":
            return options.format
        cfg = self.config.completion
        metadata = None
        if self._local is not None and self._local.model.info is not None:
            metadata = self._local.model.info.metadata
        model = cfg.model
        if self._local is not None:
            model = f"{cfg.model or ''} {self._local.model.path.name}"
        return choose_format(model, metadata, cfg.kind)

    def _next_edit_stream(self) -> CompletionStream | None:
        """A stream that sends the raw prompt: llama-server's `/completion` even where completions use `/infill`
        (Infill's own server with a FIM model, or kind llama.cpp/infill); otherwise the completion stream itself
        (every completion kind takes a prompt without a suffix as its prompt)."""
        if self._next_edit_completion is not None:
            return self._next_edit_completion
        if self._generation is None:
            return None
        stream = self._generation.stream
        if self._local is not None:
            from .local.server import LocalCompletion

            stream = LocalCompletion(self._local, use_infill=False)
            self._owns_next_edit_completion = True
        elif self.config.completion.kind == "llama.cpp/infill":
            import dataclasses

            from .backends import create_completion_stream

            stream = create_completion_stream(dataclasses.replace(self.config.completion, kind="llama.cpp/completion"))
            self._owns_next_edit_completion = True
        self._next_edit_completion = stream
        return stream

    async def predict_next_edit(self, request: NextEditRequest, options: NextEditOptions,
                                ready_timeout: float = 120.0, request_timeout: float = 30.0) -> Prediction:
        """The user's likely next edit (or none, with the reason). Never raises for model failures (the reason says
        "model error: ..."); cancelling the task stops the generation (the HTTP request is closed)."""
        from .next_edit.predict import predict
        from .next_edit.types import Prediction

        try:
            await self.wait_ready(ready_timeout)
        except BackendUnavailable as exc:
            return Prediction(None, f"model error: {exc}", options.format)
        name = self.next_edit_format(options)
        return await predict(request, options, name, completion=self._next_edit_stream(), chat=self._chat,
                             request_timeout=request_timeout)

    async def close(self) -> None:
        if self._start_task is not None and not self._start_task.done():
            self._start_task.cancel()
            try:
                await self._start_task
            except (asyncio.CancelledError, InfillError):
                pass
        if self._owns_next_edit_completion and self._next_edit_completion is not None:
            await self._next_edit_completion.close()
        self._next_edit_completion = None
        if self._chat is not None:
            await self._chat.close()
        if self._generation is not None:
            await self._generation.close()
        if self._local is not None:
            await self._local.close()
