"""Generations in flight, which a later request may join instead of starting over.

A model call takes a few hundred milliseconds; a user types two or three characters meanwhile. When those characters
are what the generation has produced (or is about to: nothing contradicts them yet), cancelling it and starting a
new call wastes the prefill and the tokens already made. Copilot and Continue keep the generation and serve the rest
of it; so does this module. A generation runs in its own task, apart from the requests waiting for it: a request
superseded by a newer one stops waiting, and the generation is cancelled only when no request waits for it any more
(or, for a speculative one, when the document leaves the path to the state it was computed for).

The join is decided when the request arrives, before the older request is superseded, so the generation always has
a waiter across the hand-over."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from .context import CursorContext
from .postprocess.trim_whitespace import trim_start

Compute = Callable[[Callable[[str], None]], Awaitable[list[str]]]


@dataclass(eq=False)
class Flight:
    """One generation for one cursor context: its task (texts kept before the cache) and the text so far."""

    ctx: CursorContext
    invoked: bool = False
    speculative: bool = False
    task: asyncio.Task | None = None
    #: The raw text generated so far (single generations only).
    partial: str = ""
    waiters: int = 0
    _progress: asyncio.Future | None = field(default=None, repr=False)

    def start(self, compute: Compute) -> Flight:
        self.task = asyncio.ensure_future(compute(self.on_text))
        self.task.add_done_callback(self._done)
        return self

    def _done(self, task: asyncio.Task) -> None:
        # A generation nobody waits for any more (superseded, a prefetch) may fail: its failure is the waiters'
        # to report, and with none asyncio would log "Task exception was never retrieved" with a traceback.
        if not task.cancelled():
            task.exception()
        self._wake()

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def on_text(self, text: str) -> None:
        self.partial = text
        self._wake()

    def _wake(self) -> None:
        if self._progress is not None and not self._progress.done():
            self._progress.set_result(None)
        self._progress = None

    def typed_since(self, ctx: CursorContext, max_chars: int) -> str | None:
        """The characters typed since this flight's context, when `ctx` continues it (same document, same text
        after the cursor, at most `max_chars` more before it); None otherwise."""
        mine = self.ctx
        if ctx.uri != mine.uri or ctx.suffix != mine.suffix or not ctx.prefix.startswith(mine.prefix):
            return None
        typed = ctx.prefix[len(mine.prefix):]
        if len(typed) > max_chars or (typed and not mine.multiline and "\n" in typed):
            return None
        return typed

    def fits(self, typed: str) -> bool:
        """Nothing generated so far contradicts the typed characters. The text so far is compared as it would be
        shown (the finished texts are what the request is served from): after "return " a model's leading space is
        dropped, so typing "x" follows " x", and typing " x" does not."""
        if self.task is not None and self.task.done():
            texts = _texts(self.task)
            return texts is not None and any(t.startswith(typed) and len(t) > len(typed) for t in texts)
        partial = trim_start(self.partial, self.ctx.line_prefix)
        return partial.startswith(typed) or typed.startswith(partial)

    async def rests_after(self, typed: str) -> list[str] | None:
        """The generation's texts after `typed`, once it has finished; None as soon as it cannot give any (it
        produced something else, failed or was cancelled)."""
        assert self.task is not None
        while not self.task.done():
            if not self.fits(typed):
                return None
            if self._progress is None:
                self._progress = asyncio.get_running_loop().create_future()
            await asyncio.wait((self.task, self._progress), return_when=asyncio.FIRST_COMPLETED)
        texts = _texts(self.task)
        if texts is None:
            return None
        rests = [t[len(typed):] for t in texts if t.startswith(typed) and len(t) > len(typed)]
        return rests or None


def _texts(task: asyncio.Task) -> list[str] | None:
    if task.cancelled() or task.exception() is not None:
        return None
    return task.result()


class InflightGenerations:
    """The latest user generation per document, and the rule for joining it."""

    def __init__(self) -> None:
        self._flights: dict[str, Flight] = {}
        #: Requests served by a user generation they joined (one that then produced something else, so that the
        #: request asked the model afresh, does not count).
        self.reused = 0

    def start(self, ctx: CursorContext, invoked: bool, compute: Compute) -> Flight:
        flight = Flight(ctx, invoked=invoked).start(compute)
        flight.waiters += 1
        self._flights[ctx.uri] = flight
        return flight

    def release(self, flight: Flight) -> None:
        """A request stopped waiting; with nobody left, a user generation is cancelled (llama-server stops)."""
        flight.waiters -= 1
        if flight.waiters <= 0 and flight.running and not flight.speculative:
            assert flight.task is not None
            flight.task.cancel()
        if not flight.running and self._flights.get(flight.ctx.uri) is flight:
            del self._flights[flight.ctx.uri]

    def joinable(self, ctx: CursorContext, max_chars: int) -> tuple[Flight, str] | None:
        flight = self._flights.get(ctx.uri)
        if flight is None or not flight.running or flight.invoked:
            return None
        typed = flight.typed_since(ctx, max_chars)
        if typed is None or not flight.fits(typed):
            return None
        return flight, typed

    def busy(self) -> bool:
        """A user generation is running (for any document)."""
        return any(f.running for f in self._flights.values())

    def forget(self, uri: str) -> None:
        flight = self._flights.pop(uri, None)
        if flight is not None and flight.running and flight.task is not None:
            flight.task.cancel()
