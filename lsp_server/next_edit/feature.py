"""Next-edit suggestions for one server: the edit history, the copilotInlineEdit request, show and accept.

One request gives at most one edit, chosen in this order:
1. propagation (propagate/): the newest hunk is a substitution and its old text still stands ahead: instant;
2. the model (model.py), when model-based next edits are on: after any inline-completion request (gate.py), as the
   document's only next-edit call (a newer request supersedes it);
3. otherwise no edit.
Propagation comes first because, where it has a candidate, it is right far more often than a model and costs
nothing (docs/next-edit.md, "Benchmark"). A request for a version other than the document's, for a document that is
excluded or whose language is off, answers no edit; so does a model answer that leaked markers or rewrites too much
(the engine's discard rules run first; these are the server's own limits on what reaches the editor)."""

from __future__ import annotations

import bisect
import itertools
import logging
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from pygls.exceptions import JsonRpcInvalidParams

from engine.next_edit.types import EditEvent, NextEditRequest, Prediction, TextEdit

from ..documents import UTF32, Document, DocumentStore, line_starts, normalize_uri
from ..secrets import excluded_by, uri_to_path
from ..session import Sessions, Superseded
from .focus import jump_focus
from .gate import CompletionGate, Yielded
from .history import EditHistory, changed_span
from .model import NextEditModel
from .lexical import regions
from .prefetch import Prefetch
from .propagate import propagate, same_lines, substitution
from .protocol import METHOD, accept_id, edit_result, no_edit, parse_params, shown_id

if TYPE_CHECKING:
    from engine.api import Engine

    from ..config import ServerSettings

log = logging.getLogger(__name__)

#: Propagation reads a document up to this size whole, so that strings and comments are lexed from its start (a
#: triple-quoted docstring read from its middle turns code into string); a larger one in a window of WINDOW_LINES
#: lines above and below the cursor (O(window), also in a 2 MB file).
WHOLE_CHARS = 256 * 1024
WINDOW_LINES = 1000
#: A model edit larger than this is a rewrite the user did not ask for (the engine discards most before).
MAX_EDIT_CHARS = 4000
MAX_EDIT_LINES = 60
#: How long a next-edit request waits for a model that is still loading: a next edit is not worth waiting for.
MAX_READY_WAIT_S = 10.0
#: Proposals remembered for didShow / accept (the client shows one at a time).
REMEMBERED = 64
_MARKERS = re.compile(r"<\|[\w-]+\|>|<<<<<<<|>>>>>>>|^=======$|\bNO_EDITS\b|<\[[\w▁-]+\]>", re.M)
_CR = re.compile(r"\r\n?")
#: Control characters (other than tab and line breaks) or lone surrogates: junk, not code.
_JUNK = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


@dataclass
class Stats:
    requests: int = 0
    edits: int = 0
    propagated: int = 0
    model: int = 0
    model_calls: int = 0
    discarded: dict[str, int] = field(default_factory=dict)
    accepted: int = 0
    shown: int = 0
    #: Model calls made when a model edit was shown, for the text it makes (prefetch.py), and how many a request used.
    prefetched: int = 0
    prefetch_used: int = 0

    def discard(self, reason: str) -> None:
        # "model error: HTTP 500 ..." counts as "model_error": keys are identifiers, as clients' decoders like them
        key = re.sub(r"\W+", "_", reason.split(":", 1)[0].strip()) or "unknown"
        self.discarded[key] = self.discarded.get(key, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "edits": self.edits, "propagated": self.propagated, "model": self.model,
                "model_calls": self.model_calls, "discarded": dict(self.discarded), "accepted": self.accepted,
                "shown": self.shown, "prefetched": self.prefetched, "prefetch_used": self.prefetch_used}


@dataclass
class Proposal:
    uri: str
    version: int
    source: str
    shown: bool = False
    #: The edit (start, end, new text; offsets of the document's text), for the prefetch when it is shown.
    edit: tuple[int, int, str] | None = None


def relative_path(uri: str, folders: list[str]) -> str:
    """The path prompts show: relative to the workspace folder holding the file, else the file name."""
    path = uri_to_path(uri)
    for folder in sorted(folders, key=len, reverse=True):
        base = folder.rstrip("/") + "/"
        if path.startswith(base):
            return path[len(base):]
    return path.rsplit("/", 1)[-1] or path


