"""The pygls server: thin handlers that hand each LSP message to the object that owns the concern.

documents → DocumentStore; configuration → SettingsStore; status → StatusReporter; inline completion →
inline_completion.py (Sessions for supersession and debounce, CompletionService for the cache, the engine and the
post-processing); next edits → next_edit.NextEdit; workspace context → workspace/lsp.py."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol.language_server import lsp_method

from engine import __version__
from engine.deadlines import wait_for
from engine.errors import ConfigError, InfillError

from .inline_completion import ACCEPT_COMMAND, accept_arguments_problem, handle_inline_completion, shown_text
from .next_edit import protocol as next_edit_protocol
from .protocol import (MAX_MESSAGE_BYTES, AnsweringProtocol, StdinReader, read_messages,
                       strict_converter)

if TYPE_CHECKING:  # the parts are imported after `initialize` is answered (InfillServer.load)
    from .config import ServerSettings, SettingsStore
    from .documents import DocumentStore
    from .logging_setup import LoggingSetup
    from .notebooks import Notebooks
    from .pipeline import CompletionService
    from .session import Sessions
    from .speculation import Speculation
    from .status import StatusReporter
    from .next_edit.feature import NextEdit
    from .workspace.provider import WorkspaceContext

log = logging.getLogger(__name__)

STATS_METHOD = "infill/stats"
#: How long a `workspace/configuration` pull waits for the client's answer (then the previous settings stay).
CONFIGURATION_PULL_TIMEOUT_S = 5.0


class InfillProtocol(AnsweringProtocol):
    """pygls's protocol without its text synchronisation, so that Infill's DocumentStore is the only copy.

    pygls registers built-in didOpen/didChange/didClose handlers that run before ours, keep a second copy of every
    document (updated in O(document) per keystroke), clamp the change's `Range` objects in place (we then applied the
    clamped ranges) and split lines at characters LSP does not break at (`\\f`, `\\u2028`, …). A built-in is registered
    only when the attribute is callable, so setting these to None leaves our own features as the only handlers. The
    same for notebooks: pygls's built-ins keep a copy of every cell, and raise on a change for a notebook or a cell
    they do not have, after which our handler is not run at all."""

    lsp_text_document__did_open = None  # type: ignore[assignment]
    lsp_text_document__did_change = None  # type: ignore[assignment]
    lsp_text_document__did_close = None  # type: ignore[assignment]
    lsp_notebook_document__did_open = None  # type: ignore[assignment]
    lsp_notebook_document__did_change = None  # type: ignore[assignment]
    lsp_notebook_document__did_close = None  # type: ignore[assignment]

    def _dispatch(self, message: Any) -> None:
        """Every handler but initialize's finds the server's parts built: `InfillServer.load` runs right after the
        `initialize` answer, and a message handled before that (several read at once, as over TCP) builds them
        first. A failure is logged and the message still goes to its handler, so a request is answered (with an
        error) even then."""
        server = self._server
        if isinstance(server, InfillServer) and getattr(message, "method", None) not in (types.INITIALIZE, types.EXIT):
            try:
                server.load()
            except Exception:
                log.exception("building the server's parts failed")
        super()._dispatch(message)

    def _structure(self, data: dict[str, Any]) -> Any:
        """A request method sent as a notification (copilot.el's `workspace/executeCommand`) runs the request's
        handler without an answer; pygls would try to structure it as a request and drop it for lacking an id."""
        notification = next_edit_protocol.structure_request_notification(self._converter, data)
        return notification if notification is not None else super()._structure(data)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        """pygls's initialize, plus `capabilities.experimental.infill.nextEdit`: how a client tells that Infill
        answers next-edit requests (pygls computes capabilities only from the LSP features it knows).

        A rootUri that urllib cannot parse ("http://[::1") is ignored with a warning: pygls parses it while it
        builds the workspace, and its ValueError left a server that had taken `initialize` but had no workspace
        for any later request. It only names a folder to take context from."""
        if params.root_uri is not None:
            try:
                urlsplit(params.root_uri)
            except ValueError as exc:
                log.warning("initialize: ignored the rootUri %.200r, which is not a URI (%s)", params.root_uri, exc)
                params.root_uri = None
        result = yield from super().lsp_initialize(params)
        experimental = result.capabilities.experimental
        experimental = dict(experimental) if isinstance(experimental, dict) else {}
        experimental["infill"] = {**experimental.get("infill", {}), "nextEdit": dict(next_edit_protocol.CAPABILITY)}
        result.capabilities.experimental = experimental
        return result


class InfillServer(LanguageServer):
    """The server and the parts each concern lives in.

    An editor waits for the `initialize` answer before it sends anything else, so the start is ordered around it:

    1. `build_server()` registers the handlers; the parts' modules are not imported yet.
    2. `initialize` is answered (pygls computes the capabilities from the handlers); `on_initialize` only keeps the
       params and schedules `load()` in the event loop's next turn, i.e. right after the answer is written.
    3. `load()` imports and builds the parts (documents, settings, sessions, logging, status, workspace context,
       speculation, next edit), applies the configuration file and initializationOptions, and ends the garbage
       collector's pause of the start (lsp_server/startup.py).
    4. `initialized` (`on_initialized`) pulls the workspace configuration and starts the completion engine.

    A message handled before step 3 (read together with `initialize`) builds the parts first:
    `InfillProtocol._dispatch` calls `load()` before every handler, which returns at once when they exist. Code that
    builds a server by hand (tests) calls `load()` itself."""

    documents: DocumentStore
    settings_store: SettingsStore
    sessions: Sessions
    logging: LoggingSetup
    status: StatusReporter
    workspace_context: WorkspaceContext
    speculation: Speculation
    next_edit: NextEdit
    notebooks: Notebooks

    def __init__(self) -> None:
        super().__init__("infill", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=NOTEBOOK_SYNC, protocol_cls=InfillProtocol,
                         converter_factory=strict_converter)
        self.service: CompletionService | None = None
        self.accepted = 0
        self.shown = 0
        #: (source, milliseconds in the handler) of recent inline requests, for `infill/stats` and benchmarks.
        self.timings: deque[tuple[str, float]] = deque(maxlen=5000)
        self.config_lock = asyncio.Lock()
        self._workspace_tick: asyncio.Task | None = None
        #: Whether `initialized` has been handled (a repeated one is ignored).
        self._initialized_seen = False
        self._embedding: Any = None
        self._loaded = False
        #: InitializeParams kept for `load()`: the configuration they carry is applied there.
        self._initialize_params: types.InitializeParams | None = None
        #: The process's exit code, from the `exit` notification: 0 after `shutdown`, 1 without it (LSP).
        self.exit_code = 0

    def load(self) -> None:
        """Build the parts and apply the initial configuration, once; then end the garbage collector's pause."""
        if self._loaded:
            return
        self._loaded = True
        try:
            self._build_parts()
            if self._initialize_params is not None:
                self._apply_initial_configuration(self._initialize_params)
        finally:
            from .startup import end_pause

            end_pause()

    def _build_parts(self) -> None:
        from .config import SettingsStore
        from .documents import DocumentStore
        from .logging_setup import LoggingSetup
        from .next_edit.feature import NextEdit
        from .notebooks import Notebooks
        from .session import Sessions
        from .speculation import Speculation
        from .status import StatusReporter
        from .workspace.provider import WorkspaceContext

        self.documents = DocumentStore()
        self.notebooks = Notebooks()
        self.settings_store = SettingsStore()
        self.sessions = Sessions()
        self.logging = LoggingSetup()
        self.status = StatusReporter(self._notify, self.work_done_progress, self._client_supports_progress,
                                     lambda: self.speculation.prefetch_decision().describe())
        #: Snippets from other files for the prompt (lsp_server/workspace).
        self.workspace_context = WorkspaceContext(self.settings.context, self.documents, self.settings.exclude)
        self.speculation = Speculation(self)
        #: Next-edit suggestions (lsp_server/next_edit).
        self.next_edit = NextEdit(self.documents, lambda: self.settings, lambda: self.encoding,
                                  lambda: self.workspace_context.folders,
                                  lambda: self.service.engine if self.service is not None else None)

    def _apply_initial_configuration(self, params: types.InitializeParams) -> None:
        """The configuration file, then initializationOptions (a bad value is shown to the user, naming its key,
        and the defaults stay), and the workspace folders."""
        from .config import config_file_path, load_config_file
        from .workspace import lsp as workspace_lsp

        try:
            self.settings_store.update("file", load_config_file(config_file_path()))
        except ConfigError as exc:
            self.show_error(f"Infill configuration file: {exc}")
        self.update_settings("initialization", params.initialization_options)
        self.workspace_context.folders = workspace_lsp.folders_from_initialize(params)

    def speculation_stats(self) -> dict[str, Any]:
        return self.speculation.stats()

    # --- helpers -----------------------------------------------------------------------------------------------

    @property
    def settings(self) -> ServerSettings:
        return self.settings_store.current

    @property
    def encoding(self) -> str:
        from .documents import ENCODINGS, UTF16

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

    def _start_io_async(self, stdin: Any = None, stdout: Any = None) -> None:
        """pygls's stdio loop with Infill's reader (`protocol.read_messages`), which does not lose the messages after
        a malformed frame."""
        log.info("starting the stdio server")
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        reader = StdinReader(stdin or sys.stdin.buffer, self.thread_pool)
        try:
            asyncio.run(read_messages(reader, cast(AnsweringProtocol, self.protocol), self._stop_event))
        except BrokenPipeError:
            log.error("the connection to the client is lost: shutting down")
        except KeyboardInterrupt:
            pass
        except SystemExit:  # pygls's `exit` handler
            self.exit_code = self._exit_code()
        finally:
            self.shutdown()

    def start_tcp(self, host: str, port: int) -> None:
        """pygls's TCP server with Infill's reader, as for stdio: the same framing, answers and errors whichever
        transport the client chose (pygls's own loop loses messages after a malformed frame)."""
        log.info("starting the TCP server on %s:%s", host, port)
        self._stop_event = stop_event = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)
            try:
                await read_messages(reader, cast(AnsweringProtocol, self.protocol), stop_event)
            except (asyncio.IncompleteReadError, ConnectionError):
                log.error("the connection to the client is lost: shutting down")
            except Exception:  # e.g. a header line longer than the stream's limit: never a silent dead connection
                log.exception("the connection to the client failed: shutting down")
            self.shutdown()

        async def serve() -> None:
            # a header line may be as long as a message may be (stdin's reader has no limit; asyncio's is 64 KiB)
            self._server = await asyncio.start_server(connection, host, port, limit=MAX_MESSAGE_BYTES)
            async with self._server:
                await self._server.serve_forever()

        try:
            asyncio.run(serve())
        except (asyncio.CancelledError, KeyboardInterrupt):
            pass
        except SystemExit:  # pygls's `exit` handler
            self.exit_code = self._exit_code()

    def _exit_code(self) -> int:
        """LSP: 0 when the `shutdown` request was received before `exit`, else 1. pygls's own code counts `shutdown`
        only once its handler has finished, so an `exit` sent right behind it (not waiting for the answer) gave 1."""
        return 0 if cast(AnsweringProtocol, self.protocol).shutdown_requested else 1

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls shows a popup (`window/showMessage`) for each failed notification or unreadable message: the
        protocol logs them instead (an edit of an unopened document is not worth interrupting the user for)."""
        log.warning("%s", error)

    def show_error(self, message: str) -> None:
        log.error("%s", message)
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))

    def show_warning(self, message: str) -> None:
        log.warning("%s", message)
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))

    def _secrets(self) -> list[str]:
        out = []
        for model in (self.settings.engine.completion, self.settings.engine.chat, self.settings.engine.embedding,
                      self.settings.next_edit.model):
            if model is not None:
                key = model.resolved_api_key()
                if key:
                    out.append(key)
        return out

    def configure_logging(self) -> None:
        self.logging.configure(self.settings.log_level, self.window_log_message, self.settings.log_file,
                               self._secrets())

    def update_settings(self, layer: str, data: Any, replaces: tuple[str, ...] = ()) -> bool:
        """Apply one configuration source; on an invalid value tell the user (naming the key) and keep the last
        good settings. Returns whether the settings were accepted. What a client written for the Copilot language
        server adds (its identity, its service settings, its next-edit switch) is read as that server reads it."""
        from .copilot_compat import from_copilot_client

        try:
            self.settings_store.update(layer, from_copilot_client(_plain(data)), replaces=replaces)
            return True
        except ConfigError as exc:
            self.show_error(f"Infill configuration: {exc} (keeping the previous configuration)")
            return False

    async def apply_settings(self, previous: Any = None) -> None:
        """Push the current settings into the running service; replaces only the engine, and only if needed.

        When the new engine cannot start, the settings go back to `previous` (a SettingsStore checkpoint) and the
        running engine keeps serving: a bad setting never stops completions."""
        if self.service is not None and self.service.settings != self.settings:
            await self.sessions.cancel_all()
            self.speculation.prefetcher.cancel("settings changed")
            try:
                replaced = await self.service.apply_settings(self.settings)
            except InfillError as exc:
                if previous is not None:
                    self.settings_store.rollback(previous)
                self.show_error(f"Infill configuration: {exc} (keeping the previous configuration)")
            else:
                if replaced:
                    log.info("model or backend changed: engine replaced")
        self.configure_logging()
        self.status.reset_disabled()
        self.workspace_context.configure(self.settings.context, self.settings.exclude)
        self.next_edit.on_settings()
        await self.configure_next_edit_model()

    async def configure_next_edit_model(self) -> None:
        """Start, replace or stop the separate next-edit model (`next_edit.model`); a model that cannot start is
        reported and the previous one keeps serving."""
        try:
            await self.next_edit.model.configure(self.settings.engine, self.settings.next_edit,
                                                 self.settings.ready_timeout)
        except InfillError as exc:
            self.show_error(f"Infill next-edit model: {exc} (keeping the previous one)")

    async def pull_workspace_configuration(self, replaces: tuple[str, ...] = ()) -> None:
        """`replaces`: the settings layers the pulled configuration supersedes (see SettingsStore.update)."""
        from .config import SECTION

        if not self._client_supports_configuration():
            return
        try:
            result = await wait_for(self.workspace_configuration_async(types.ConfigurationParams(
                items=[types.ConfigurationItem(section=SECTION)])), CONFIGURATION_PULL_TIMEOUT_S)
        except asyncio.TimeoutError:
            # Said out loud: the user changed a setting and nothing happens; this is why.
            self.show_warning(f"Infill: the editor did not answer workspace/configuration within "
                              f"{CONFIGURATION_PULL_TIMEOUT_S:g} s; the previous settings stay in force")
            return
        except Exception as exc:
            log.warning("workspace/configuration failed: %s (the previous settings stay in force)", exc)
            return
        value = result[0] if result else None
        if value is not None:
            self.update_settings("workspace", value, replaces)


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


#: Every notebook's cells, of any language (markup cells are kept for their place and never sent to a model).
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithNotebook(notebook="*")])


def open_document(ls: InfillServer, item: types.TextDocumentItem) -> None:
    ls.documents.open(item.uri, item.text, item.language_id, item.version)
    ls.workspace_context.opened(item.uri)


def change_document(ls: InfillServer, identifier: types.VersionedTextDocumentIdentifier,
                    changes: Sequence[types.TextDocumentContentChangeEvent]) -> None:
    doc = ls.documents.get(identifier.uri)
    if doc is None:
        return
    for change in changes:
        rng = getattr(change, "range", None)
        span = None if rng is None else (rng.start.line, rng.start.character, rng.end.line, rng.end.character)
        ls.next_edit.on_change(doc, span, change.text, ls.encoding)  # before the change: the lines it replaces
        doc.apply_change(change.text, span, ls.encoding)
    doc.version = identifier.version
    first = getattr(changes[0], "range", None) if changes else None
    ls.workspace_context.changed(doc.uri, first.start.line if first is not None else None)
    ls.speculation.on_change(doc.uri, doc)


def close_document(ls: InfillServer, raw_uri: str) -> None:
    from .documents import normalize_uri

    uri = normalize_uri(raw_uri)
    if ls.documents.close(raw_uri):
        return  # the file is still open under another spelling (lsp_server.documents.DocumentStore)
    ls.workspace_context.closed(uri)
    ls.sessions.forget(uri)
    ls.next_edit.closed(uri)
    ls.speculation.on_change(uri, None)
    if ls.service is not None:
        ls.service.cache.forget_document(uri)


def build_server() -> InfillServer:
    server = InfillServer()

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: InfillServer, params: types.InitializeParams) -> None:
        # The answer is written when this returns; the parts are built in the loop's next turn (InfillServer).
        ls._initialize_params = params
        asyncio.get_running_loop().call_soon(ls.load)

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: InfillServer, params: types.InitializedParams) -> None:
        from engine.api import StatusEvent

        from .pipeline import CompletionService
        from .workspace import lsp as workspace_lsp

        async with ls.config_lock:
            if ls._initialized_seen:
                # LSP sends it once. A second one built a second CompletionService over the first without closing
                # it (a supervised llama-server kept running beside the new one) and a second workspace tick loop.
                log.warning("ignored a repeated initialized notification")
                return
            ls._initialized_seen = True
            await ls.pull_workspace_configuration()
            ls.configure_logging()
            log.info("speculation: %s", ls.speculation.prefetch_decision().describe())
            ls.service = CompletionService(ls.settings, ls.status.on_engine_status)
            ls.service.workspace = ls.workspace_context
            ls.workspace_context.configure(ls.settings.context, ls.settings.exclude)
            ls.workspace_context.set_folders(ls.workspace_context.folders)
            ls._embedding = workspace_lsp.attach_embedding(ls.workspace_context, ls.settings.engine)
            ls._workspace_tick = asyncio.create_task(workspace_lsp.tick_loop(ls))
            if ls.settings.enabled:
                await ls.service.start()
                await ls.configure_next_edit_model()
            else:
                ls.status.publish(StatusEvent("disabled", "Infill is turned off (enabled = false)"))

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_configuration(ls: InfillServer, params: types.DidChangeConfigurationParams) -> None:
        from .config import SECTION

        async with ls.config_lock:
            previous = ls.settings_store.checkpoint()
            settings = _plain(params.settings)
            if isinstance(settings, dict) and SECTION in settings:
                ls.update_settings("change", settings[SECTION])
            elif settings:
                ls.update_settings("change", settings)
            else:  # the client only says "something changed": ask for it. What it pushed before is outdated:
                # the pulled configuration is its whole current one (else an older push would still override it).
                await ls.pull_workspace_configuration(replaces=("change",))
            await ls.apply_settings(previous)
            if ls.service is not None and ls.settings.enabled and ls.service.engine is None:
                await ls.service.start()
            if ls.service is not None:
                ls.status.show_enabled(ls.settings.enabled)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def on_open(ls: InfillServer, params: types.DidOpenTextDocumentParams) -> None:
        purge_finished_futures(ls)
        open_document(ls, params.text_document)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def on_change(ls: InfillServer, params: types.DidChangeTextDocumentParams) -> None:
        purge_finished_futures(ls)
        change_document(ls, params.text_document, params.content_changes)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def on_close(ls: InfillServer, params: types.DidCloseTextDocumentParams) -> None:
        purge_finished_futures(ls)
        close_document(ls, params.text_document.uri)

    # Notebooks (LSP 3.17): the cells are documents like the others; `ls.notebooks` keeps their order, so that a cell
    # is completed with the code of the cells around it (lsp_server/notebooks.py).
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def on_notebook_open(ls: InfillServer, params: types.DidOpenNotebookDocumentParams) -> None:
        purge_finished_futures(ls)
        book = params.notebook_document
        for cell in ls.notebooks.open(book.uri, [(c.document, c.kind) for c in book.cells]):
            close_document(ls, cell)
        for item in params.cell_text_documents:
            open_document(ls, item)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def on_notebook_change(ls: InfillServer, params: types.DidChangeNotebookDocumentParams) -> None:
        purge_finished_futures(ls)
        cells = params.change.cells
        if cells is None:
            return
        uri = params.notebook_document.uri
        if cells.structure is not None:
            array = cells.structure.array
            for gone in ls.notebooks.splice(uri, array.start, array.delete_count,
                                            [(c.document, c.kind) for c in array.cells or []]):
                close_document(ls, gone)
            for closed in cells.structure.did_close or []:
                close_document(ls, closed.uri)
            for item in cells.structure.did_open or []:
                open_document(ls, item)
        for cell in cells.data or []:
            ls.notebooks.set_kind(cell.document, cell.kind)
        for content in cells.text_content or []:
            change_document(ls, content.document, content.changes)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def on_notebook_close(ls: InfillServer, params: types.DidCloseNotebookDocumentParams) -> None:
        purge_finished_futures(ls)
        cells = set(ls.notebooks.close(params.notebook_document.uri))
        cells.update(cell.uri for cell in params.cell_text_documents)
        for uri in cells:
            close_document(ls, uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def on_notebook_save(ls: InfillServer, params: types.DidSaveNotebookDocumentParams) -> None:
        pass  # nothing to do: the cells' texts are already the editor's

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def on_inline_completion(ls: InfillServer, params: types.InlineCompletionParams
                                   ) -> types.InlineCompletionList:
        with ls.next_edit.gate.inline():  # next-edit model calls wait (or stop) while ghost text is computed
            return await handle_inline_completion(ls, params)

    @server.command(ACCEPT_COMMAND)
    def on_accept(ls: InfillServer, *args: Any) -> None:
        problem = accept_arguments_problem(_plain(list(args)))
        if problem is not None:  # a request gets InvalidParams, a notification (copilot.el) is a log line
            raise JsonRpcInvalidParams(f"{ACCEPT_COMMAND}: {problem}")
        ls.accepted += 1
        log.info("suggestion accepted (%d so far)", ls.accepted)

    @server.feature("textDocument/didShowCompletion")
    def on_did_show(ls: InfillServer, params: Any) -> None:
        params = _plain(params)
        if shown_text(params) is None:  # junk ({}, {"item": null}, a number): nothing was shown, nothing counts
            log.info("ignored textDocument/didShowCompletion without an item with its insertText: %.100r", params)
            return
        ls.shown += 1
        ls.speculation.on_did_show(params)

    @server.feature("textDocument/didPartiallyAcceptCompletion")
    def on_partial_accept(ls: InfillServer, params: Any) -> None:
        log.info("suggestion partly accepted: %s characters", getattr(params, "acceptedLength", "?"))

    @server.feature(next_edit_protocol.METHOD)
    async def on_inline_edit(ls: InfillServer, params: Any) -> dict[str, Any]:
        return await ls.next_edit.inline_edit(_plain(params))

    @server.feature(next_edit_protocol.DID_SHOW)
    def on_did_show_inline_edit(ls: InfillServer, params: Any) -> None:
        ls.next_edit.did_show(_plain(params))

    @server.feature(next_edit_protocol.DID_FOCUS)
    def on_did_focus(ls: InfillServer, params: Any) -> None:
        ls.next_edit.did_focus(_plain(params))

    @server.command(next_edit_protocol.ACCEPT_COMMAND)
    def on_accept_inline_edit(ls: InfillServer, *args: Any) -> None:
        ls.next_edit.accept(_plain(list(args)))

    @server.feature(STATS_METHOD)
    def on_stats(ls: InfillServer, params: Any) -> dict[str, Any]:
        service = ls.service
        return {"accepted": ls.accepted, "shown": ls.shown, "superseded": ls.sessions.superseded_count,
                "model_calls": service.model_calls if service else 0,
                "cache_entries": len(service.cache) if service else 0,
                "documents": len(ls.documents),
                "protocol_futures": len(getattr(ls.protocol, "_request_futures", {})),
                # Tasks alive in the event loop: a leak of generations or watchers shows here first (bench soak).
                "asyncio_tasks": len(asyncio.all_tasks()),
                "timings": [[source, round(ms, 3)] for source, ms in ls.timings],
                "next_edit": ls.next_edit.stats.as_dict(),
                **ls.speculation_stats()}

    from .workspace import lsp as workspace_lsp

    workspace_lsp.register(server)
    from . import memory_probe

    memory_probe.register(server)  # `infill/memory`, only with INFILL_TRACEMALLOC set (diagnosis of growth)

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(ls: InfillServer, params: Any) -> None:
        if ls._workspace_tick is not None:
            ls._workspace_tick.cancel()
        await ls.workspace_context.close()
        if ls._embedding is not None:
            await ls._embedding.close()
        await ls.sessions.cancel_all()
        await ls.speculation.close()
        await ls.next_edit.close()
        if ls.service is not None:
            await ls.service.close()
        ls.logging.close()

    return server


def main_stdio() -> int:
    server = build_server()
    server.start_io()
    return server.exit_code


def main_tcp(host: str, port: int) -> int:
    server = build_server()
    server.start_tcp(host, port)
    return server.exit_code
