"""The exact requests we send to each vendor, checked by loopback servers that answer in the vendor's documented format.

Documentation followed:
- Mistral FIM: https://docs.mistral.ai/api/#tag/fim (POST /v1/fim/completions: model, prompt, suffix, max_tokens,
  temperature, random_seed, stop, stream); chat: https://docs.mistral.ai/api/#tag/chat ; embeddings:
  https://docs.mistral.ai/api/#tag/embeddings (input is a list, model mistral-embed). Auth: `Authorization: Bearer`.
- Ollama: https://github.com/ollama/ollama/blob/main/docs/api.md (/api/generate with prompt, suffix, raw, options
  {num_predict, temperature, seed, stop}; /api/chat; /api/embed {model, input} -> {embeddings: [[...]]}).
- Azure OpenAI: https://learn.microsoft.com/azure/ai-services/openai/reference
  (POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=..., `api-key` header).
- Voyage: https://docs.voyageai.com/reference/embeddings-api (POST /v1/embeddings {input: [...], model, input_type},
  Bearer key).
- OpenAI completions: https://platform.openai.com/docs/api-reference/completions (prompt, suffix, stream_options);
  DeepSeek FIM: https://api-docs.deepseek.com/guides/fim_completion (base URL https://api.deepseek.com/beta)."""

from __future__ import annotations

import contextlib

import pytest

from engine.backends import create_chat_stream, create_completion_stream, create_embedding
from engine.config import HttpSettings, ModelConfig
from engine.errors import BackendError
from engine.types import ChatMessage, ChatRequest, CompletionOptions, GenerationStats, Prompt

from . import vendor_formats as vf

PROMPT = Prompt(text="<fim_prefix>def add(a, b):<fim_suffix>\n<fim_middle>", prefix="def add(a, b):", suffix="\n")
OPTIONS = CompletionOptions(max_decoding_tokens=16, sampling_temperature=0.2, seed=7, stop_words=("\n\n", "\ndef"))
CHAT = ChatRequest(messages=(ChatMessage("system", "be brief"), ChatMessage("user", "hi")), max_tokens=32,
                   temperature=0.5, presence_penalty=0.1, frequency_penalty=0.2, seed=3, user="u1")


def stream_handler(fmt: vf.StreamFormat, tokens=("a", "b")):
    async def handler(request, rs):
        await rs.start(content_type=fmt.content_type)
        for t in tokens:
            await rs.send(fmt.token(t))
        await rs.send(fmt.end())
        await rs.end()
    return handler


def json_handler(body):
    async def handler(request, rs):
        await rs.full(200, body)
    return handler


async def complete(cfg: ModelConfig, prompt: Prompt = PROMPT, stats: GenerationStats | None = None) -> str:
    stream = create_completion_stream(cfg)
    try:
        async with contextlib.aclosing(stream.generate(prompt, OPTIONS, stats)) as chunks:
            return "".join([c async for c in chunks])
    finally:
        await stream.close()


async def chat(cfg: ModelConfig, request: ChatRequest = CHAT) -> str:
    stream = create_chat_stream(cfg)
    try:
        async with contextlib.aclosing(stream.chat(request)) as chunks:
            return "".join([c.content async for c in chunks])
    finally:
        await stream.close()


async def embed(cfg: ModelConfig) -> list[float]:
    backend = create_embedding(cfg)
    try:
        return await backend.embed("some code")
    finally:
        await backend.close()


# --- Mistral ---------------------------------------------------------------------------------------------------------

async def test_mistral_fim_request(serve):
    server, base = await serve(stream_handler(vf.CHAT))
    stats = GenerationStats()
    text = await complete(ModelConfig(kind="mistral/completion", api_endpoint=base, api_key="sk-mistral"),
                          stats=stats)
    assert text == "ab"
    (req,) = server.requests
    assert (req.method, req.path) == ("POST", "/v1/fim/completions")
    assert req.headers["authorization"] == "Bearer sk-mistral"
    assert req.json() == {"model": "codestral-latest", "prompt": "def add(a, b):", "suffix": "\n", "max_tokens": 16,
                          "temperature": 0.2, "random_seed": 7, "stream": True, "stop": ["\n\n", "\ndef"]}
    assert stats.hit_token_limit


async def test_mistral_chat_request_is_normalised(serve):
    server, base = await serve(stream_handler(vf.CHAT))
    text = await chat(ModelConfig(kind="mistral/chat", api_endpoint=base, api_key="k",
                                  supported_models=("codestral-latest", "mistral-small-latest")),
                      ChatRequest(messages=CHAT.messages, model="gpt-4o", max_tokens=32, temperature=0.5,
                                  presence_penalty=0.1, frequency_penalty=0.2, seed=3, user="u1"))
    assert text == "ab"
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    # unsupported model -> default; presence_penalty and user dropped; seed renamed
    assert req.json() == {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
                          "model": "codestral-latest", "max_tokens": 32, "temperature": 0.5,
                          "frequency_penalty": 0.2, "random_seed": 3, "stream": True}


