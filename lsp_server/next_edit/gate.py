"""Ghost text first: a next-edit model call never runs while an inline-completion request is being served.

Both may share one model server (the completion model answers next edits too, or a separate one competes for the
same two cores). A next edit is a suggestion the user may look at later; ghost text is what they are waiting for
while they type. So a model call waits until no inline request is in flight, and an inline request that arrives
while one runs cancels it (its stream is closed; the next-edit request answers no edit, reason "yielded"). The
model-free path never waits: it costs O(window)."""

from __future__ import annotations

import asyncio
from contextlib import contextmanager
from typing import Awaitable, Callable, Iterator, TypeVar

from engine.deadlines import cancellations

T = TypeVar("T")


class Yielded(Exception):
    """The model call was cancelled for an inline-completion request."""


class CompletionGate:
    def __init__(self) -> None:
        self._inline = 0
        self._idle: asyncio.Event | None = None
        self._calls: set[asyncio.Task] = set()
        self._yielded: set[asyncio.Task] = set()
        self.yielded = 0

    def _event(self) -> asyncio.Event:
        if self._idle is None:
            self._idle = asyncio.Event()
            if self._inline == 0:
                self._idle.set()
        return self._idle

    @property
    def busy(self) -> bool:
        return self._inline > 0

    @contextmanager
    def inline(self) -> Iterator[None]:
        """Around an inline-completion request: running model calls are cancelled, new ones wait."""
        self._inline += 1
        self._event().clear()
        for task in list(self._calls):
            if not task.done():
                self._yielded.add(task)
                task.cancel()
        try:
            yield
        finally:
            self._inline -= 1
            if self._inline == 0:
                self._event().set()

    async def model_call(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run `work` once no inline request is in flight; raises Yielded when one cancels it."""
        while self._inline:
            await self._event().wait()
        task = asyncio.ensure_future(work())
        self._calls.add(task)
        try:
            return await task
        except asyncio.CancelledError:
            if task in self._yielded and not cancellations():
                self.yielded += 1
                raise Yielded() from None
            raise
        finally:
            self._calls.discard(task)
            self._yielded.discard(task)
