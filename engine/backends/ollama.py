"""Ollama: `/api/generate` (NDJSON stream), `/api/chat` and `/api/embed`.

Shapes from https://github.com/ollama/ollama/blob/main/docs/api.md . For FIM we send the prefix as `prompt` and the
suffix as `suffix` and let Ollama's model template insert the model's FIM tokens; when the user configured a
`prompt_template` we send our templated text with `raw: true` instead (no template applied by Ollama)."""

from __future__ import annotations

import contextlib
from typing import Any, AsyncGenerator

import httpx

from ..config import HttpSettings
from ..errors import BackendError
from ..types import ChatChunk, ChatRequest, CompletionOptions, GenerationStats, Prompt
from .chat_normalize import ChatNormalizer
from .http import HttpBackend

DEFAULT_ENDPOINT = "http://127.0.0.1:11434"


def _text(chunk: dict, key: str, vendor: str) -> str:
    value = chunk.get(key, "")
    if key == "message":
        value = (value or {}).get("content", "") if isinstance(value, dict) else None
    if not isinstance(value, str):
        raise BackendError(vendor, f"malformed stream chunk: `{key}` is not text", None, str(chunk))
    return value


def _options(options: CompletionOptions) -> dict[str, Any]:
    out: dict[str, Any] = {"num_predict": options.max_decoding_tokens,
                           "temperature": options.sampling_temperature, "seed": options.seed}
    if options.presence_penalty:
        out["presence_penalty"] = options.presence_penalty
    if options.stop_words:
        out["stop"] = list(options.stop_words)
    return out


class OllamaCompletion(HttpBackend):
    def __init__(self, endpoint: str = DEFAULT_ENDPOINT, *, model: str, fim: bool = True,
                 http_settings: HttpSettings = HttpSettings(), api_key: str | None = None,
                 client: httpx.AsyncClient | None = None):
        super().__init__("ollama", endpoint, http_settings, api_key, client)
        self.model = model
        self.native_fim = fim

    def build_body(self, prompt: Prompt, options: CompletionOptions) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model}
        if self.native_fim and prompt.suffix is not None:
            body.update(prompt=prompt.prefix_with_context, suffix=prompt.suffix)
        else:
            body.update(prompt=prompt.prefix_with_context if self.native_fim else prompt.text, raw=True)
        body.update(stream=True, options=_options(options))
        return body

    async def generate(self, prompt: Prompt, options: CompletionOptions,
                       stats: GenerationStats | None = None) -> AsyncGenerator[str, None]:
        chunks = self.stream_json("/api/generate", self.build_body(prompt, options), ndjson=True, end_key="done")
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                text = _text(chunk, "response", self.vendor)
                if text:
                    yield text
                if chunk.get("done"):
                    _fill_stats(stats, chunk)


def _fill_stats(stats: GenerationStats | None, chunk: dict) -> None:
    if stats is None:
        return
    if chunk.get("done_reason") == "length":
        stats.hit_token_limit = True
    if isinstance(chunk.get("prompt_eval_count"), int):
        stats.prompt_tokens = chunk["prompt_eval_count"]
    if isinstance(chunk.get("eval_count"), int):
        stats.generated_tokens = chunk["eval_count"]
    stats.timings = {k: v for k, v in chunk.items() if k.endswith("_duration")}


class OllamaChat(HttpBackend):
    def __init__(self, endpoint: str = DEFAULT_ENDPOINT, *, model: str, supported_models: tuple[str, ...] = (),
                 http_settings: HttpSettings = HttpSettings(), api_key: str | None = None,
                 client: httpx.AsyncClient | None = None):
        super().__init__("ollama", endpoint, http_settings, api_key, client)
        self.normalizer = ChatNormalizer("ollama", model, supported_models)

    def build_body(self, request: ChatRequest) -> dict[str, Any]:
        return self.normalizer.normalize({**request.to_openai(), "stream": True})

    async def chat(self, request: ChatRequest) -> AsyncGenerator[ChatChunk, None]:
        chunks = self.stream_json("/api/chat", self.build_body(request), ndjson=True, end_key="done")
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                text = _text(chunk, "message", self.vendor)
                finish = chunk.get("done_reason") if chunk.get("done") else None
                if text or finish:
                    yield ChatChunk(text, finish)


class OllamaEmbedding(HttpBackend):
    def __init__(self, endpoint: str = DEFAULT_ENDPOINT, *, model: str, http_settings: HttpSettings = HttpSettings(),
                 api_key: str | None = None, client: httpx.AsyncClient | None = None):
        super().__init__("ollama", endpoint, http_settings, api_key, client)
        self.model = model

    async def embed(self, text: str) -> list[float]:
        response = await self.post_json("/api/embed", {"model": self.model, "input": text})
        try:
            vector = response["embeddings"][0]
        except (KeyError, IndexError, TypeError):
            raise BackendError(self.vendor, "malformed embeddings response: no embeddings[0]", None,
                               str(response)) from None
        if not isinstance(vector, list) or not all(isinstance(x, (int, float)) for x in vector):
            raise BackendError(self.vendor, "malformed embeddings response: the embedding is not a list of numbers")
        return [float(x) for x in vector]
