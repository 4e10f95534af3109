"""Speculative prefetch: while a suggestion is on screen, compute the next one for the document as if it were
accepted, so that Tab → next suggestion is served from the cache (Copilot on `didShowCompletion`, llama.vim when a
hint is rendered).

Rules, because a guess must never cost the user anything:
- lowest priority: it starts only when no user generation runs, and it is cancelled before a user request makes a
  model call it cannot serve (a request for the accepted state joins it instead);
- at most one in flight; a newer one replaces it;
- cancelled as soon as the document leaves the path to the accepted state (typing the suggestion's own characters
  stays on it);
- on Infill's own llama-server it never evicts the user's prompt cache: it runs on the user's slot only when it
  continues the prompt held there (the accepted state usually does), else on a slot of its own
  (`engine.local.slots`);
- its result only fills the cache: it never becomes the document's shown suggestion;
- on a model server others share it is sent only when a slot stays free for a user, and gives its slot up when a
  request waits (`engine.backends.shared_server`): counted as `held` and `yielded`.

It is triggered by `textDocument/didShowCompletion` or, for a client that has not reported showing anything, when
an answer with a suggestion is sent."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from engine.errors import SpeculationHeld

from .context import CursorContext
from .inflight import Flight, InflightGenerations
from .pipeline import CompletionService

log = logging.getLogger(__name__)

#: Builds the cursor context of a hypothetical document state: (uri, text before the cursor, text after it, where
#: that text starts in the document: the context is a window, and its line must be the document's).
MakeContext = Callable[[str, str, str, int], "CursorContext | None"]

#: Loop turns after which a cancelled prefetch that is still running is logged: the cancellation raises at its
#: pending await and the HTTP response is closed within a few turns (the shielded close, the socket's shutdown). Only
#: logged, not counted as a fault: on a loaded machine the close can wait for the socket a little longer, and a turn
#: count is a measure of time. The fault that keeps the model server generating for nobody is a prefetch that swallows
#: its cancellation and runs on to its end: that is what `PrefetchStats.stale_running` counts.
SETTLE_TURNS = 100


@dataclass(frozen=True)
class Target:
    """A shown suggestion and the document state its acceptance gives."""

    uri: str
    prefix: str  # before the cursor where the suggestion was shown
    text: str  # the suggestion
    suffix: str  # after the cursor, before acceptance
    accepted_suffix: str  # after the cursor once accepted (auto-closed characters replaced)
    #: Where `prefix` starts in the document and how many characters follow `suffix` there: a request's context is
    #: a bounded window of the document (lsp_server.context), so the path is checked on that window, not the file.
    start: int = 0
    tail: int = 0

    @property
    def accepted_prefix(self) -> str:
        return self.prefix + self.text

    def on_path(self, document: str) -> bool:
        """The document is the shown state, the accepted one, or the shown state plus the suggestion's first
        characters typed by hand."""
        accepted_length = len(self.accepted_prefix) + len(self.accepted_suffix)
        if len(document) == accepted_length and document.startswith(self.accepted_prefix) \
                and document.endswith(self.accepted_suffix):
            return True
        typed = len(document) - len(self.prefix) - len(self.suffix)
        if not 0 <= typed <= len(self.text):
            return False
        return (document.startswith(self.prefix) and document.endswith(self.suffix)
                and document[len(self.prefix):len(self.prefix) + typed] == self.text[:typed])


@dataclass
class PrefetchStats:
    started: int = 0
    completed: int = 0
    cancelled: int = 0
    #: Requests served from a finished prefetch (a cache hit on its state); those that joined a running one are
    #: counted in `joined`.
    hits: int = 0
    joined: int = 0
    skipped_busy: int = 0
    skipped_cached: int = 0
    #: Cancelled (the document had left their path) but ran on to a result: the cancellation was swallowed and the
    #: model generated for nobody (must stay 0).
    stale_running: int = 0
    #: Most loop turns a cancelled prefetch took to finish (its stream's close).
    settle_turns_max: int = 0
    #: A shared model server was busy: not sent (`held`), or cancelled to free its slot for a request (`yielded`).
    held: int = 0
    yielded: int = 0


class Prefetcher:
    def __init__(self, service: Callable[[], CompletionService | None], make_context: MakeContext,
                 inflight: InflightGenerations, enabled: Callable[[], bool]) -> None:
        self._service = service
        self._make_context = make_context
        self._inflight = inflight
        self._enabled = enabled
        self.target: Target | None = None
        self.flight: Flight | None = None
        self._watchers: set[asyncio.Task] = set()
        #: Cancelled prefetches not yet ended.
        self._closing: set[asyncio.Task] = set()
        self.stats = PrefetchStats()
        #: (event, detail) in order, for tests that check ordering by counting events rather than timing.
        self.events: deque[tuple[str, str]] = deque(maxlen=1000)

    # --- triggers ----------------------------------------------------------------------------------------------

    def on_shown(self, ctx: CursorContext, text: str, replace_chars: int = 0, tail: int = 0) -> None:
        """A suggestion for `ctx` is on screen: prefetch the state its acceptance gives. `tail`: the document's
        characters after `ctx.suffix`."""
        service = self._service()
        if not self._enabled() or service is None or not text:
            return
        target = Target(ctx.uri, ctx.prefix, text, ctx.suffix, ctx.suffix[replace_chars:],
                        ctx.offset - len(ctx.prefix), tail)
        if self.target is not None and self._same_state(self.target, target) and self.flight is not None \
                and (self.flight.running or _succeeded(self.flight)):
            return  # typing through the same suggestion: the same accepted state
        if service.cache.get(target.uri, target.accepted_prefix, target.accepted_suffix) is not None:
            self.stats.skipped_cached += 1
            return
        if self._inflight.busy():
            self.stats.skipped_busy += 1
            self.events.append(("skipped-busy", target.uri))
            return
        accepted = self._make_context(target.uri, target.accepted_prefix, target.accepted_suffix, target.start)
        if accepted is None:
            return
        self.cancel("replaced")
        self.target = target
        next_line = ends_line(accepted)
        if next_line:
            accepted = dataclasses.replace(accepted, line_mode="block")
        flight = Flight(accepted, speculative=True)
        self.flight = flight.start(lambda on_text: service.compute(accepted, False, speculative=True,
                                                                   next_line=next_line, on_text=on_text))
        assert flight.task is not None
        flight.task.add_done_callback(self._finished)
        self.stats.started += 1
        self.events.append(("prefetch-start", target.uri))

    def on_change(self, uri: str, document: str | None) -> None:
        """The document changed (or closed, or changed outside the target's window: None): cancel a prefetch it no
        longer leads to. `document`: the text from the target's `start` to `tail` characters before the end."""
        if self.target is None or self.target.uri != uri:
            return
        if document is None or not (self.target.on_path(document) or self._typing_into_flight(document)):
            self.cancel("diverged")
            self.target = None

    def _typing_into_flight(self, document: str) -> bool:
        """Past the accepted state, the user types what the running prefetch has produced so far."""
        flight, target = self.flight, self.target
        if flight is None or not flight.running or target is None:
            return False
        end = len(document) - len(target.accepted_suffix)
        if end < len(target.accepted_prefix) or not document.startswith(target.accepted_prefix) \
                or not document.endswith(target.accepted_suffix):
            return False
        return flight.fits(document[len(target.accepted_prefix):end])

    def before_model_call(self, ctx: CursorContext) -> None:
        """A user request is about to call the model for `ctx`: a prefetch must not compete with it."""
        if self.flight is not None and self.flight.running:
            self.cancel("yielded to a user request")

    # --- serving -----------------------------------------------------------------------------------------------

    def joinable(self, ctx: CursorContext, max_chars: int) -> tuple[Flight, str] | None:
        flight = self.flight
        if flight is None or not flight.running:
            return None
        typed = flight.typed_since(ctx, max_chars)
        if typed is None or not flight.fits(typed):
            return None
        self.stats.joined += 1
        self.events.append(("prefetch-joined", ctx.uri))
        return flight, typed

    def note_cache_hit(self, ctx: CursorContext) -> None:
        if self.target is not None and ctx.uri == self.target.uri and ctx.prefix == self.target.accepted_prefix \
                and ctx.suffix == self.target.accepted_suffix:
            self.stats.hits += 1

    # --- bookkeeping -------------------------------------------------------------------------------------------

    def cancel(self, why: str) -> None:
        flight = self.flight
        if flight is None or not flight.running or flight.waiters > 0:
            return  # a user request waits for it: it is no longer a guess
        assert flight.task is not None
        if flight.task in self._closing:
            return  # cancelled before and still closing: counted once
        self._closing.add(flight.task)
        flight.task.add_done_callback(self._closing.discard)
        flight.task.cancel()
        watcher = asyncio.ensure_future(self._watch(flight.task))
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        self.stats.cancelled += 1
        self.events.append(("prefetch-cancel", why))
        log.debug("prefetch cancelled: %s", why)

    def _finished(self, task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is None:
            self.stats.completed += 1
            self.events.append(("prefetch-done", ""))
        elif not task.cancelled():
            error = task.exception()
            if isinstance(error, SpeculationHeld):
                if error.yielded:
                    self.stats.yielded += 1
                else:
                    self.stats.held += 1
                self.events.append(("prefetch-yielded" if error.yielded else "prefetch-held", str(error)))
            log.debug("prefetch failed: %s", error)

    async def _watch(self, task: asyncio.Task) -> None:
        turn = 0
        while not task.done() and turn < SETTLE_TURNS:
            await asyncio.sleep(0)
            turn += 1
        if not task.done():
            log.debug("a cancelled prefetch is still closing %d loop turns later", SETTLE_TURNS)
            await asyncio.wait({task})  # so that close() still waits for it
        self.stats.settle_turns_max = max(self.stats.settle_turns_max, turn)
        if not task.cancelled() and task.exception() is None:
            self.stats.stale_running += 1
            log.warning("a cancelled prefetch ran on to its end: its cancellation was swallowed")

    @staticmethod
    def _same_state(a: Target, b: Target) -> bool:
        return a.uri == b.uri and a.accepted_prefix == b.accepted_prefix and a.accepted_suffix == b.accepted_suffix

    async def close(self) -> None:
        self.cancel("shutdown")
        if self._watchers:
            await asyncio.gather(*self._watchers, return_exceptions=True)


def ends_line(ctx: CursorContext) -> bool:
    """The accepted suggestion completed a line of code (nothing after the cursor on it) where the single-line
    decision holds: the useful next suggestion is the next line, which a single-line request cannot give (it
    stops at the line break). Copilot, too, shows the next line after an accepted one."""
    return not ctx.multiline and not ctx.line_rest.strip() and bool(ctx.line_prefix.strip())


def _succeeded(flight: Flight) -> bool:
    task = flight.task
    return task is not None and task.done() and not task.cancelled() and task.exception() is None
