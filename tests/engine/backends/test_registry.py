"""The kind table and configuration checking: every mistake is a ConfigError naming the key, never a crash."""

from __future__ import annotations

import pytest

import engine.backends as backends
from engine.backends import CHAT_KINDS, COMPLETION_KINDS, EMBEDDING_KINDS, KINDS, create_chat_stream, \
    create_completion_stream, create_embedding
from engine.backends.rate_limit import RateLimited
from engine.config import EngineConfig, ModelConfig, from_dict
from engine.errors import ConfigError
from engine.streams import ChatCompletionStream, CompletionStream, Embedding


def test_the_kinds_of_the_issue_are_all_there():
    assert set(COMPLETION_KINDS) == {"llama.cpp/completion", "llama.cpp/infill", "openai/completion",
                                     "openai/legacy_completion_no_fim", "vllm/completion", "deepseek/completion",
                                     "mistral/completion", "ollama/completion"}
    assert set(CHAT_KINDS) == {"openai/chat", "azure/chat", "mistral/chat", "ollama/chat", "llama.cpp/chat"}
    assert set(EMBEDDING_KINDS) == {"llama.cpp/embedding", "openai/embedding", "azure/embedding",
                                    "mistral/embedding", "ollama/embedding", "voyage/embedding"}
    assert len(KINDS) == len(COMPLETION_KINDS) + len(CHAT_KINDS) + len(EMBEDDING_KINDS)


def _valid_config(kind: str) -> ModelConfig:
    return ModelConfig(kind=kind, api_endpoint="http://127.0.0.1:1/v1", model="m", api_key="k")


@pytest.mark.parametrize("kind", list(KINDS))
async def test_every_kind_builds_and_implements_its_protocol(kind):
    role = KINDS[kind].role
    factory = {"completion": create_completion_stream, "chat": create_chat_stream, "embedding": create_embedding}[role]
    protocol = {"completion": CompletionStream, "chat": ChatCompletionStream, "embedding": Embedding}[role]
    backend = factory(_valid_config(kind))
    try:
        assert isinstance(backend, protocol) and isinstance(backend, RateLimited)
        assert isinstance(backend.inner, protocol)
        if role == "completion":
            assert backend.native_fim == (kind in {"llama.cpp/infill", "openai/completion", "deepseek/completion",
                                                   "mistral/completion", "ollama/completion"})
    finally:
        await backend.close()


def test_unknown_kind_names_the_key_and_lists_the_kinds():
    with pytest.raises(ConfigError) as info:
        create_completion_stream(ModelConfig(kind="openia/completion", api_endpoint="http://x"))
    assert info.value.key == "completion.kind"
    for kind in COMPLETION_KINDS:
        assert kind in str(info.value)


def test_a_kind_of_another_role_is_refused():
    with pytest.raises(ConfigError, match="'openai/embedding' is a kind for embedding") as info:
        create_chat_stream(ModelConfig(kind="openai/embedding", api_endpoint="http://x", model="m"))
    assert info.value.key == "chat.kind" and "openai/chat" in str(info.value)


def test_local_is_not_a_remote_kind():
    with pytest.raises(ConfigError, match="engine") as info:
        create_completion_stream(ModelConfig(kind="local"))
    assert info.value.key == "completion.kind"


def test_the_section_name_is_used_in_keys():
    with pytest.raises(ConfigError) as info:
        create_completion_stream(ModelConfig(kind="openai/completion", model="m"), section="model.completion")
    assert info.value.key == "model.completion.api_endpoint"


@pytest.mark.parametrize("kind", [k for k, s in KINDS.items() if s.default_endpoint is None])
def test_missing_endpoint(kind):
    factory = {"completion": create_completion_stream, "chat": create_chat_stream,
               "embedding": create_embedding}[KINDS[kind].role]
    with pytest.raises(ConfigError) as info:
        factory(ModelConfig(kind=kind, model="m", api_key="k"))
    assert info.value.key == f"{KINDS[kind].role}.api_endpoint" and kind in str(info.value)


