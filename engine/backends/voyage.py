"""Voyage AI embeddings: `POST {endpoint}/embeddings` with `{"input": [text], "model", "input_type"}`, Bearer key.

Shapes from https://docs.voyageai.com/reference/embeddings-api ; the response is OpenAI-shaped
(`data[0].embedding`)."""

from __future__ import annotations

from .openai import OpenAIEmbedding

DEFAULT_ENDPOINT = "https://api.voyageai.com/v1"
DEFAULT_MODEL = "voyage-code-3"


def voyage_embedding(endpoint: str = DEFAULT_ENDPOINT, *, model: str | None = None,
                     input_type: str = "document", **kwargs) -> OpenAIEmbedding:
    """`input_type = "document"`: we embed code snippets to be retrieved later, which is Voyage's document case."""
    return OpenAIEmbedding(endpoint, model=model or DEFAULT_MODEL, vendor="voyage", input_as_list=True,
                           extra={"input_type": input_type}, **kwargs)
