"""The interfaces every backend implements. A backend is anything with these methods; no base class is required.

Streams are async generators: when the consumer stops early (break, ``aclose()``, task cancelled) the generator's
``finally`` runs, which closes the HTTP response, which makes the model server stop generating for that slot.
Callers should wrap iteration in ``contextlib.aclosing`` so that happens at once rather than at garbage collection."""

from __future__ import annotations

import contextlib
from typing import AsyncGenerator, Protocol, runtime_checkable

from .types import ChatChunk, ChatRequest, CompletionOptions, GenerationStats, Prompt

@runtime_checkable
class CompletionStream(Protocol):
    #: True when the backend takes `prompt.prefix`/`prompt.suffix` itself (the model's own FIM tokens);
    #: False when it wants `prompt.text`, already templated.
    native_fim: bool

    def generate(self, prompt: Prompt, options: CompletionOptions,
                 stats: GenerationStats | None = None) -> AsyncGenerator[str, None]: ...

    async def close(self) -> None: ...


async def generate_sync(stream: CompletionStream, prompt: Prompt, options: CompletionOptions,
                        stats: GenerationStats | None = None) -> str:
    """The whole completion as one string (used where stop words do not apply, e.g. next-edit suggestions)."""
    parts: list[str] = []
    async with contextlib.aclosing(stream.generate(prompt, options, stats)) as chunks:
        async for chunk in chunks:
            parts.append(chunk)
    return "".join(parts)


@runtime_checkable
class ChatCompletionStream(Protocol):
    def chat(self, request: ChatRequest) -> AsyncGenerator[ChatChunk, None]: ...

    async def close(self) -> None: ...


@runtime_checkable
class Embedding(Protocol):
    async def embed(self, text: str) -> list[float]: ...

    async def close(self) -> None: ...
