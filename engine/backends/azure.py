"""Azure OpenAI: chat and embeddings on a deployment.

Shapes from https://learn.microsoft.com/azure/ai-services/openai/reference : the URL names the deployment
(`{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...`), the key goes in an `api-key`
header, and the body is OpenAI's. Our `model` setting is the deployment name."""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlsplit

import httpx

from ..config import HttpSettings
from .chat_normalize import ChatNormalizer
from .openai import OpenAIChat, OpenAIEmbedding

API_VERSION = "2024-10-21"


def deployment_path(deployment: str, operation: str, api_version: str = API_VERSION) -> str:
    return f"/openai/deployments/{quote(deployment, safe='')}/{operation}?api-version={quote(api_version)}"


def split_api_version(endpoint: str) -> tuple[str, str]:
    """`https://x.openai.azure.com?api-version=2024-06-01` → the base and that version (API_VERSION when absent), so
    users can pin the version in `api_endpoint` as Azure's portal shows it."""
    parts = urlsplit(endpoint)
    version = parse_qs(parts.query).get("api-version", [API_VERSION])[0]
    return parts._replace(query="", fragment="").geturl().rstrip("/"), version


class AzureChat(OpenAIChat):
    def __init__(self, endpoint: str, *, deployment: str, supported_models: tuple[str, ...] = (),
                 http_settings: HttpSettings = HttpSettings(), api_key: str | None = None,
                 client: httpx.AsyncClient | None = None):
        base, version = split_api_version(endpoint)
        super().__init__(base, normalizer=ChatNormalizer("azure", deployment, supported_models),
                         vendor="azure", http_settings=http_settings, api_key=api_key,
                         path=deployment_path(deployment, "chat/completions", version), client=client)

    def auth_headers(self) -> dict[str, str]:
        return {"api-key": self._api_key} if self._api_key else {}


class AzureEmbedding(OpenAIEmbedding):
    def __init__(self, endpoint: str, *, deployment: str, http_settings: HttpSettings = HttpSettings(),
                 api_key: str | None = None, client: httpx.AsyncClient | None = None):
        # The deployment picks the model; Azure ignores a `model` field, so none is sent.
        base, version = split_api_version(endpoint)
        super().__init__(base, model=None, vendor="azure", http_settings=http_settings, api_key=api_key,
                         path=deployment_path(deployment, "embeddings", version), client=client)

    def auth_headers(self) -> dict[str, str]:
        return {"api-key": self._api_key} if self._api_key else {}
