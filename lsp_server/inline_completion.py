"""The inline-completion request, from the LSP params to the items: the document and cursor (clamped to the text),
the item selected in the editor's suggestion widget or a notebook's other cells when there are any, then the cache,
the debounce and the model call (Sessions supersede an older request of the same document; Speculation joins a
generation already running or prefetched), and the items with the command that reports an acceptance.

Every request gets an answer: an empty list when there is nothing to complete (no document, Infill turned off, an
excluded file, a request superseded by a newer one), an error naming the problem when the backend fails."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from engine.errors import InfillError

from .protocol import REQUEST_FAILED

if TYPE_CHECKING:
    from .config import ServerSettings
    from .context import CursorContext, Window
    from .documents import Document, DocumentStore
    from .notebooks import Notebooks
    from .pipeline import CompletionService, Suggestion
    from .session import Sessions
    from .speculation import Speculation
    from .status import StatusReporter

log = logging.getLogger(__name__)

#: The command every item carries: the client runs it when the user accepts the suggestion (counted in infill/stats).
ACCEPT_COMMAND = "infill.accept"
#: A request that takes longer than this shows "busy" in the status (a quicker one would only make noise).
BUSY_AFTER_S = 0.15


class Server(Protocol):
    """What the request uses of the server (lsp_server.server.InfillServer, which imports this module: named here,
    not imported, so that the two do not import each other)."""

    @property
    def documents(self) -> DocumentStore: ...
    @property
    def settings(self) -> ServerSettings: ...
    @property
    def service(self) -> CompletionService | None: ...
    @property
    def status(self) -> StatusReporter: ...
    @property
    def encoding(self) -> str: ...
    @property
    def notebooks(self) -> Notebooks: ...
    @property
    def sessions(self) -> Sessions: ...
    @property
    def speculation(self) -> Speculation: ...
    @property
    def timings(self) -> deque[tuple[str, float]]: ...
    @property
    def config_lock(self) -> asyncio.Lock: ...


@dataclass(frozen=True)
class SelectedItem:
    """The item selected in the editor's suggestion widget: it replaces the code points [start, end) by `text`, and
    the LSP specification asks the ghost text to extend it and replace the same range (or it is not shown)."""

    start: int
    end: int
    text: str
    #: The same range as LSP positions in the negotiated encoding.
    range: types.Range


def _selected_item(doc: Document, info: types.SelectedCompletionInfo | None, cursor: int,
                   encoding: str) -> SelectedItem | None:
    """The selected item when its range is one the cursor is in (start ≤ cursor ≤ end); else None, and the request is
    served at the cursor (the editor then does not show the answer while its widget is open, which is all a range
    that cannot be is worth)."""
    if info is None:
        return None
    start = doc.offset_at(info.range.start.line, info.range.start.character, encoding)
    end = doc.offset_at(info.range.end.line, info.range.end.character, encoding)
    if not start <= cursor <= end:
        log.debug("selectedCompletionInfo ignored: its range does not hold the cursor")
        return None
    clamped = types.Range(start=types.Position(*doc.position_at(start, encoding)),
                          end=types.Position(*doc.position_at(end, encoding)))
    return SelectedItem(start, end, info.text, clamped)


def _other_cells(ls: Server, doc: Document, cells: tuple[list[str], list[str]], window: Window
                 ) -> tuple[str, str]:
    """The code of a notebook's cells before and after `doc`'s (of its language), joined as one program, as much
    as the window reads."""
    from .notebooks import joined_after, joined_before

    def texts(uris: Iterable[str]) -> Iterator[str]:  # lazily: only the cells the window reaches are read
        docs = (ls.documents.get(u) for u in uris)
        return (d.text for d in docs if d is not None and d.language_id == doc.language_id)

    before, after = cells
    return joined_before(texts(reversed(before)), window.before), joined_after(texts(after), window.after)


def shown_text(params: Any) -> str | None:
    """The insertText of `textDocument/didShowCompletion {item}` (a string, or a snippet's {value}), None when the
    params hold no such item: `{}` and `{"item": null}` were counted as suggestions shown."""
    item = params.get("item") if isinstance(params, dict) else None
    text = item.get("insertText") if isinstance(item, dict) else None
    if isinstance(text, dict):
        text = text.get("value")
    return text if isinstance(text, str) else None


def accept_arguments_problem(arguments: list[Any]) -> str | None:
    """What is wrong with the arguments of `infill.accept`, or None when they are the one object `to_item` put in
    the item's command. Junk (no argument, a number, an object without the uri) was counted as an acceptance."""
    if len(arguments) != 1 or not isinstance(arguments[0], dict):
        return f"expected one argument, the object of the item's command {{uri, index, length, source}}, got " \
               f"{arguments!r:.100}"
    argument = arguments[0]
    if not isinstance(argument.get("uri"), str):
        return f"uri must be a string, got {argument.get('uri')!r:.50}"
    for key in ("index", "length"):
        value = argument.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return f"{key} must be an integer ≥ 0, got {value!r:.50}"
    if not isinstance(argument.get("source", ""), str):
        return f"source must be a string, got {argument.get('source')!r:.50}"
    return None


def to_item(suggestion: Suggestion, ctx: CursorContext, position: types.Position, encoding: str,
            index: int, selected: SelectedItem | None = None) -> types.InlineCompletionItem:
    """The LSP item for `suggestion` at `position`; with an item `selected` in the editor's suggestion widget (`ctx`
    is then the text as that item makes it), the item's text comes first and its range is replaced."""
    from .documents import index_to_column

    replaced = ctx.line_rest[:suggestion.replace_chars]
    base = position if selected is None else selected.range.end
    end = types.Position(line=base.line, character=base.character + index_to_column(replaced, len(replaced), encoding))
    return types.InlineCompletionItem(
        insert_text=suggestion.text if selected is None else selected.text + suggestion.text,
        range=types.Range(start=position if selected is None else selected.range.start, end=end),
        command=types.Command(title="Infill: suggestion accepted", command=ACCEPT_COMMAND,
                              arguments=[{"uri": ctx.uri, "index": index, "length": len(suggestion.text),
                                          "source": suggestion.source}]))


async def handle_inline_completion(ls: Server, params: types.InlineCompletionParams
                                   ) -> types.InlineCompletionList:
    from engine.api import StatusEvent
    from .context import Window, build_context, build_context_with_item
    from .documents import normalize_uri
    from .secrets import excluded_by, uri_to_path
    from .session import Superseded

    entered = time.perf_counter()
    empty = types.InlineCompletionList(items=[])
    uri = normalize_uri(params.text_document.uri)  # one key per file however it is spelled: sessions, caches
    doc = ls.documents.get(params.text_document.uri)  # the text of the document opened under this spelling
    if ls.config_lock.locked():
        # A configuration change or the start-up is being applied: serve after it, but from the text this request
        # was made for (edits that arrive meanwhile belong to later requests).
        doc = snapshot(doc) if doc is not None else None
        async with ls.config_lock:
            pass
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
    window = Window.for_model(settings.engine.completion)
    cursor = doc.offset_at(params.position.line, params.position.character, encoding)
    # Items start where the cursor really is: a position past the end of its line or of the document is clamped.
    position = types.Position(*doc.position_at(cursor, encoding))
    selected = _selected_item(doc, params.context.selected_completion_info, cursor, encoding)
    cells = ls.notebooks.around(uri) if len(ls.notebooks) else None
    if selected is not None or cells is not None:  # the context of a text a little other than the document's
        lead, trail = _other_cells(ls, doc, cells, window) if cells is not None else ("", "")
        start, end, text = (selected.start, selected.end, selected.text) if selected else (cursor, cursor, "")
        ctx = build_context_with_item(doc, start, end, text, lead=lead, trail=trail, policy=settings.multiline,
                                      indent_unit=settings.indent_unit, filepath=uri_to_path(uri), window=window)
    else:
        ctx = build_context(doc, position.line, position.character, encoding, policy=settings.multiline,
                            indent_unit=settings.indent_unit, filepath=uri_to_path(uri), window=window)
    invoked = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
    service = ls.service

    # An explicit request wants fresh choices, not the single answer already shown.
    cached = None if invoked else service.lookup(ctx)
    if cached is not None:
        if cached and cached[0].source == "cache":
            ls.speculation.note_cache_hit(ctx)
        # Still supersede an older request for the document: the user has moved on.
        try:
            suggestions = await ls.sessions.run(uri, _value(cached))
        except Superseded:  # a newer request came in the same moment (read from the same buffer)
            return empty
        result = types.InlineCompletionList(items=[to_item(s, ctx, position, encoding, i, selected)
                                                   for i, s in enumerate(suggestions)])
        ls.timings.append((suggestions[0].source if suggestions else "cache", (time.perf_counter() - entered) * 1000))
        ls.speculation.answered(ctx, suggestions)
        return result
    delay_ms = 0.0
    pause_ms = 0.0  # the debounce that waits for a pause, when an early call is tried instead
    joined = ls.speculation.join(ctx, invoked)
    if not invoked:
        ls.sessions.note_automatic(uri)
        d = settings.debounce
        delay_ms = ls.sessions.debounce_ms(uri, d.mode, d.fixed_ms, d.min_ms, d.max_ms)
        if d.mode == "adaptive":
            pause_ms = delay_ms
            delay_ms = ls.speculation.debounce_ms(delay_ms, d.min_ms, list(ls.sessions.latencies_ms), ctx)
    if joined is not None:
        delay_ms = 0.0  # a generation already running serves it: nothing to wait for
    work = joined or (lambda: ls.speculation.model_call(ctx, invoked, wait_if_shared_busy_ms=pause_ms - delay_ms))
    started = time.perf_counter()
    # "busy" only for requests that take a noticeable time: two notifications per keystroke would be noise.
    busy = asyncio.get_running_loop().call_later(BUSY_AFTER_S, _publish_busy, ls)
    try:
        suggestions = await ls.sessions.run(uri, work, delay_ms / 1000.0)
    except Superseded:
        return empty
    except InfillError as exc:
        message = f"Infill completion failed: {exc}"
        ls.status.publish(StatusEvent("error", message))
        log.warning("%s", message)  # an expected failure (backend down, deadline): one line, no traceback
        raise JsonRpcException(message, code=REQUEST_FAILED) from None
    finally:
        if joined is not None:
            joined.release()
        busy.cancel()
        if ls.status.current.kind == "busy":
            ls.status.ready()
    ls.sessions.record_latency((time.perf_counter() - started) * 1000.0 - delay_ms)
    if ls.status.current.kind != "ready":
        ls.status.ready()
    ls.timings.append((suggestions[0].source if suggestions else "model", (time.perf_counter() - entered) * 1000))
    ls.speculation.answered(ctx, suggestions)
    return types.InlineCompletionList(items=[to_item(s, ctx, position, encoding, i, selected)
                                             for i, s in enumerate(suggestions)])


def snapshot(doc: Document) -> Document:
    """A copy of the document that later edits do not change (they update the store's chunks in place). O(document),
    paid only by a request that has to wait for a configuration change."""
    from .documents import Document

    return Document(doc.uri, doc.text, doc.language_id, doc.version)


def _publish_busy(ls: Server) -> None:
    from engine.api import StatusEvent

    if ls.status.current.kind == "ready":
        ls.status.publish(StatusEvent("busy", "Infill is completing"))


def _value(value: Any):
    async def give() -> Any:
        return value
    return give
