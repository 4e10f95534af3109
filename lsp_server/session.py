"""Per-document request handling: a newer inline request supersedes the older one, and automatic requests wait a
little (debounce) so a burst of keystrokes costs one model call.

Supersession cancels the older request's work task. The cancellation reaches the engine's stream, whose `finally`
closes the HTTP response, so llama-server stops generating for that slot. The older LSP request is still answered
(with an empty list) because every LSP request must get a response."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Awaitable, Callable, TypeVar

from engine.deadlines import cancellations

T = TypeVar("T")

#: Gaps longer than this between automatic requests are pauses, not typing rhythm.
PAUSE_MS = 2000.0


class Superseded(Exception):
    """Raised to the older request's handler when a newer request for the same document replaced it."""


def adaptive_delay_ms(intervals_ms: list[float], latencies_ms: list[float], min_ms: float, max_ms: float) -> float:
    """About one and a half typing intervals, so that a request fires when the user pauses rather than between
    keystrokes; but not longer than a typical model call (a fast model is cheap to call), within [min_ms, max_ms]."""
    typing = [i for i in intervals_ms if i <= PAUSE_MS]
    if not typing:
        return float(min_ms)
    delay = 1.5 * statistics.median(typing)
    if latencies_ms:
        delay = min(delay, statistics.median(latencies_ms))
    return float(max(min_ms, min(max_ms, delay)))


@dataclass
class _Ticket:
    task: asyncio.Task | None = None
    superseded: bool = False


@dataclass
class _DocumentState:
    active: _Ticket | None = None
    last_automatic: float | None = None
    intervals_ms: deque = field(default_factory=lambda: deque(maxlen=12))


class Sessions:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._docs: dict[str, _DocumentState] = {}
        self.latencies_ms: deque = deque(maxlen=20)
        self.superseded_count = 0

    def note_automatic(self, uri: str) -> None:
        """Record the time of an automatic request: the gaps between them measure the typing speed."""
        state = self._docs.setdefault(uri, _DocumentState())
        now = self._clock()
        if state.last_automatic is not None:
            state.intervals_ms.append((now - state.last_automatic) * 1000.0)
        state.last_automatic = now

    def record_latency(self, ms: float) -> None:
        self.latencies_ms.append(ms)

    def debounce_ms(self, uri: str, mode: str, fixed_ms: float, min_ms: float, max_ms: float) -> float:
        if mode == "fixed":
            return float(fixed_ms)
        state = self._docs.get(uri)
        intervals = list(state.intervals_ms) if state else []
        return adaptive_delay_ms(intervals, list(self.latencies_ms), min_ms, max_ms)

    def active_count(self) -> int:
        return sum(1 for s in self._docs.values() if s.active and s.active.task and not s.active.task.done())

    async def run(self, uri: str, work: Callable[[], Awaitable[T]], delay_s: float = 0.0) -> T:
        """Run `work` as the document's current request, after `delay_s`, cancelling the previous one.

        Raises Superseded when a newer request replaces this one; CancelledError when this request itself is
        cancelled ($/cancelRequest)."""
        state = self._docs.setdefault(uri, _DocumentState())
        previous = state.active
        if previous is not None and previous.task is not None and not previous.task.done():
            previous.superseded = True
            previous.task.cancel()
            self.superseded_count += 1

        async def body() -> T:
            if delay_s > 0:
                await asyncio.sleep(delay_s)
            return await work()

        ticket = _Ticket()
        ticket.task = asyncio.ensure_future(body())
        state.active = ticket
        try:
            result = await ticket.task
            if cancellations():
                # The work finished in the same moment as $/cancelRequest arrived: honour the cancellation.
                raise asyncio.CancelledError()
            return result
        except asyncio.CancelledError:
            if ticket.superseded:
                raise Superseded() from None
            raise
        finally:
            if state.active is ticket:
                state.active = None

    def forget(self, uri: str) -> None:
        state = self._docs.pop(uri, None)
        if state and state.active and state.active.task and not state.active.task.done():
            state.active.superseded = True
            state.active.task.cancel()

    async def cancel_all(self) -> None:
        tasks = []
        for state in self._docs.values():
            if state.active and state.active.task and not state.active.task.done():
                state.active.superseded = True
                state.active.task.cancel()
                tasks.append(state.active.task)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
