"""The pygls server: thin handlers that hand each LSP message to the object that owns the concern.

documents → DocumentStore; configuration → SettingsStore; status → StatusReporter; inline completion →
Sessions (supersession, debounce) + CompletionService (cache, engine, post-processing)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from engine import __version__
from engine.api import StatusEvent
from engine.errors import ConfigError, InfillError

from .config import SECTION, ServerSettings, SettingsStore, config_file_path, load_config_file
from .context import CursorContext, build_context
from .documents import ENCODINGS, UTF16, DocumentStore, index_to_column
from .logging_setup import LoggingSetup
from .pipeline import CompletionService, Suggestion
from .secrets import excluded_by, uri_to_path
from .session import Sessions, Superseded
from .status import StatusReporter

log = logging.getLogger(__name__)

ACCEPT_COMMAND = "infill.accept"
STATS_METHOD = "infill/stats"
REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed
BUSY_AFTER_S = 0.15


class InfillServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("infill", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.documents = DocumentStore()
        self.settings_store = SettingsStore()
        self.sessions = Sessions()
        self.logging = LoggingSetup()
        self.status = StatusReporter(self._notify, self.work_done_progress, self._client_supports_progress)
        self.service: CompletionService | None = None
        self.accepted = 0
        self.shown = 0
        #: (source, milliseconds in the handler) of recent inline requests, for `infill/stats` and benchmarks.
        self.timings: deque[tuple[str, float]] = deque(maxlen=5000)
        self._config_lock = asyncio.Lock()

    # --- helpers -----------------------------------------------------------------------------------------------

    @property
    def settings(self) -> ServerSettings:
        return self.settings_store.current

    @property
    def encoding(self) -> str:
        encoding = str(getattr(self.workspace, "position_encoding", None) or UTF16)
        return encoding if encoding in ENCODINGS else UTF16

    def _notify(self, method: str, params: Any) -> None:
        self.protocol.notify(method, params)

    def _client_supports_progress(self) -> bool:
        try:
            window = self.client_capabilities.window
            return bool(window and window.work_done_progress)
        except Exception:
            return False

    def _client_supports_configuration(self) -> bool:
        try:
            workspace = self.client_capabilities.workspace
            return bool(workspace and workspace.configuration)
        except Exception:
            return False

    def show_error(self, message: str) -> None:
        log.error("%s", message)
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))

    def _secrets(self) -> list[str]:
        out = []
        for model in (self.settings.engine.completion, self.settings.engine.chat, self.settings.engine.embedding):
            if model is not None:
                key = model.resolved_api_key()
                if key:
                    out.append(key)
        return out

    def configure_logging(self) -> None:
        self.logging.configure(self.settings.log_level, self.window_log_message, self.settings.log_file,
                               self._secrets())

    def update_settings(self, layer: str, data: Any) -> bool:
        """Apply one configuration source; on an invalid value tell the user (naming the key) and keep the last
        good settings. Returns whether the settings were accepted."""
        try:
            self.settings_store.update(layer, _plain(data))
            return True
        except ConfigError as exc:
            self.show_error(f"Infill configuration: {exc} (keeping the previous configuration)")
            return False

    async def apply_settings(self) -> None:
        """Push the current settings into the running service; restarts only the engine, and only if needed."""
        self.configure_logging()
        self.status.reset_disabled()
        if self.service is None:
            return
        if self.service.settings != self.settings:
            await self.sessions.cancel_all()
            restarted = await self.service.apply_settings(self.settings)
            if restarted:
                log.info("model or backend changed: engine restarted")

    async def pull_workspace_configuration(self) -> None:
        if not self._client_supports_configuration():
            return
        try:
            result = await asyncio.wait_for(self.workspace_configuration_async(types.ConfigurationParams(
                items=[types.ConfigurationItem(section=SECTION)])), 5.0)
        except Exception as exc:
            log.warning("workspace/configuration failed: %s", exc)
            return
        value = result[0] if result else None
        if value is not None:
            self.update_settings("workspace", value)


def purge_finished_futures(ls: LanguageServer) -> None:
    """Work around a pygls 2.1 leak: each notification handled by a built-in generator handler (didOpen, didChange,
    didClose, …) leaves its finished Future in `protocol._request_futures` forever (~2 KB per keystroke).
    Dropping the finished ones keeps the server's memory flat; in-flight requests are untouched."""
    futures = getattr(ls.protocol, "_request_futures", None)
    if not futures:
        return
    for key in [key for key, future in futures.items() if future.done()]:
        del futures[key]