class NextEdit:
    def __init__(self, documents: DocumentStore, settings: Callable[[], ServerSettings],
                 encoding: Callable[[], str], folders: Callable[[], list[str]],
                 completion_engine: Callable[[], Engine | None], *, clock: Callable[[], float] = time.monotonic,
                 model: NextEditModel | None = None) -> None:
        self.documents = documents
        self._settings = settings
        self._encoding = encoding
        self._folders = folders
        self._completion_engine = completion_engine
        self.history = EditHistory(clock)
        self.gate = CompletionGate()
        self.model = model or NextEditModel()
        self.stats = Stats()
        self._sessions = Sessions()
        self._proposals: OrderedDict[str, Proposal] = OrderedDict()
        self._ids = itertools.count(1)
        self._prefetch = Prefetch()
        #: The document the editor last focused (`textDocument/didFocus`).
        self.focused: str | None = None

    # --- the edit history --------------------------------------------------------------------------------------

    def on_change(self, doc: Document, rng: tuple[int, int, int, int] | None, text: str, encoding: str) -> None:
        """One content change of `doc`, before the store applies it. Never raises: the history must not break
        document synchronisation."""
        settings = self._settings()
        if not settings.next_edit.enabled or excluded_by(doc.uri, settings.exclude) is not None:
            return
        try:
            if rng is None:  # the whole document: record the span that changed
                start, old_end, new_end = changed_span(doc.text, text)
                a, b, text = start, old_end, text[start:new_end]
            else:
                a, b = doc.offset_at(rng[0], rng[1], encoding), doc.offset_at(rng[2], rng[3], encoding)
                a, b = min(a, b), max(a, b)
            self.history.record(doc.uri, relative_path(doc.uri, self._folders()), doc.language_id,
                                doc.position_at(a, UTF32), doc.position_at(b, UTF32), text,
                                lambda first, last: [doc.line(i) for i in range(first, last + 1)])
        except Exception:
            log.exception("next edit: could not record a change of %s", doc.uri)

    def closed(self, uri: str) -> None:
        """The document was closed: its hunks and its request state go (the history is of open documents; a server
        that sees many files opened and closed would otherwise keep a state for each all session)."""
        self.history.forget(uri)
        self._sessions.forget(uri)
        self._prefetch.cancel(uri)
        if self.focused == uri:
            self.focused = None

    def on_settings(self) -> None:
        settings = self._settings()
        self._prefetch.cancel()  # made with the settings before (the model, the window, the history budget)
        for uri in {h.uri for h in self.history if excluded_by(h.uri, settings.exclude) is not None}:
            self.history.forget(uri)

    # --- requests ----------------------------------------------------------------------------------------------

    def _none(self, reason: str) -> dict[str, Any]:
        self.stats.discard(reason)
        log.debug("next edit: none (%s)", reason)
        return no_edit()

    async def inline_edit(self, raw: Any) -> dict[str, Any]:
        """`textDocument/copilotInlineEdit`: the answer (at most one edit); InvalidParams for params that do not
        fit or a document that is not open."""
        self.stats.requests += 1
        params = parse_params(raw)
        uri = normalize_uri(params.uri)
        doc = self.documents.get(uri)
        if doc is None:
            raise JsonRpcInvalidParams(f"{METHOD}: {params.uri} is not open (send textDocument/didOpen first)")
        settings = self._settings()
        ne = settings.next_edit
        if not ne.on_for(doc.language_id):
            return self._none("off")
        if excluded_by(uri, settings.exclude) is not None:
            return self._none("excluded")
        if params.version != doc.version:
            return self._none("outdated version")
        encoding = self._encoding()
        cursor = doc.offset_at(params.line, params.character, encoding)  # past an end: clamped, as LSP says
        found: tuple[int, int, str] | None = None
        source = "propagation"
        if ne.propagation:
            found = self._propagated(doc, cursor, settings)
        if found is None and ne.model_based(settings.engine.completion):
            source = "model"
            found = await self._predicted(doc, cursor, settings)
            if found is None:
                return no_edit()
        if found is None:
            return self._none("nothing to propagate")
        if self.documents.get(uri) is not doc or doc.version != params.version:
            return self._none("outdated version")  # edited while the model ran
        start, end, text = found
        edit_id = str(next(self._ids))
        self._remember(edit_id, Proposal(uri, params.version, source, edit=found))
        self.stats.edits += 1
        if source == "model":
            self.stats.model += 1
        else:
            self.stats.propagated += 1
        log.info("next edit %s (%s) at %s", edit_id, source, doc.position_at(start, encoding))
        return edit_result(params, doc.position_at(start, encoding), doc.position_at(end, encoding), text, edit_id)

    def _propagated(self, doc: Document, cursor: int, settings: ServerSettings) -> tuple[int, int, str] | None:
        hunk = self.history.newest()
        if hunk is None or excluded_by(hunk.uri, settings.exclude) is not None:
            return None
        if hunk.bulk and not (hunk.uri == doc.uri and hunk.condensed()):
            return None  # a paste or a large deletion is never repeated, but for a block condensed (below)
        line = doc.position_at(cursor, UTF32)[0]
        first, last = max(0, line - WINDOW_LINES), line + WINDOW_LINES
        if doc.char_count <= WHOLE_CHARS:
            first, last = 0, doc.line_count
        start = doc.offset_at(first, 0, UTF32)
        end = doc.offset_at(last + 1, 0, UTF32) if last + 1 < doc.line_count else doc.char_count
        text = doc.text_range(start, end)
        if hunk.bulk:
            # a few lines replaced by less (a block by a helper's call): where the same block stands again verbatim
            edit = same_lines(hunk.event(), text, cursor - start)
            return None if edit is None else (start + edit.start, start + edit.end, edit.text)
        own = hunk.uri == doc.uri
        mine = [each for each in self.history if each.uri == hunk.uri]
        previous = mine[-2].event() if own and len(mine) >= 2 else None
        for event in (hunk.event(), hunk.latest_part()):  # the whole hunk, else its newest part
            if event is None:
                continue
            region, edit_at = None, None
            if own:  # the edit's own region, from the window's one lexing when the window holds the edit
                edit_at = _edit_offset(doc, event)
                if edit_at is not None and not start <= edit_at < end:
                    region, edit_at = _region_of(doc, event), None
                elif edit_at is not None:
                    edit_at -= start
            edit = propagate(event, text, cursor - start, doc.language_id, names_only=not own, region=region,
                             edit_at=edit_at, previous=previous)
            if edit is not None:
                return start + edit.start, start + edit.end, edit.text
        return None

    async def _predicted(self, doc: Document, cursor: int, settings: ServerSettings) -> tuple[int, int, str] | None:
        ne = settings.next_edit
        engine = self.model.engine_for(ne, self._completion_engine())
        if engine is None:
            self.stats.discard("no model")
            return None
        text = doc.text
        lf = _lf(text)
        starts = line_starts(lf) if lf is not text else None
        line, column = doc.position_at(cursor, UTF32)
        at = starts[line] + column if starts is not None else cursor
        prefetched = self._prefetch.take(doc.uri, lf, line)
        work: Callable[[], Awaitable[Prediction]]
        if prefetched is not None:  # the edit shown before was accepted: its prediction was made meanwhile
            self.stats.prefetch_used += 1
            work = lambda: prefetched  # noqa: E731
        else:
            work = self._model_call(engine, self._model_request(doc.uri, doc.language_id, lf, at, self.history,
                                                                settings), settings)
        try:
            prediction = await self._sessions.run(doc.uri, work)
        except Superseded:
            self.stats.discard("superseded")
            return None
        except Yielded:
            self.stats.discard("yielded")
            return None
        reason = _unfit(prediction, lf)
        if reason is not None:
            log.info("next edit: model gave no edit (%s)", reason)
            self.stats.discard(reason)
            return None
        assert prediction.edit is not None
        edit = prediction.edit
        if starts is None:
            return edit.start, edit.end, edit.text
        return _from_lf(doc, starts, edit.start), _from_lf(doc, starts, edit.end), edit.text

    def _model_request(self, uri: str, language: str, lf: str, at: int, history: EditHistory,
                       settings: ServerSettings) -> NextEditRequest:
        """What the model is shown: `lf` (the document with LF breaks) with the cursor at `at`, and `history`."""
        ne = settings.next_edit
        newest = history.newest(uri)
        return NextEditRequest(
            path=relative_path(uri, self._folders()), language=language, text=lf, cursor=at,
            history=history.events(ne.history_tokens, lambda h: excluded_by(h.uri, settings.exclude) is None),
            focus=jump_focus(newest.event(), lf, at, ne.lines_below) if newest is not None else None)

    def _model_call(self, engine: Engine, request: NextEditRequest, settings: ServerSettings,
                    prefetch: bool = False) -> Callable[[], Awaitable[Prediction]]:
        """The model call for `request`, behind the gate (ghost text first)."""
        ne = settings.next_edit
        wait = min(settings.ready_timeout, MAX_READY_WAIT_S)

        async def call() -> Prediction:
            self.stats.model_calls += 1
            if prefetch:
                self.stats.prefetched += 1
            return await self.model.predict(engine, request, ne, wait)

        return lambda: self.gate.model_call(call)

    def _prefetch_after(self, proposal: Proposal) -> None:
        """A model edit was shown: predict the next edit for the text it makes (prefetch.py)."""
        settings = self._settings()
        ne = settings.next_edit
        doc = self.documents.get(proposal.uri)
        if not ne.prefetch or proposal.edit is None or doc is None or doc.version != proposal.version:
            return
        if excluded_by(doc.uri, settings.exclude) is not None or not ne.on_for(doc.language_id) \
                or not ne.model_based(settings.engine.completion):
            return  # the settings changed since the edit was proposed: its text must not reach a model now
        engine = self.model.engine_for(ne, self._completion_engine())
        if engine is None:
            return
        start, end, new = proposal.edit
        history = self.history.copy()  # as the accept's didChange will make it
        history.record(doc.uri, relative_path(doc.uri, self._folders()), doc.language_id,
                       doc.position_at(start, UTF32), doc.position_at(end, UTF32), new,
                       lambda first, last: [doc.line(i) for i in range(first, last + 1)])
        text = doc.text
        after = text[:start] + new + text[end:]
        lf = _lf(after)
        at = len(_lf(after[:start + len(new)]))  # the cursor at the end of the applied edit
        line = lf.count("\n", 0, at)
        request = self._model_request(doc.uri, doc.language_id, lf, at, history, settings)
        self._prefetch.start(doc.uri, lf, (line - ne.lines_above, line + ne.lines_below),
                             self._model_call(engine, request, settings, prefetch=True))

    # --- notifications and the accept command ------------------------------------------------------------------

    def _remember(self, edit_id: str, proposal: Proposal) -> None:
        self._proposals[edit_id] = proposal
        while len(self._proposals) > REMEMBERED:
            self._proposals.popitem(last=False)

    def did_show(self, params: Any) -> None:
        proposal = self._proposals.get(shown_id(params) or "")
        if proposal is not None and not proposal.shown:
            proposal.shown = True
            self.stats.shown += 1
            if proposal.source == "model":
                try:
                    self._prefetch_after(proposal)
                except Exception:  # a notification: nothing to answer, and the edit shown stays good
                    log.exception("next edit: could not prefetch after %s", proposal.uri)

    def accept(self, arguments: Any) -> None:
        """`infill.acceptInlineEdit [id]`, as a request or a notification. The client applies the edit itself; its
        didChange puts it in the history, so the next request proposes the next occurrence (chaining). Arguments
        that are no id raise InvalidParams (a request's answer; a notification's log line) and count nothing."""
        edit_id = accept_id(arguments)
        proposal = self._proposals.pop(edit_id, None)
        if proposal is None:
            log.info("next edit: accepted an unknown or expired suggestion %r", edit_id)
            return
        self.stats.accepted += 1
        log.info("next edit %s (%s) accepted", edit_id, proposal.source)

    def did_focus(self, params: Any) -> None:
        document = params.get("textDocument") if isinstance(params, dict) else None
        uri = document.get("uri") if isinstance(document, dict) else None
        if isinstance(uri, str):
            self.focused = normalize_uri(uri)

    async def close(self) -> None:
        self._prefetch.cancel()
        await self._sessions.cancel_all()
        await self.model.close()