async def test_mistral_embedding_request(serve):
    server, base = await serve(json_handler(vf.openai_embedding_body([1.0, 2.0])))
    assert await embed(ModelConfig(kind="mistral/embedding", api_endpoint=base, api_key="k")) == [1.0, 2.0]
    (req,) = server.requests
    assert req.path == "/v1/embeddings"
    assert req.json() == {"input": ["some code"], "model": "mistral-embed"}


# --- Ollama ----------------------------------------------------------------------------------------------------------

async def test_ollama_fim_uses_suffix_and_the_model_template(serve):
    server, base = await serve(stream_handler(vf.OLLAMA_GEN))
    stats = GenerationStats()
    assert await complete(ModelConfig(kind="ollama/completion", api_endpoint=base, model="qwen2.5-coder:1.5b"),
                          stats=stats) == "ab"
    (req,) = server.requests
    assert req.path == "/api/generate"
    assert "authorization" not in req.headers
    assert req.json() == {"model": "qwen2.5-coder:1.5b", "prompt": "def add(a, b):", "suffix": "\n", "stream": True,
                          "options": {"num_predict": 16, "temperature": 0.2, "seed": 7, "stop": ["\n\n", "\ndef"]}}
    assert stats.hit_token_limit and stats.prompt_tokens == 5 and stats.generated_tokens == 2


async def test_ollama_with_a_prompt_template_sends_raw_text(serve):
    server, base = await serve(stream_handler(vf.OLLAMA_GEN))
    cfg = ModelConfig(kind="ollama/completion", api_endpoint=base, model="m",
                      prompt_template="<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>")
    assert await complete(cfg) == "ab"
    body = server.requests[0].json()
    assert body["raw"] is True and body["prompt"] == PROMPT.text and "suffix" not in body


async def test_ollama_prefix_only_sends_raw_prefix(serve):
    server, base = await serve(stream_handler(vf.OLLAMA_GEN))
    prompt = Prompt(text="def add(a, b):", prefix="def add(a, b):", suffix=None)
    assert await complete(ModelConfig(kind="ollama/completion", api_endpoint=base, model="m"), prompt) == "ab"
    body = server.requests[0].json()
    assert body["raw"] is True and body["prompt"] == "def add(a, b):" and "suffix" not in body


async def test_ollama_chat_request_puts_sampling_in_options(serve):
    server, base = await serve(stream_handler(vf.OLLAMA_CHAT))
    assert await chat(ModelConfig(kind="ollama/chat", api_endpoint=base, model="llama3.2")) == "ab"
    (req,) = server.requests
    assert req.path == "/api/chat"
    assert req.json() == {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
                          "model": "llama3.2", "stream": True,
                          "options": {"num_predict": 32, "temperature": 0.5, "seed": 3, "presence_penalty": 0.1,
                                      "frequency_penalty": 0.2}}


async def test_ollama_embedding_request(serve):
    server, base = await serve(json_handler(vf.ollama_embedding_body([0.5, 0.25])))
    assert await embed(ModelConfig(kind="ollama/embedding", api_endpoint=base, model="nomic-embed-text")) == [0.5, 0.25]
    (req,) = server.requests
    assert req.path == "/api/embed"
    assert req.json() == {"model": "nomic-embed-text", "input": "some code"}


# --- Azure -----------------------------------------------------------------------------------------------------------

async def test_azure_chat_request(serve):
    server, base = await serve(stream_handler(vf.CHAT))
    assert await chat(ModelConfig(kind="azure/chat", api_endpoint=base, model="my gpt4o", api_key="az-key")) == "ab"
    (req,) = server.requests
    assert req.path == "/openai/deployments/my%20gpt4o/chat/completions"
    assert req.query.startswith("api-version=")
    assert req.headers["api-key"] == "az-key" and "authorization" not in req.headers
    assert req.json() == {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
                          "model": "my gpt4o", "max_tokens": 32, "temperature": 0.5, "presence_penalty": 0.1,
                          "frequency_penalty": 0.2, "seed": 3, "user": "u1", "stream": True}


async def test_azure_api_version_can_be_pinned_in_the_endpoint(serve):
    server, base = await serve(json_handler(vf.openai_embedding_body([3.0])))
    cfg = ModelConfig(kind="azure/embedding", api_endpoint=base + "/?api-version=2024-06-01", model="emb",
                      api_key="az")
    assert await embed(cfg) == [3.0]
    (req,) = server.requests
    assert req.path == "/openai/deployments/emb/embeddings" and req.query == "api-version=2024-06-01"


async def test_azure_embedding_request(serve):
    server, base = await serve(json_handler(vf.openai_embedding_body([3.0])))
    assert await embed(ModelConfig(kind="azure/embedding", api_endpoint=base, model="emb", api_key="az")) == [3.0]
    (req,) = server.requests
    assert req.path == "/openai/deployments/emb/embeddings" and req.query.startswith("api-version=")
    assert req.headers["api-key"] == "az"
    assert req.json() == {"input": "some code"}


