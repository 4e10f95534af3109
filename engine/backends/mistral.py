"""Mistral: Codestral FIM (`/v1/fim/completions`, `prompt` + `suffix`), chat and embeddings.

Request and response shapes follow https://docs.mistral.ai/api/ (FIM, chat, embeddings). The endpoint is the host
root, `https://api.mistral.ai` by default (`https://codestral.mistral.ai` for Codestral-only keys)."""

from __future__ import annotations

from typing import Any

from ..types import CompletionOptions, Prompt
from .chat_normalize import ChatNormalizer
from .openai import MAX_SERVER_STOP_WORDS, OpenAIChat, OpenAICompletion, OpenAIEmbedding

DEFAULT_ENDPOINT = "https://api.mistral.ai"
DEFAULT_COMPLETION_MODEL = "codestral-latest"
DEFAULT_CHAT_MODEL = "codestral-latest"
DEFAULT_EMBEDDING_MODEL = "mistral-embed"


class MistralCompletion(OpenAICompletion):
    """FIM through Mistral's own endpoint; its stream chunks are chat-shaped (`choices[0].delta.content`)."""

    path = "/v1/fim/completions"
    delta_chunks = True

    def __init__(self, endpoint: str = DEFAULT_ENDPOINT, *, model: str | None = DEFAULT_COMPLETION_MODEL, **kwargs):
        super().__init__(endpoint, model=model or DEFAULT_COMPLETION_MODEL, fim=True, vendor="mistral",
                         include_usage=False, **kwargs)

    def build_body(self, prompt: Prompt, options: CompletionOptions) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "prompt": prompt.prefix_with_context}
        if prompt.suffix is not None:
            body["suffix"] = prompt.suffix
        body.update(max_tokens=options.max_decoding_tokens, temperature=options.sampling_temperature,
                    random_seed=options.seed, stream=True)
        if options.stop_words:
            body["stop"] = list(options.stop_words[:MAX_SERVER_STOP_WORDS])
        return body


def mistral_chat(endpoint: str = DEFAULT_ENDPOINT, *, model: str | None = None,
                 supported_models: tuple[str, ...] = (), **kwargs) -> OpenAIChat:
    normalizer = ChatNormalizer("mistral", model or DEFAULT_CHAT_MODEL, supported_models)
    return OpenAIChat(endpoint, normalizer=normalizer, vendor="mistral", path="/v1/chat/completions", **kwargs)


def mistral_embedding(endpoint: str = DEFAULT_ENDPOINT, *, model: str | None = None, **kwargs) -> OpenAIEmbedding:
    return OpenAIEmbedding(endpoint, model=model or DEFAULT_EMBEDDING_MODEL, vendor="mistral",
                           path="/v1/embeddings", input_as_list=True, **kwargs)