def _edit_offset(doc: Document, event: EditEvent) -> int | None:
    """Where in the document the event's substitution begins (its new text), or None when it is none."""
    sub = substitution(event.old, event.new, doc.language_id)
    if sub is None:
        return None
    return doc.offset_at(event.start_line, 0, UTF32) + sub.offset


def _region_of(doc: Document, event: EditEvent) -> str | None:
    """The kind of region (code, string, comment) the event's substitution lies in, by the document's text from a
    little above it: the hunk alone cannot tell a line inside a block comment or a docstring. (For an edit outside
    the window propagation reads; inside it, the window's own lexing tells.)"""
    at = _edit_offset(doc, event)
    if at is None:
        return None
    first = 0 if doc.char_count <= WHOLE_CHARS else max(0, event.start_line - WINDOW_LINES)
    begin = doc.offset_at(first, 0, UTF32)
    end = doc.offset_at(event.start_line + event.new.count("\n") + 1, 0, UTF32)  # whole lines: a string closes
    return regions(doc.text_range(begin, max(end, at + 1)), doc.language_id).kind_at(at - begin)


def _unfit(prediction: Prediction, text: str) -> str | None:
    """Why a model's edit must not reach the editor, or None when it may."""
    edit: TextEdit | None = prediction.edit
    if edit is None:
        return prediction.reason or "no change"
    if not 0 <= edit.start <= edit.end <= len(text):
        return "out of range"
    if _MARKERS.search(edit.text):
        return "sentinel"
    if _JUNK.search(edit.text):
        return "junk"
    replaced = text[edit.start:edit.end]
    if max(len(edit.text), len(replaced)) > MAX_EDIT_CHARS or \
            max(edit.text.count("\n"), replaced.count("\n")) > MAX_EDIT_LINES:
        return "huge rewrite"
    return None


def _lf(text: str) -> str:
    """`text` with LF line breaks (the model's prompts and edits are in LF): `text` itself when it has no CR."""
    return _CR.sub("\n", text) if "\r" in text else text


def _from_lf(doc: Document, starts: list[int], offset: int) -> int:
    """An offset of the document's text with LF breaks → the same place in its own text (CRLF or CR kept)."""
    row = bisect.bisect_right(starts, offset) - 1
    return doc.offset_at(row, offset - starts[row], UTF32)
