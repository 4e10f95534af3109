"""The LSP side of workspace context: the `infill/didYank` notification, workspace folders, files changed on disk
(`workspace/didChangeWatchedFiles`, registered when the client can watch files; a periodic re-check otherwise), the
`infill/context` status request, and the once-a-second tick that flushes sources and warms the model server's cache.

`infill/didYank` (client → server notification), for any client that can see copies or yanks:

    {"textDocument": {"uri": "file:///…"}, "text": "the copied text", "range": {"start": {"line": 3, …}, …}?}

`range` is optional (where the text was copied from). Text from excluded files is ignored."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..secrets import uri_to_path

if TYPE_CHECKING:  # registering the features must stay cheap: it happens before `initialize` is answered
    from .provider import WorkspaceContext

log = logging.getLogger(__name__)

DID_YANK = "infill/didYank"
CONTEXT_STATUS = "infill/context"
#: How often sources are flushed into the indexes (batched: never per keystroke).
TICK_S = 1.0


def folders_from_initialize(params: Any) -> list[str]:
    """Workspace folder paths from InitializeParams: workspaceFolders, else rootUri, else rootPath."""
    out = []
    for folder in getattr(params, "workspace_folders", None) or ():
        uri = getattr(folder, "uri", None)
        if uri and uri.startswith("file:"):
            out.append(uri_to_path(uri))
    if not out:
        root_uri = getattr(params, "root_uri", None)
        root_path = getattr(params, "root_path", None)
        if root_uri and root_uri.startswith("file:"):
            out.append(uri_to_path(root_uri))
        elif root_path:
            out.append(root_path)
    return out


def _field_path(params: Any, *names: str) -> Any:
    """The field at the path `names` (params.textDocument.uri) of params that may arrive as a dict, an attrs object
    or a namedtuple (custom methods); None where the path breaks off."""
    value = params
    for name in names:
        if value is None:
            return None
        value = value.get(name) if isinstance(value, dict) else getattr(value, name, None)
    return value


def on_did_yank(workspace: WorkspaceContext, params: Any) -> None:
    uri = _field_path(params, "textDocument", "uri")
    text = _field_path(params, "text")
    if not isinstance(uri, str) or not isinstance(text, str):
        log.warning("%s: expected {textDocument: {uri}, text}, got %r", DID_YANK, params)
        return
    line = _field_path(params, "range", "start", "line")
    workspace.yanked(uri, text, line if isinstance(line, int) else None)


def register(server: Any) -> None:
    """Add the workspace-context features to `server` (an InfillServer with a `workspace_context` attribute)."""

    @server.feature(DID_YANK)
    def did_yank(ls: Any, params: Any) -> None:
        on_did_yank(ls.workspace_context, params)

    @server.feature(CONTEXT_STATUS)
    def context_status(ls: Any, params: Any) -> dict[str, Any]:
        return ls.workspace_context.status()

    @server.feature("workspace/didChangeWatchedFiles")
    def watched_files_changed(ls: Any, params: Any) -> None:
        # Also taken from clients that send it without a registration: the paths are looked at again either way.
        from . import watch

        ls.workspace_context.files_changed(watch.paths_from_params(params))

    @server.feature("workspace/didChangeWorkspaceFolders")
    def folders_changed(ls: Any, params: Any) -> None:
        event = _field_path(params, "event")
        folders = list(ls.workspace_context.folders)
        for removed in _field_path(event, "removed") or ():
            path = uri_to_path(_field_path(removed, "uri") or "")
            folders = [f for f in folders if f != path]
        for added in _field_path(event, "added") or ():
            uri = _field_path(added, "uri") or ""
            if uri.startswith("file:"):
                folders.append(uri_to_path(uri))
        ls.workspace_context.set_folders(folders)


def attach_embedding(workspace: WorkspaceContext, engine_config: Any) -> Any:
    """Point the re-ranking at the configured `embedding` backend (remote kinds; a local embedding model would need
    its own llama-server). Returns the backend (to close at shutdown) or None."""
    cfg = getattr(engine_config, "embedding", None)
    if cfg is None or cfg.kind == "local":
        if cfg is not None:
            log.info("workspace context: a local embedding model is not used for re-ranking (remote kinds only)")
        workspace.embed = None
        return None
    try:
        from engine.backends import create_embedding

        backend = create_embedding(cfg, "embedding")
    except Exception as exc:  # a broken embedding config must not stop completions
        log.warning("workspace context: no embedding re-ranking (%s)", exc)
        workspace.embed = None
        return None
    workspace.embed = backend.embed
    return backend


async def register_watchers(ls: Any) -> None:
    """Ask the client to watch the workspace's code files for us (`client/registerCapability`), when it declared
    `workspace.didChangeWatchedFiles.dynamicRegistration`. Until it accepts, and when it cannot or refuses, the
    periodic re-check stands in."""
    from . import watch

    workspace: WorkspaceContext = ls.workspace_context
    if not watch.client_can_watch(getattr(ls, "client_capabilities", None)):
        log.info("workspace context: the client does not watch files; re-checking the folders every %.0f s",
                 watch.RECHECK_S)
        return
    try:
        await ls.client_register_capability_async(watch.registration())
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.warning("workspace context: the client refused to watch files (%s); re-checking the folders instead", exc)
        return
    workspace.watch_mode = "events"


async def tick_loop(ls: Any) -> None:
    """Register the file watchers, then once a second: look again at files changed on disk, flush sources, and when
    the context changed and no request is running, warm the cache. Without watchers, re-check the folders when due
    and idle (the walk runs in its own task: the tick does not wait for it)."""
    from .requests import warm

    registration = asyncio.ensure_future(register_watchers(ls))
    try:
        while True:
            await asyncio.sleep(TICK_S)
            workspace: WorkspaceContext = ls.workspace_context
            if not workspace.settings.enabled:
                continue
            try:
                changed = await workspace.refresh_files()
                changed |= workspace.tick()
                service = ls.service
                idle = ls.sessions.active_count() == 0
                if changed and service is not None and idle:
                    await warm(workspace, service.engine)
                due = workspace.next_recheck
                if workspace.watch_mode == "recheck" and idle and due is not None \
                        and asyncio.get_running_loop().time() >= due:
                    workspace.start_recheck()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("workspace context tick failed")
    finally:
        registration.cancel()
