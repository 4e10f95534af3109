"""OpenAI-compatible endpoints: `/completions` (FIM through `suffix`, or prompt only), `/chat/completions`,
`/embeddings`.

vLLM, DeepSeek and llama-server speak the same protocol, so they are this module with other defaults
(see the kind table in `engine/backends/__init__.py`). The endpoint is the API base including its version path,
e.g. `https://api.openai.com/v1`, `http://gpu-box:8000/v1`, `https://api.deepseek.com/beta`."""

from __future__ import annotations

import contextlib
from typing import Any, AsyncGenerator, Mapping

import httpx

from ..config import HttpSettings
from ..errors import BackendError
from ..types import ChatChunk, ChatRequest, CompletionOptions, GenerationStats, Prompt
from .chat_normalize import ChatNormalizer
from .http import HttpBackend

#: OpenAI rejects more than four stop sequences; the engine applies every stop word client-side anyway.
MAX_SERVER_STOP_WORDS = 4


# ---------------------------------------------------------------------------------------------------------------------
# Completion


def fill_usage(stats: GenerationStats | None, usage: Any) -> None:
    if stats is None or not isinstance(usage, Mapping):
        return
    if isinstance(usage.get("prompt_tokens"), int):
        stats.prompt_tokens = usage["prompt_tokens"]
    if isinstance(usage.get("completion_tokens"), int):
        stats.generated_tokens = usage["completion_tokens"]
    details = usage.get("prompt_tokens_details")
    if isinstance(details, Mapping) and isinstance(details.get("cached_tokens"), int):
        stats.cached_prompt_tokens = details["cached_tokens"]


def first_choice(chunk: dict, vendor: str) -> dict | None:
    """`choices[0]`, or None for a choice-less chunk (the usage chunk); BackendError when the shape is wrong."""
    choices = chunk.get("choices")
    if choices is None or choices == []:
        return None
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise BackendError(vendor, "malformed stream chunk: `choices` is not a list of objects", None, str(chunk))
    return choices[0]


def choice_text(choice: dict, vendor: str, *, delta: bool) -> str:
    value = (choice.get("delta") or {}).get("content") if delta else choice.get("text")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BackendError(vendor, "malformed stream chunk: the text is not a string", None, str(choice))
    return value


class OpenAICompletion(HttpBackend):
    """`POST {endpoint}/completions`, streamed. With `fim=True` the prefix goes in `prompt` and the suffix in `suffix`
    (the server applies the model's FIM tokens); with `fim=False` the templated `prompt.text` is sent alone."""

    path = "/completions"
    delta_chunks = False

    def __init__(self, endpoint: str, *, model: str | None, fim: bool = True, vendor: str = "openai",
                 http_settings: HttpSettings = HttpSettings(), api_key: str | None = None,
                 include_usage: bool = True, client: httpx.AsyncClient | None = None):
        super().__init__(vendor, endpoint, http_settings, api_key, client)
        self.model = model
        self.native_fim = fim
        self.include_usage = include_usage

    def build_body(self, prompt: Prompt, options: CompletionOptions) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.model:
            body["model"] = self.model
        if self.native_fim:
            body["prompt"] = prompt.prefix_with_context
            if prompt.suffix is not None:
                body["suffix"] = prompt.suffix
        else:
            body["prompt"] = prompt.text
        body.update(max_tokens=options.max_decoding_tokens, temperature=options.sampling_temperature,
                    seed=options.seed, stream=True)
        if options.presence_penalty:
            body["presence_penalty"] = options.presence_penalty
        if options.stop_words:
            body["stop"] = list(options.stop_words[:MAX_SERVER_STOP_WORDS])
        if self.include_usage:
            body["stream_options"] = {"include_usage": True}
        return body

    async def generate(self, prompt: Prompt, options: CompletionOptions,
                       stats: GenerationStats | None = None) -> AsyncGenerator[str, None]:
        chunks = self.stream_json(self.path, self.build_body(prompt, options))
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                fill_usage(stats, chunk.get("usage"))
                if stats is not None and isinstance(chunk.get("timings"), dict):
                    stats.timings = chunk["timings"]
                choice = first_choice(chunk, self.vendor)
                if choice is None:
                    continue
                if choice.get("finish_reason") == "length" and stats is not None:
                    stats.hit_token_limit = True
                text = choice_text(choice, self.vendor, delta=self.delta_chunks)
                if text:
                    yield text


# ---------------------------------------------------------------------------------------------------------------------
# Chat


class OpenAIChat(HttpBackend):
    """`POST {url}` with an OpenAI chat body, normalised for the vendor, streamed as `ChatChunk`s."""

    def __init__(self, endpoint: str, *, normalizer: ChatNormalizer, vendor: str = "openai",
                 http_settings: HttpSettings = HttpSettings(), api_key: str | None = None,
                 path: str = "/chat/completions", client: httpx.AsyncClient | None = None):
        super().__init__(vendor, endpoint, http_settings, api_key, client)
        self.normalizer = normalizer
        self.path = path

    def build_body(self, request: ChatRequest) -> dict[str, Any]:
        return self.normalizer.normalize({**request.to_openai(), "stream": True})

    async def chat(self, request: ChatRequest) -> AsyncGenerator[ChatChunk, None]:
        chunks = self.stream_json(self.path, self.build_body(request))
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                choice = first_choice(chunk, self.vendor)
                if choice is None:
                    continue
                text = choice_text(choice, self.vendor, delta=True)
                finish = choice.get("finish_reason")
                if text or finish:
                    yield ChatChunk(text, finish)


# ---------------------------------------------------------------------------------------------------------------------
# Embedding


def first_embedding(response: dict, vendor: str) -> list[float]:
    """`data[0].embedding` of an OpenAI-shaped embeddings response."""
    data = response.get("data")
    try:
        vector = data[0]["embedding"]  # type: ignore[index]
    except (TypeError, KeyError, IndexError):
        raise BackendError(vendor, "malformed embeddings response: no data[0].embedding", None,
                           str(response)) from None
    if not isinstance(vector, list) or not all(isinstance(x, (int, float)) for x in vector):
        raise BackendError(vendor, "malformed embeddings response: the embedding is not a list of numbers")
    return [float(x) for x in vector]


class OpenAIEmbedding(HttpBackend):
    """`POST {url}` with `{"model", "input"}`; `extra` holds vendor fields (Voyage's `input_type`)."""

    def __init__(self, endpoint: str, *, model: str | None, vendor: str = "openai",
                 http_settings: HttpSettings = HttpSettings(), api_key: str | None = None,
                 path: str = "/embeddings", input_as_list: bool = False, extra: Mapping[str, Any] | None = None,
                 client: httpx.AsyncClient | None = None):
        super().__init__(vendor, endpoint, http_settings, api_key, client)
        self.model = model
        self.path = path
        self.input_as_list = input_as_list
        self.extra = dict(extra or {})

    def build_body(self, text: str) -> dict[str, Any]:
        body: dict[str, Any] = {"input": [text] if self.input_as_list else text}
        if self.model:
            body["model"] = self.model
        body.update(self.extra)
        return body

    async def embed(self, text: str) -> list[float]:
        return first_embedding(await self.post_json(self.path, self.build_body(text)), self.vendor)