def test_bad_endpoint_url():
    with pytest.raises(ConfigError, match="http:// or https://") as info:
        create_completion_stream(ModelConfig(kind="openai/completion", api_endpoint="localhost:8080", model="m"))
    assert info.value.key == "completion.api_endpoint"


@pytest.mark.parametrize("kind", [k for k, s in KINDS.items() if s.requires_model and not s.default_model])
def test_missing_model(kind):
    factory = {"completion": create_completion_stream, "chat": create_chat_stream,
               "embedding": create_embedding}[KINDS[kind].role]
    with pytest.raises(ConfigError) as info:
        factory(ModelConfig(kind=kind, api_endpoint="http://127.0.0.1:1", api_key="k"))
    assert info.value.key == f"{KINDS[kind].role}.model"


@pytest.mark.parametrize("kind", [k for k, s in KINDS.items() if s.requires_api_key])
def test_missing_api_key(kind, monkeypatch):
    monkeypatch.delenv("INFILL_TEST_MISSING_KEY", raising=False)
    factory = {"completion": create_completion_stream, "chat": create_chat_stream,
               "embedding": create_embedding}[KINDS[kind].role]
    with pytest.raises(ConfigError) as info:
        factory(ModelConfig(kind=kind, api_endpoint="https://example.invalid", model="m",
                            api_key_env="INFILL_TEST_MISSING_KEY"))
    assert info.value.key == f"{KINDS[kind].role}.api_key"
    assert "INFILL_TEST_MISSING_KEY" in str(info.value)


async def test_vendor_defaults_fill_endpoint_and_model():
    stream = create_completion_stream(ModelConfig(kind="mistral/completion", api_key="k"))
    try:
        assert stream.inner.endpoint == "https://api.mistral.ai" and stream.inner.model == "codestral-latest"
    finally:
        await stream.close()


async def test_the_api_key_never_shows_in_reprs_or_errors(monkeypatch):
    monkeypatch.setenv("INFILL_TEST_KEY", "sk-very-secret")
    cfg = from_dict(EngineConfig, {"completion": {"kind": "mistral/completion", "apiKeyEnv": "INFILL_TEST_KEY",
                                                  "apiEndpoint": "notaurl"}}).completion
    assert "sk-very-secret" not in repr(cfg)
    with pytest.raises(ConfigError) as info:
        create_completion_stream(cfg)
    assert "sk-very-secret" not in str(info.value)
    ok = create_completion_stream(ModelConfig(kind="mistral/completion", api_key="sk-very-secret"))
    try:
        assert "sk-very-secret" not in repr(ok.inner)
    finally:
        await ok.close()


async def test_backends_of_one_endpoint_share_one_client():
    from engine.backends import http

    before = http.pooled_client_count()
    a = create_completion_stream(_valid_config("openai/completion"))
    b = create_chat_stream(_valid_config("openai/chat"))
    c = create_embedding(_valid_config("openai/embedding"))
    try:
        assert a.inner._client is b.inner._client is c.inner._client
        assert http.pooled_client_count() == before + 1
    finally:
        await a.close()
        assert not b.inner._client.is_closed
        await b.close()
        client = c.inner._client
        await c.close()
    assert client.is_closed and http.pooled_client_count() == before


def test_the_engine_can_call_the_factory_with_one_argument():
    """engine/api.py calls create_completion_stream(cfg)."""
    import inspect

    params = list(inspect.signature(backends.create_completion_stream).parameters.values())
    assert params[0].name == "cfg" and all(p.default is not inspect.Parameter.empty for p in params[1:])


def test_a_bad_ca_bundle_is_named_under_its_section(tmp_path):
    from engine.config import HttpSettings

    with pytest.raises(ConfigError) as info:
        create_embedding(ModelConfig(kind="openai/embedding", api_endpoint="https://h.example/v1", model="m",
                                     http=HttpSettings(ca_bundle=str(tmp_path / "corp.pem"))))
    assert info.value.key == "embedding.http.ca_bundle" and "corp.pem" in str(info.value)
