"""WorkspaceContext: the sources, the indexes and the choice of snippets for one server.

Event handlers (open, change, save, close, yank, request) only record what happened; the work is done in `tick()`,
which the server runs about once a second, and in the background scan of the workspace folders. A request reads
the indexes and reuses its previous choice while the cursor stays near where it was and nothing was flushed, so the
context block of the prompt stays byte-identical across keystrokes (the model server's prompt cache) and retrieval
costs almost nothing per keystroke."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

from engine.prompt import CountTokens
from engine.types import CompletionRequest, ContextSnippet
from engine.deadlines import wait_for

from ..secrets import excluded_by, uri_to_path
from . import budget as budget_mod
from .index import WindowIndex
from .ring import Chunk, Ring
from .ranking import Candidate, dedupe, drop_shown, rank_key, relevant, same_language, stable_order
from . import watch
from .scan import folder_name, language_of, read_text, walk
from .settings import ContextSettings
from .tags import TagIndex, definition_text
from .text import identifiers, split_lines, windows

log = logging.getLogger(__name__)

#: The cursor's window (what the query is made of and what near-copies are measured against).
QUERY_LINES_ABOVE = 30
QUERY_LINES_BELOW = 10
#: Identifiers this close above the cursor are looked up as definitions.
DEFINITION_LINES = 12
#: A new choice is made when the cursor moved more than this many lines from where the last one was made.
RESELECT_LINES = 8
#: How many choices are remembered (see WorkspaceContext._recent).
RECENT_CHOICES = 4
#: A name with more definitions than this (`path`, `run`, `close`) is ambiguous: its definitions are not shown.
MAX_DEFINITIONS_PER_NAME = 3
#: Snippets kept for similar code (windows, recent chunks) besides definitions, when there are any.
SIMILAR_SNIPPETS = 2
#: Edited and viewed chunks are this many lines around the place (half a window above and below).
CHUNK_LINES = 16
#: Candidates of each kind (definitions, windows) considered before the budget: twice the snippets there is room for.
CANDIDATES_PER_SNIPPET = 2


class OpenDocument(Protocol):
    @property
    def text(self) -> str: ...

    language_id: str


class DocumentLookup(Protocol):
    def get(self, uri: str) -> OpenDocument | None: ...


@dataclass
class CursorInfo:
    """What the provider needs from the request (a subset of lsp_server.context.CursorContext)."""

    uri: str
    prefix: str
    suffix: str
    line: int
    language: str


@dataclass
class Selection:
    snippets: tuple[ContextSnippet, ...]
    sources: tuple[str, ...]
    tokens: int
    reused: bool = False
    repo: str = ""
    relative_path: str | None = None
    elapsed_ms: float = 0.0
    #: The cursor line it was chosen for (it is reused while the cursor stays near).
    line: int = -1
    #: CPU time of the choice (wall time on a loaded machine is mostly waiting for a core).
    cpu_ms: float = 0.0

    def report(self) -> dict[str, Any]:
        return {"snippets": [{"filename": s.filename, "source": src, "chars": len(s.text)}
                             for s, src in zip(self.snippets, self.sources)],
                "tokens": self.tokens, "reused": self.reused, "retrieval_ms": round(self.elapsed_ms, 3)}


@dataclass
class _Doc:
    uri: str
    key: str
    indexed_text: str | None = None
    edits: set = field(default_factory=set)
    views: set = field(default_factory=set)
    last_view: int | None = None


def after_cursor(suffix: str, lines: int) -> str:
    """The first `lines` lines after the cursor's line, for a prefix-only model's "after the cursor" block ("" when
    they are blank). The rest of the cursor's own line is left out: it changes with every keystroke there, and the
    block sits at the top of the prompt, where a change costs the whole prompt's prefill."""
    text = "\n".join(suffix.split("\n")[1:lines + 1]).rstrip()
    return text if text.strip() else ""