# --- Voyage ----------------------------------------------------------------------------------------------------------

async def test_voyage_embedding_request(serve, monkeypatch):
    monkeypatch.setenv("INFILL_TEST_VOYAGE_KEY", "pa-secret")
    server, base = await serve(json_handler(vf.openai_embedding_body([0.1, 0.2])))
    cfg = ModelConfig(kind="voyage/embedding", api_endpoint=base + "/v1", api_key_env="INFILL_TEST_VOYAGE_KEY")
    assert await embed(cfg) == [0.1, 0.2]
    (req,) = server.requests
    assert req.path == "/v1/embeddings"
    assert req.headers["authorization"] == "Bearer pa-secret"
    assert req.json() == {"input": ["some code"], "model": "voyage-code-3", "input_type": "document"}


# --- OpenAI-compatible -----------------------------------------------------------------------------------------------

async def test_openai_fim_request(serve):
    server, base = await serve(stream_handler(vf.OPENAI_TEXT))
    cfg = ModelConfig(kind="openai/completion", api_endpoint=base + "/v1", model="gpt-3.5-turbo-instruct",
                      api_key="sk-1", http=HttpSettings(headers={"X-Team": "infill"}))
    assert await complete(cfg) == "ab"
    (req,) = server.requests
    assert req.path == "/v1/completions"
    assert req.headers["authorization"] == "Bearer sk-1" and req.headers["x-team"] == "infill"
    assert req.json() == {"model": "gpt-3.5-turbo-instruct", "prompt": "def add(a, b):", "suffix": "\n",
                          "max_tokens": 16, "temperature": 0.2, "seed": 7, "stream": True,
                          "stop": ["\n\n", "\ndef"], "stream_options": {"include_usage": True}}


async def test_openai_legacy_and_vllm_send_the_templated_prompt(serve):
    for kind in ("openai/legacy_completion_no_fim", "vllm/completion"):
        server, base = await serve(stream_handler(vf.OPENAI_TEXT))
        assert await complete(ModelConfig(kind=kind, api_endpoint=base + "/v1", model="m")) == "ab"
        body = server.requests[0].json()
        assert body["prompt"] == PROMPT.text and "suffix" not in body, kind


async def test_deepseek_fim_request(serve):
    server, base = await serve(stream_handler(vf.OPENAI_TEXT))
    assert await complete(ModelConfig(kind="deepseek/completion", api_endpoint=base + "/beta", api_key="ds")) == "ab"
    (req,) = server.requests
    assert req.path == "/beta/completions"
    body = req.json()
    assert body["model"] == "deepseek-chat" and body["prompt"] == "def add(a, b):" and body["suffix"] == "\n"


async def test_openai_usage_chunk_fills_stats(serve):
    async def handler(request, rs):
        await rs.start()
        await rs.send(vf.openai_text("x"))
        await rs.send(vf.sse({"choices": [{"text": "", "index": 0, "finish_reason": "stop"}]}))
        await rs.send(vf.sse({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 1,
                                                       "prompt_tokens_details": {"cached_tokens": 8}}}))
        await rs.send("data: [DONE]\n\n")
        await rs.end()

    server, base = await serve(handler)
    stats = GenerationStats()
    assert await complete(ModelConfig(kind="openai/completion", api_endpoint=base + "/v1", model="m"),
                          stats=stats) == "x"
    assert (stats.prompt_tokens, stats.generated_tokens, stats.cached_prompt_tokens) == (11, 1, 8)
    assert not stats.hit_token_limit


async def test_sse_framing_comments_multiline_data_keepalives_and_done(serve):
    """SSE comments, blank keep-alive events, CRLF line ends, a JSON object split over two `data:` lines, and
    `[DONE]` followed by garbage that must not be read."""
    async def handler(request, rs):
        await rs.start()
        await rs.send(": keep-alive comment\n\n")
        await rs.send("data:\n\n")
        await rs.send('data: {"choices": [{"text": "fo",\r\ndata:  "index": 0}]}\r\n\r\n')
        await rs.send(vf.openai_text("o"))
        await rs.send("data: [DONE]\n\n")
        await rs.send("data: {this is never parsed\n\n")
        await rs.end()

    server, base = await serve(handler)
    assert await complete(ModelConfig(kind="openai/completion", api_endpoint=base + "/v1", model="m")) == "foo"


async def test_error_json_inside_a_200_stream_is_reported(serve):
    async def handler(request, rs):
        await rs.start()
        await rs.send(vf.sse({"error": {"message": "context length exceeded"}}))
        await rs.end()

    server, base = await serve(handler)
    stream = create_completion_stream(ModelConfig(kind="openai/completion", api_endpoint=base + "/v1", model="m"))
    try:
        with pytest.raises(BackendError, match="context length exceeded"):
            async with contextlib.aclosing(stream.generate(PROMPT, OPTIONS)) as chunks:
                async for _ in chunks:
                    pass
    finally:
        await stream.close()
