"""A leaky bucket per model, wrapped around completion, chat and embedding backends alike (`RateLimited`).

Why per model (not per backend object): the completion engine and a `complete` command running at the same time
talk to the same paid quota, so they must share one bucket. Why client-side at all: a hosted API answering 429
costs a round trip plus Retry-After; spacing requests ourselves keeps the editor's suggestions flowing.

The bucket is kept as the "theoretical arrival time" of the next request (GCRA), which needs no lock: asyncio runs
the read-and-update between two awaits atomically, and it works from any event loop."""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import Any, AsyncGenerator, Awaitable, Callable, TypeVar

from ..types import ChatChunk, ChatRequest, CompletionOptions, GenerationStats, Prompt

T = TypeVar("T")

#: Requests per minute when `rate_limit_rpm` is not set and the endpoint is not on this machine (Tabby's default).
DEFAULT_REMOTE_RPM = 600


def per_second(rpm: int) -> int:
    """Requests per minute → whole requests per second, rounded up so a small limit never becomes zero."""
    return max(1, math.ceil(rpm / 60))


@dataclass
class RateLimiter:
    """Lets `rate` requests through per second, with bursts of up to `rate` requests."""

    rate: int
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    _tat: float = field(default=0.0, init=False)

    @classmethod
    def from_rpm(cls, rpm: int, **kwargs) -> "RateLimiter":
        return cls(per_second(rpm), **kwargs)

    def reserve(self) -> float:
        """Take the next slot; return how long to wait for it (0 when it is free now)."""
        interval = 1.0 / self.rate
        burst = (self.rate - 1) * interval
        now = self.clock()
        tat = max(self._tat, now)
        wait = max(0.0, tat - burst - now)
        self._tat = tat + interval
        return wait

    async def acquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            await self.sleep(wait)


_LIMITERS: dict[tuple, RateLimiter] = {}


def limiter_for(kind: str, endpoint: str, model: str | None, rpm: int) -> RateLimiter:
    """The one limiter shared by every backend that calls this model at this endpoint."""
    key = (kind.split("/")[0], endpoint.rstrip("/"), model or "", rpm)
    limiter = _LIMITERS.get(key)
    if limiter is None:
        limiter = _LIMITERS[key] = RateLimiter.from_rpm(rpm)
    return limiter


Release = Callable[[], Awaitable[None]]


async def _limited(limiter: RateLimiter | None, open_stream: Callable[[], AsyncGenerator[T, None]]
                   ) -> AsyncGenerator[T, None]:
    """Wait for the bucket, then pass the inner stream through, closing it when the consumer stops early."""
    if limiter is not None:
        await limiter.acquire()
    agen = open_stream()
    try:
        async for chunk in agen:
            yield chunk
    finally:
        await agen.aclose()


class RateLimited:
    """A backend of any role (completion stream, chat stream, embedding) behind its model's bucket: every request
    waits for a slot first. `close()` closes the backend, then gives back what the factory shared with it (the pooled
    HTTP client).

    One class for the three roles because the rule is the same; the factory returns it typed as the role's protocol,
    so only the inner backend's own methods are called."""

    def __init__(self, inner: Any, limiter: RateLimiter | None, release: Release | None = None):
        self.inner = inner
        #: Read by the completion engine (CompletionStream); meaningless for the other roles.
        self.native_fim: bool = getattr(inner, "native_fim", False)
        self.native_context = getattr(inner, "native_context", False)
        if hasattr(inner, "warm"):  # llama-server prefills the context on request; others cannot
            self.warm = inner.warm
        self._limiter = limiter
        self._release = release

    def generate(self, prompt: Prompt, options: CompletionOptions,
                 stats: GenerationStats | None = None) -> AsyncGenerator[str, None]:
        return _limited(self._limiter, lambda: self.inner.generate(prompt, options, stats))

    def chat(self, request: ChatRequest) -> AsyncGenerator[ChatChunk, None]:
        return _limited(self._limiter, lambda: self.inner.chat(request))

    async def embed(self, text: str) -> list[float]:
        if self._limiter is not None:
            await self._limiter.acquire()
        return await self.inner.embed(text)

    async def close(self) -> None:
        release, self._release = self._release, None
        try:
            await self.inner.close()
        finally:
            if release is not None:
                await release()