def _plain(value: Any) -> Any:
    """Params of custom or untyped fields may arrive as attrs objects or namedtuples; settings want dicts."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_asdict"):
        return [_plain(v) for v in value]
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    return value


def to_item(suggestion: Suggestion, ctx: CursorContext, position: types.Position, encoding: str,
            index: int) -> types.InlineCompletionItem:
    replaced = ctx.line_rest[:suggestion.replace_chars]
    end = types.Position(line=position.line,
                         character=position.character + index_to_column(replaced, len(replaced), encoding))
    return types.InlineCompletionItem(
        insert_text=suggestion.text,
        range=types.Range(start=position, end=end),
        command=types.Command(title="Infill: suggestion accepted", command=ACCEPT_COMMAND,
                              arguments=[{"uri": ctx.uri, "index": index, "length": len(suggestion.text),
                                          "source": suggestion.source}]))


def build_server() -> InfillServer:
    server = InfillServer()

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: InfillServer, params: types.InitializeParams) -> None:
        try:
            ls.settings_store.update("file", load_config_file(config_file_path()))
        except ConfigError as exc:
            ls.show_error(f"Infill configuration file: {exc}")
        ls.update_settings("initialization", params.initialization_options)

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: InfillServer, params: types.InitializedParams) -> None:
        async with ls._config_lock:
            await ls.pull_workspace_configuration()
            ls.configure_logging()
            ls.service = CompletionService(ls.settings, ls.status.on_engine_status)
            if ls.settings.enabled:
                await ls.service.start()
            else:
                ls.status.publish(StatusEvent("disabled", "Infill is turned off (enabled = false)"))

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_configuration(ls: InfillServer, params: types.DidChangeConfigurationParams) -> None:
        async with ls._config_lock:
            settings = _plain(params.settings)
            if isinstance(settings, dict) and SECTION in settings:
                ls.update_settings("change", settings[SECTION])
            elif settings:
                ls.update_settings("change", settings)
            else:  # the client only says "something changed": ask for it
                await ls.pull_workspace_configuration()
            await ls.apply_settings()
            if ls.service is not None and ls.settings.enabled and ls.service.engine is None:
                await ls.service.start()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def on_open(ls: InfillServer, params: types.DidOpenTextDocumentParams) -> None:
        purge_finished_futures(ls)
        doc = params.text_document
        ls.documents.open(doc.uri, doc.text, doc.language_id, doc.version)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def on_change(ls: InfillServer, params: types.DidChangeTextDocumentParams) -> None:
        purge_finished_futures(ls)
        doc = ls.documents.get(params.text_document.uri)
        if doc is None:
            return
        for change in params.content_changes:
            rng = getattr(change, "range", None)
            if rng is None:
                doc.apply_change(change.text, None)
            else:
                doc.apply_change(change.text, (rng.start.line, rng.start.character, rng.end.line,
                                               rng.end.character), ls.encoding)
        doc.version = params.text_document.version

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def on_close(ls: InfillServer, params: types.DidCloseTextDocumentParams) -> None:
        purge_finished_futures(ls)
        uri = params.text_document.uri
        ls.documents.close(uri)
        ls.sessions.forget(uri)
        if ls.service is not None:
            ls.service.cache.forget_document(uri)

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def on_inline_completion(ls: InfillServer, params: types.InlineCompletionParams
                                   ) -> types.InlineCompletionList:
        return await handle_inline_completion(ls, params)

    @server.command(ACCEPT_COMMAND)
    def on_accept(ls: InfillServer, *args: Any) -> None:
        ls.accepted += 1
        log.info("suggestion accepted (%d so far)", ls.accepted)

    @server.feature("textDocument/didShowCompletion")
    def on_did_show(ls: InfillServer, params: Any) -> None:
        ls.shown += 1

    @server.feature("textDocument/didPartiallyAcceptCompletion")
    def on_partial_accept(ls: InfillServer, params: Any) -> None:
        log.info("suggestion partly accepted: %s characters", getattr(params, "acceptedLength", "?"))

    @server.feature(STATS_METHOD)
    def on_stats(ls: InfillServer, params: Any) -> dict[str, Any]:
        service = ls.service
        return {"accepted": ls.accepted, "shown": ls.shown, "superseded": ls.sessions.superseded_count,
                "model_calls": service.model_calls if service else 0,
                "cache_entries": len(service.cache) if service else 0,
                "documents": len(ls.documents),
                "protocol_futures": len(getattr(ls.protocol, "_request_futures", {})),
                "timings": [[source, round(ms, 3)] for source, ms in ls.timings]}

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(ls: InfillServer, params: Any) -> None:
        await ls.sessions.cancel_all()
        if ls.service is not None:
            await ls.service.close()
        ls.logging.close()

    return server


async def handle_inline_completion(ls: InfillServer, params: types.InlineCompletionParams
                                   ) -> types.InlineCompletionList:
    entered = time.perf_counter()
    empty = types.InlineCompletionList(items=[])
    if ls._config_lock.locked():  # a configuration change or the start-up is being applied: serve after it
        async with ls._config_lock:
            pass
    uri = params.text_document.uri
    doc = ls.documents.get(uri)
    settings = ls.settings
    if doc is None or ls.service is None:
        return empty
    if not settings.enabled:
        ls.status.disabled_once("enabled", "Infill is turned off (enabled = false)")
        return empty
    glob = excluded_by(uri, settings.exclude)
    if glob is not None:
        name = uri_to_path(uri).rsplit("/", 1)[-1]
        ls.status.disabled_once(f"exclude:{uri}", f"Infill is off for {name}: it matches the exclusion {glob!r}",
                                "files that may hold secrets are never sent to a model")
        return empty
    encoding = ls.encoding
    position = params.position
    ctx = build_context(doc, position.line, position.character, encoding, policy=settings.multiline,
                        indent_unit=settings.indent_unit, filepath=uri_to_path(uri))
    invoked = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
    service = ls.service

    cached = service.lookup(ctx)
    if cached is not None:
        # Still supersede an older request for the document: the user has moved on.
        suggestions = await ls.sessions.run(uri, _value(cached))
        result = types.InlineCompletionList(items=[to_item(s, ctx, position, encoding, i)
                                                   for i, s in enumerate(suggestions)])
        ls.timings.append((suggestions[0].source if suggestions else "cache", (time.perf_counter() - entered) * 1000))
        return result
    delay_ms = 0.0
    if not invoked:
        ls.sessions.note_automatic(uri)
        d = settings.debounce
        delay_ms = ls.sessions.debounce_ms(uri, d.mode, d.fixed_ms, d.min_ms, d.max_ms)
    started = time.perf_counter()
    # "busy" only for requests that take a noticeable time: two notifications per keystroke would be noise.
    busy = asyncio.get_running_loop().call_later(BUSY_AFTER_S, _publish_busy, ls)
    try:
        suggestions = await ls.sessions.run(uri, lambda: service.generate(ctx, invoked), delay_ms / 1000.0)
    except Superseded:
        return empty
    except InfillError as exc:
        message = f"Infill completion failed: {exc}"
        ls.status.publish(StatusEvent("error", message))
        log.error("%s", message)
        raise JsonRpcException(message, code=REQUEST_FAILED) from None
    finally:
        busy.cancel()
        if ls.status.current.kind == "busy":
            ls.status.publish(StatusEvent("ready", "Infill is ready"))
    ls.sessions.record_latency((time.perf_counter() - started) * 1000.0 - delay_ms)
    if ls.status.current.kind != "ready":
        ls.status.publish(StatusEvent("ready", "Infill is ready"))
    ls.timings.append(("model", (time.perf_counter() - entered) * 1000))
    return types.InlineCompletionList(items=[to_item(s, ctx, position, encoding, i)
                                             for i, s in enumerate(suggestions)])


def _publish_busy(ls: InfillServer) -> None:
    if ls.status.current.kind == "ready":
        ls.status.publish(StatusEvent("busy", "Infill is completing"))


def _value(value: Any):
    async def give() -> Any:
        return value
    return give


def main_stdio() -> None:
    build_server().start_io()


def main_tcp(host: str, port: int) -> None:
    build_server().start_tcp(host, port)