class WorkspaceContext:
    def __init__(self, settings: ContextSettings, documents: DocumentLookup, exclude: tuple[str, ...] = ()) -> None:
        self.settings = settings
        self.documents = documents
        self.exclude = tuple(exclude)
        self.folders: list[str] = []
        self.index = WindowIndex()
        self.tags = TagIndex()
        self.ring = Ring()
        self.counter = budget_mod.TokenCounter()
        self._docs: dict[str, _Doc] = {}
        self._order: dict[tuple, int] = {}
        #: The last few choices, each with the anchor it was made under (newest last). More than one: a prefetch
        #: asks for the place after an accepted suggestion, often more than RESELECT_LINES below the cursor; with one
        #: remembered choice the real requests and the prefetches would replace each other's block every time.
        self._recent: list[tuple[tuple, Selection]] = []
        self._version = 0
        #: Of those changes, how many came from one document alone (its own text, its edit and view chunks).
        self._own_changes: dict[str, int] = {}
        self._scan_task: asyncio.Task | None = None
        self._scan_stop = False
        self._scan_generation = 0
        #: Files of the workspace folders that are indexed (or served from their open document).
        self._disk_keys: set[str] = set()
        #: (mtime_ns, size) of every file the walk yielded, indexed or not (binary): what the re-check compares.
        self._disk: dict[str, tuple[int, int]] = {}
        #: Paths to look at again (watched-file events, the re-check), handled by `refresh_files`.
        self._pending: dict[str, None] = {}
        self._recheck_task: asyncio.Task | None = None
        self._recheck_stop = False
        #: Counters for the status: paths received in events, files (re)indexed and dropped from disk, re-checks.
        self.disk_stats = {"events": 0, "updated": 0, "removed": 0, "rechecks": 0, "rescans": 0}
        #: How disk changes are seen: "events" (the client watches files for us) or "recheck" (we walk again).
        self.watch_mode = "recheck"
        #: When the next re-check is due (event loop time), set when a scan or re-check ends.
        self.next_recheck: float | None = None
        self.scan_done = False
        self.last_report: dict[str, Any] | None = None
        self.last_cursor: CursorInfo | None = None
        #: The engine request made there (before context was attached): what a warm-up sends again.
        self.last_request: CompletionRequest | None = None
        self.last_prompt_lines: tuple[int, int] = (0, 0)
        #: The snippets last prefilled into the model server (warming again with the same ones is useless).
        self.last_warmed: tuple = ()
        #: Optional re-ranking by embeddings: text → vector (the engine's embedding backend).
        self.embed: Callable[[str], Awaitable[list[float]]] | None = None

    # --- configuration ---------------------------------------------------------------------------------------------

    def excluded(self, path_or_uri: str) -> bool:
        return excluded_by(path_or_uri, self.exclude + self.settings.exclude) is not None

    def configure(self, settings: ContextSettings, exclude: tuple[str, ...]) -> bool:
        """Apply new settings; returns True when the indexes must be rebuilt (exclusions or bounds changed)."""
        rebuild = (exclude != self.exclude or settings.exclude != self.settings.exclude
                   or settings.enabled != self.settings.enabled  # files changed while it was off are not known
                   or settings.window_lines != self.settings.window_lines
                   or settings.max_files != self.settings.max_files
                   or settings.max_file_kb != self.settings.max_file_kb
                   or settings.workspace_files != self.settings.workspace_files)
        self.settings, self.exclude = settings, tuple(exclude)
        self._bump()
        if rebuild:
            self.ring = Ring()
            for doc in self._docs.values():
                doc.indexed_text = None
            if self.folders:
                self.start_scan()
        return rebuild

    def set_folders(self, folders: list[str]) -> None:
        self.folders = list(dict.fromkeys(f for f in folders if f))  # a folder added twice is one
        self.start_scan()

    def _bump(self, key: str | None = None) -> None:
        """Record a change of the sources. With `key`, the change came from that document alone: typing in a file
        must not make a new choice for that same file (its own lines around the cursor are in the prompt, not in the
        context block), or the block would change about once a second while the user types and every request would
        prefill the whole prompt again (measured: 5× the prefilled tokens per suggestion shown)."""
        self._version += 1
        if key is None:
            self._recent = []
        else:
            self._own_changes[key] = self._own_changes.get(key, 0) + 1

    def _changes_for(self, key: str) -> int:
        """Changes that may alter the context of a request in document `key`: all but that document's own."""
        return self._version - self._own_changes.get(key, 0)

    # --- events (cheap: record only) ----------------------------------------------------------------------------

    def opened(self, uri: str) -> None:
        self._docs.setdefault(uri, _Doc(uri, _key(uri)))

    def changed(self, uri: str, line: int | None = None) -> None:
        doc = self._docs.setdefault(uri, _Doc(uri, _key(uri)))
        if line is not None and len(doc.edits) < 64:
            doc.edits.add(line)

    def closed(self, uri: str) -> None:
        doc = self._docs.pop(uri, None)
        if doc is None:
            return
        self._own_changes.pop(doc.key, None)  # kept per document, and documents come and go all session
        # The file on disk is what remains: index it again from there (or drop it when it is not in a folder).
        self.index.remove(doc.key)
        self.tags.remove(doc.key)
        if doc.key in self._disk_keys and os.path.isfile(doc.key):
            self._index_file(doc.key, self._label(doc.key), language_of(doc.key) or "", _read(doc.key))
        self._bump()

    def yanked(self, uri: str, text: str, line: int | None = None) -> None:
        if not self.settings.yanks or not text.strip() or self.excluded(uri):
            return
        text = text.replace("\r\n", "\n")[:4000]
        start = line if line is not None else -1
        end = start + text.count("\n") + 1 if line is not None else -1
        self.ring.offer(Chunk("yank", _key(uri), self._label(_key(uri)), start, end, text))

    def viewed(self, cursor: CursorInfo) -> None:
        """A request was made here: the code around it is a viewed range (used once the user goes elsewhere)."""
        self.last_cursor = cursor
        if not self.settings.recent_views:
            return
        doc = self._docs.setdefault(cursor.uri, _Doc(cursor.uri, _key(cursor.uri)))
        # One view per place: typing on (the next request a line further down) is not a new place.
        if doc.last_view is None or abs(cursor.line - doc.last_view) > CHUNK_LINES // 2:
            doc.last_view = cursor.line
            if len(doc.views) < 64:
                doc.views.add(cursor.line)

    # --- periodic work --------------------------------------------------------------------------------------------

    def tick(self) -> bool:
        """Index changed open documents, move recent chunks into the ring. Returns whether the context of a request
        at the last cursor may have changed (a change of that document alone does not change it)."""
        changed: set[str | None] = {doc.key for doc in list(self._docs.values()) if self._refresh(doc)}
        pending = self.ring.pending_keys()
        if self.ring.flush():
            changed |= pending or {None}
        for key in changed:
            self._bump(key)
        own = _key(self.last_cursor.uri) if self.last_cursor is not None else None
        return any(key is None or key != own for key in changed)

    def _refresh(self, doc: _Doc) -> bool:
        current = self.documents.get(doc.uri)
        if current is None:
            return False
        if getattr(current, "char_count", 0) > self.settings.max_file_kb * 1024:
            # Like a file on disk over the cap: indexing it would stall the server once a second while it is typed in
            # (a 2 MB document took the event loop for most of a second), and the snippets it gives are no better.
            doc.edits.clear()
            doc.views.clear()
            if doc.indexed_text is not None:
                doc.indexed_text = None
                self.index.remove(doc.key)
                self.tags.remove(doc.key)
                return True
            return False
        text = current.text
        changed = False
        if (doc.edits or doc.views) and not self.excluded(doc.key):
            lines = split_lines(text)
            marks = [("view", line) for line in sorted(doc.views) if self.settings.recent_views]
            marks += [("edit", line) for line in sorted(doc.edits) if self.settings.recent_edits]
            for source, line in marks:
                start = max(0, line - CHUNK_LINES // 2)
                end = min(len(lines), line + CHUNK_LINES // 2)
                self.ring.offer(Chunk(source, doc.key, self._label(doc.key), start, end,
                                      "\n".join(lines[start:end])))
        doc.edits.clear()
        doc.views.clear()
        if text != doc.indexed_text:
            doc.indexed_text = text
            if self.excluded(doc.key) or not self.settings.open_documents:
                self.index.remove(doc.key)
                self.tags.remove(doc.key)
            else:
                self._index_file(doc.key, self._label(doc.key), current.language_id, text, keep_text=True)
            changed = True
        return changed

    def _index_file(self, key: str, label: str, language_id: str, text: str, keep_text: bool = False) -> None:
        lines = split_lines(text)
        size = self.settings.window_lines
        # Open documents: overlapping windows (half a window apart); files on disk: side by side (half the memory).
        step = max(1, size // 2) if keep_text else size
        self.index.add(key, label, lines, windows(lines, size, step), keep_text)
        if self.settings.definitions and language_id:
            self.tags.add(key, label, language_id, text)

    # --- workspace scan -----------------------------------------------------------------------------------------

    def start_scan(self) -> None:
        """(Re)scan the workspace folders in a worker thread; the result replaces the file indexes at once."""
        self._scan_generation += 1
        if self._scan_task is not None and not self._scan_task.done():
            self._scan_stop = True  # the running scan ends early and its result is dropped
        if not self.settings.enabled or not self.settings.workspace_files or not self.folders:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._scan_task = loop.create_task(self._scan(self._scan_generation, self._scan_task))

    async def _scan(self, generation: int, previous: asyncio.Task | None) -> None:
        if previous is not None and not previous.done():
            await asyncio.gather(previous, return_exceptions=True)
        self._scan_stop = False
        started = time.perf_counter()
        try:
            built = await asyncio.to_thread(self._build_indexes)
        except Exception:
            log.exception("workspace scan failed")
            return
        if built is None or generation != self._scan_generation:
            return
        index, tags, keys, stats = built
        self.index, self.tags, self._disk_keys, self._disk = index, tags, keys, stats
        for doc in self._docs.values():  # open documents hold newer text than the disk
            doc.indexed_text = None
        self.tick()
        self.scan_done = True
        self._bump()
        self.next_recheck = asyncio.get_running_loop().time() + watch.RECHECK_S
        log.info("workspace context: %d files, %d windows, %d definitions indexed in %.1f s",
                 len(keys), len(index), len(tags), time.perf_counter() - started)

    def _build_indexes(self) -> tuple[WindowIndex, TagIndex, set[str], dict[str, tuple[int, int]]] | None:
        index, tags, keys, stats = WindowIndex(), TagIndex(), set(), {}
        size = self.settings.window_lines
        max_bytes = self.settings.max_file_kb * 1024
        for entry in walk(self.folders, max_files=self.settings.max_files, max_bytes=max_bytes,
                          excluded=self.excluded, stop=lambda: self._scan_stop):
            stats[entry.path] = entry.stat
            text = read_text(entry.path, max_bytes)
            if text is None:
                continue
            lines = split_lines(text)
            index.add(entry.path, entry.label, lines, windows(lines, size, size), keep_text=False)
            if self.settings.definitions:
                tags.add(entry.path, entry.label, entry.language_id, text)
            keys.add(entry.path)
        return None if self._scan_stop else (index, tags, keys, stats)

    async def wait_scanned(self) -> None:
        if self._scan_task is not None:
            await asyncio.shield(self._scan_task)

    def _scanning(self) -> bool:
        return self._scan_task is not None and not self._scan_task.done()

    # --- files changed on disk (lsp_server/workspace/watch.py) ----------------------------------------------------

    def files_changed(self, paths: list[str]) -> None:
        """Watched-file events (or the re-check) name these paths: look at them again at the next tick."""
        self.disk_stats["events"] += len(paths)
        if not self._watching():
            return  # turned off (or no folders): the scan that turns it on again reads everything
        for path in paths:
            if watch.worth_looking(path, self.folders):
                self._pending[path] = None

    def _watching(self) -> bool:
        return self.settings.enabled and self.settings.workspace_files and bool(self.folders)

    async def refresh_files(self) -> bool:
        """Look again at up to FILES_PER_TICK pending paths: index what is new or changed, drop what is gone, ignored
        or excluded now. Reading is done in a worker thread; a file open as a document stays served from the
        document. A `.gitignore` change or a burst of more than RESCAN_AFTER paths starts a full scan instead.
        Pending paths wait while a scan runs (its result would replace what is done meanwhile). Returns whether the
        indexes changed."""
        if not self._pending or self._scanning():
            return False
        if not self._watching():
            self._pending.clear()
            return False
        if len(self._pending) > watch.RESCAN_AFTER or any(os.path.basename(p) == ".gitignore" for p in self._pending):
            self._pending.clear()
            self.disk_stats["rescans"] += 1
            self.start_scan()
            return False
        batch = list(self._pending)[:watch.FILES_PER_TICK]
        for path in batch:
            del self._pending[path]
        generation = self._scan_generation
        looked = await asyncio.to_thread(watch.look, batch, list(self.folders),
                                         max_bytes=self.settings.max_file_kb * 1024, excluded=self.excluded)
        if generation != self._scan_generation:
            return False  # a scan started meanwhile: it reads these files itself
        open_keys = {doc.key for doc in self._docs.values()}
        changed = False
        folders: list[str] = []
        for path, entry, text in looked:
            if entry is None:  # gone, ignored, excluded or too large now (or a folder: see below)
                if path in self._disk:
                    changed |= self._drop_disk_file(path, open_keys)
                else:
                    folders.append(path.rstrip(os.sep) + os.sep)
                continue
            if path not in self._disk and len(self._disk) >= self.settings.max_files:
                continue  # the bound of the scan holds for new files too
            self._disk[path] = entry.stat
            if text is None:  # binary now: known (the re-check will not read it again), not indexed
                changed |= self._drop_disk_file(path, open_keys, forget=False)
                continue
            self._disk_keys.add(path)
            self.disk_stats["updated"] += 1
            if path not in open_keys:
                self._index_file(path, entry.label, entry.language_id, text)
                changed = True
        if folders:  # a deleted (or now ignored) folder takes the files under it; one pass for the whole batch
            for key in [k for k in self._disk if k.startswith(tuple(folders)) and not os.path.isfile(k)]:
                changed |= self._drop_disk_file(key, open_keys)
        if changed:
            self._bump()
        return changed

    def _drop_disk_file(self, key: str, open_keys: set[str], forget: bool = True) -> bool:
        if forget:
            self._disk.pop(key, None)
        if key not in self._disk_keys:
            return False
        self._disk_keys.discard(key)
        self.disk_stats["removed"] += 1
        if key in open_keys:
            return False  # served from the document; closing it no longer falls back to the disk
        self.index.remove(key)
        self.tags.remove(key)
        return True

    def start_recheck(self) -> bool:
        """Walk the folders again in a worker thread and queue the files that appeared, changed (mtime or size) or
        vanished since they were read. Never two at once, never during a scan; `close` and `start_scan` stop it.
        Returns whether one was started."""
        if not self._watching() or self._scanning() or not self.scan_done \
                or (self._recheck_task is not None and not self._recheck_task.done()):
            return False
        self._recheck_task = asyncio.get_running_loop().create_task(self.recheck(self._scan_generation))
        return True

    async def recheck(self, generation: int | None = None) -> int:
        """One re-check (see `start_recheck`); returns how many paths it queued. A scan started after `generation`
        (the scan's count when the re-check was asked for) stops it."""
        generation = self._scan_generation if generation is None else generation
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            seen = await asyncio.to_thread(self._walk_stats, generation)
        except Exception:
            log.exception("workspace re-check failed")
            seen = None
        self.next_recheck = loop.time() + watch.next_recheck_delay(loop.time() - started)
        if seen is None or generation != self._scan_generation:
            return 0
        self.disk_stats["rechecks"] += 1
        paths = watch.changed_since(seen, self._disk)
        if paths:
            log.info("workspace context: %d files changed on disk", len(paths))
            self.files_changed(paths)
        return len(paths)

    def _walk_stats(self, generation: int) -> dict[str, tuple[int, int]] | None:
        """(mtime_ns, size) of the files the walk yields; None when stopped (closing, or a scan started)."""
        def stop() -> bool:
            return self._recheck_stop or generation != self._scan_generation

        seen = {entry.path: entry.stat
                for entry in walk(self.folders, max_files=self.settings.max_files,
                                  max_bytes=self.settings.max_file_kb * 1024, excluded=self.excluded, stop=stop)}
        return None if stop() else seen

    # --- choosing snippets -------------------------------------------------------------------------------------

    async def select(self, cursor: CursorInfo, *, prompt_lines: tuple[int, int], prefix_only: bool = False,
                     count_tokens: CountTokens | None = None) -> Selection:
        """The snippets for a request at `cursor`. `prompt_lines`: the current file's lines the prompt shows."""
        started = time.perf_counter()
        cpu_started = time.thread_time()
        self.counter.count_tokens = count_tokens
        key = _key(cursor.uri)
        # Documents opened since the last tick are indexed now (once each; later changes wait for the tick).
        for doc in [d for d in self._docs.values() if d.indexed_text is None]:
            if self._refresh(doc):
                self._bump(doc.key)
        anchor = (cursor.uri, self._changes_for(key), prefix_only)
        near = [entry for entry in self._recent
                if entry[0] == anchor and abs(entry[1].line - cursor.line) <= RESELECT_LINES]
        if near:
            reused = min(near, key=lambda entry: abs(entry[1].line - cursor.line))[1]
            selection = Selection(reused.snippets, reused.sources, reused.tokens, True, reused.repo,
                                  reused.relative_path, (time.perf_counter() - started) * 1000, reused.line)
            self.last_report = self._report(cursor, selection)
            return selection
        chosen = await self._choose(cursor, key, prompt_lines, prefix_only)
        snippets = tuple(ContextSnippet(c.label, c.text) for c, _ in chosen)
        selection = Selection(snippets, tuple(c.source for c, _ in chosen), sum(t for _, t in chosen), False,
                              folder_name(self.folders), self._label(key),
                              (time.perf_counter() - started) * 1000, cursor.line,
                              (time.thread_time() - cpu_started) * 1000)
        self._recent = self._recent[-(RECENT_CHOICES - 1):] + [(anchor, selection)]
        self.last_report = self._report(cursor, selection)
        return selection

    def _report(self, cursor: CursorInfo, selection: Selection) -> dict[str, Any]:
        report = selection.report()
        report.update(uri=cursor.uri, line=cursor.line, files_indexed=len(self._disk_keys),
                      scan_done=self.scan_done, windows=len(self.index), definitions=len(self.tags),
                      ring=len(self.ring.chunks))
        return report

    async def _choose(self, cursor: CursorInfo, key: str, prompt_lines: tuple[int, int],
                      prefix_only: bool) -> list[tuple[Candidate, int]]:
        s = self.settings
        above = cursor.prefix.rsplit("\n", QUERY_LINES_ABOVE)
        above_text = "\n".join(above[1:]) if len(above) > QUERY_LINES_ABOVE else cursor.prefix
        below_text = "\n".join(cursor.suffix.split("\n", QUERY_LINES_BELOW)[:QUERY_LINES_BELOW])
        cursor_words = frozenset(identifiers(above_text + "\n" + below_text))
        query: dict[str, int] = {}
        for word in identifiers(above_text + "\n" + below_text):
            query[word] = query.get(word, 0) + 1

        candidates: list[Candidate] = []
        limit = max(4, CANDIDATES_PER_SNIPPET * s.max_snippets)
        if s.definitions:
            candidates += self._definitions(cursor, key, prompt_lines, limit)
        if s.open_documents or s.workspace_files:
            for score, window in self.index.search(query, s.ranking, limit,
                                                   skip=lambda w: w.key == key and w.start < prompt_lines[1]
                                                   and prompt_lines[0] < w.end):
                open_doc = window.text is not None
                if (open_doc and not s.open_documents) or (not open_doc and not s.workspace_files):
                    continue
                text = window.text if open_doc else _read_lines(window.key, window.start, window.end)
                if text:
                    candidates.append(Candidate("open" if open_doc else "file", window.key, window.label,
                                                window.start, window.end, text, score))
        ring = [c for c in self.ring.chunks if not (c.key == key and c.start >= 0 and c.start < prompt_lines[1]
                                                   and prompt_lines[0] < c.end)]
        candidates += [dataclasses.replace(c, score=self._score(query, c.words)) for c in ring]
        candidates = [c for c in candidates
                      if not self.excluded(c.key) and same_language(c, cursor.language) and relevant(c)]
        candidates = dedupe(drop_shown(candidates, key, prompt_lines, cursor_words))
        if self.embed is not None and s.embedding_rerank and len(candidates) > 1:
            candidates = await self._rerank(above_text + "\n" + below_text, candidates)
        ranked = sorted(candidates, key=rank_key)
        # Definitions first, but leave room for similar code: the definition the middle needs is often not yet
        # named near the cursor, and similar code elsewhere shows how it is used.
        definitions = [c for c in ranked if c.source == "definition"]
        keep = max(1, s.max_snippets - SIMILAR_SNIPPETS) if len(definitions) < len(ranked) else len(definitions)
        ranked = definitions[:keep] + [c for c in ranked if c.source != "definition"] + definitions[keep:]
        if prefix_only and s.next_lines > 0:  # the code after the cursor, as a labelled block
            next_text = after_cursor(cursor.suffix, s.next_lines)
            if next_text:
                ranked.insert(0, Candidate("next", key, f"{self._label(key)} (after the cursor)", -1, -1,
                                           next_text, math.inf))
        fitted = await budget_mod.fit(ranked, lambda c: c.text, s.budget_tokens, self.counter, s.max_snippets)
        tokens = {id(c): t for c, t in fitted}
        # Keep "next" (it belongs right above the prefix) last, the others in their stable order.
        others = stable_order([c for c, _ in fitted if c.source != "next"], self._order)
        nexts = [c for c, _ in fitted if c.source == "next"]
        return [(c, tokens[id(c)]) for c in others + nexts]

    def _score(self, query: dict[str, int], words: frozenset) -> float:
        """Ring chunks are scored like index windows (BM25 with the index's statistics, or Jaccard)."""
        if self.settings.ranking == "jaccard":
            q = frozenset(query)
            common = len(q & words)
            return common / (len(q) + len(words) - common) if common else 0.0
        return self.index.score_words(query, words)

    def _definitions(self, cursor: CursorInfo, key: str, prompt_lines: tuple[int, int],
                     limit: int) -> list[Candidate]:
        """Definitions of the identifiers just above the cursor (nearest first, Zed's 1 / (1 + d/10)² weighting)
        and of the names the file imports but has not used yet (what is imported is usually about to be used)."""
        recent = cursor.prefix.rsplit("\n", DEFINITION_LINES)
        near = identifiers("\n".join(recent[1:]) if len(recent) > DEFINITION_LINES else cursor.prefix)
        lines = cursor.prefix.split("\n")
        imported = [w for line in lines[:400] if _is_import(line) for w in identifiers(line)]
        body = set(identifiers("\n".join(line for line in lines if not _is_import(line))))
        words: list[tuple[str, float]] = []
        for distance, word in enumerate(dict.fromkeys(reversed(near)), start=1):
            words.append((word, 1.0 / (1.0 + distance / 10.0) ** 2))
        for word in dict.fromkeys(imported):
            words.append((word, 0.9 if word not in body else 0.05))
        out: list[Candidate] = []
        seen: set[str] = set()
        for word, score in sorted(words, key=lambda item: -item[1]):
            if word in seen:
                continue
            seen.add(word)
            found = self.tags.lookup(word)
            if len(found) > MAX_DEFINITIONS_PER_NAME:
                continue
            for definition in found:
                if definition.key == key and definition.start < prompt_lines[1] and prompt_lines[0] < definition.end:
                    continue  # already in the prompt
                text = self._definition_text(definition)
                if not text:
                    continue
                out.append(Candidate("definition", definition.key, definition.label, definition.start,
                                     definition.end, text, score))
            if len(out) >= limit:
                break
        return out

    def _definition_text(self, definition) -> str:
        doc = next((d for d in self._docs.values() if d.key == definition.key), None)
        if doc is not None and doc.indexed_text is not None:
            lines = split_lines(doc.indexed_text)
        else:
            lines = _lines(definition.key)
        return definition_text(lines, definition) if lines else ""

    async def _rerank(self, query_text: str, candidates: list[Candidate]) -> list[Candidate]:
        """Blend in cosine similarity from the embedding backend (best effort: a failure keeps the order)."""
        assert self.embed is not None
        try:
            query = await wait_for(self.embed(query_text), 2.0)
            vectors = await wait_for(asyncio.gather(*(self.embed(c.text) for c in candidates)), 2.0)
        except Exception as exc:
            log.debug("embedding re-rank skipped: %s", exc)
            return candidates
        top = max((c.score for c in candidates), default=1.0) or 1.0
        for candidate, vector in zip(candidates, vectors):
            candidate.score = 0.5 * candidate.score / top + 0.5 * _cosine(query, vector)
        return candidates

    # --- helpers --------------------------------------------------------------------------------------------------

    def _label(self, key: str) -> str:
        path = key.replace("\\", "/")
        for folder in self.folders:
            root = os.path.abspath(folder).replace("\\", "/").rstrip("/") + "/"
            if path.startswith(root):
                return path[len(root):]
        return path.rsplit("/", 1)[-1]

    def memory_estimate(self) -> int:
        return self.index.memory_estimate() + self.tags.memory_estimate()

    def status(self) -> dict[str, Any]:
        return {"enabled": self.settings.enabled, "folders": list(self.folders), "files_indexed": len(self._disk_keys),
                "scan_done": self.scan_done, "windows": len(self.index), "definitions": len(self.tags),
                "ring": len(self.ring.chunks), "open_documents": len(self._docs),
                "disk": {"mode": self.watch_mode, "pending": len(self._pending), **self.disk_stats},
                "last_request": self.last_report}

    async def close(self) -> None:
        self._scan_stop = self._recheck_stop = True
        for task in (self._scan_task, self._recheck_task):
            if task is not None and not task.done():
                try:
                    await task
                except Exception:
                    pass


_IMPORT_STARTS = ("import ", "from ", "use ", "#include", "require", "using ", "package ")


def _is_import(line: str) -> bool:
    stripped = line.lstrip()
    return stripped.startswith(_IMPORT_STARTS) or "require(" in stripped


def _key(uri: str) -> str:
    return uri_to_path(uri) if uri.startswith("file:") else uri


_FILES: OrderedDict[str, tuple[tuple[int, int], list[str]]] = OrderedDict()
#: Lines of recently read files (the same few files are read again while the cursor stays in one place).
FILE_CACHE = 64


def _lines(path: str) -> list[str]:
    try:
        stat = os.stat(path)
    except OSError:
        return []
    mtime = (stat.st_mtime_ns, stat.st_size)  # a rewrite within the clock's granularity usually changes the size
    cached = _FILES.get(path)
    if cached is not None and cached[0] == mtime:
        _FILES.move_to_end(path)
        return cached[1]
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = split_lines(fh.read())
    except OSError:
        return []
    _FILES[path] = (mtime, lines)
    if len(_FILES) > FILE_CACHE:
        _FILES.popitem(last=False)
    return lines


def _read(path: str) -> str:
    return "\n".join(_lines(path))


def _read_lines(path: str, start: int, end: int) -> str:
    return "\n".join(_lines(path)[start:end])


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
