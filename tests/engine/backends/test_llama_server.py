"""The llama.cpp/*, openai/* and vllm/* kinds against the real llama-server serving the tiny test model.

The tiny model yields exactly `n_predict` tokens for every request and is deterministic at temperature 0, so the
same prompt through two routes of the same server must give the same text."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

import pytest

from engine.backends import create_chat_stream, create_completion_stream, create_embedding
from engine.config import HttpSettings, LocalServerSettings, ModelConfig
from engine.types import ChatMessage, ChatRequest, CompletionOptions, GenerationStats, Prompt

pytestmark = pytest.mark.llama_server

HTTP = HttpSettings(read_timeout=30.0, max_retries=0)
PROMPT = Prompt(text="def add(a, b):\n    return", prefix="def add(a, b):\n    return", suffix="\n\nprint(add(1, 2))\n")
OPTIONS = CompletionOptions(max_decoding_tokens=8, sampling_temperature=0.0, seed=42)


def cfg(kind: str, endpoint: str, **kw) -> ModelConfig:
    return ModelConfig(kind=kind, api_endpoint=endpoint, http=HTTP, **kw)


async def complete(config: ModelConfig, stats: GenerationStats | None = None, prompt: Prompt = PROMPT) -> list[str]:
    stream = create_completion_stream(config)
    try:
        async with contextlib.aclosing(stream.generate(prompt, OPTIONS, stats)) as chunks:
            return [c async for c in chunks]
    finally:
        await stream.close()


@pytest.mark.parametrize("kind", ["llama.cpp/completion", "llama.cpp/infill"])
async def test_llama_cpp_kinds_stream_n_predict_tokens(llama_server, kind):
    stats = GenerationStats()
    pieces = await complete(cfg(kind, llama_server), stats)
    assert len(pieces) == OPTIONS.max_decoding_tokens  # one event per token
    assert stats.generated_tokens == OPTIONS.max_decoding_tokens
    assert stats.hit_token_limit
    assert await complete(cfg(kind, llama_server)) == pieces  # deterministic at temperature 0


@pytest.mark.parametrize("kind", ["openai/legacy_completion_no_fim", "vllm/completion"])
async def test_openai_prompt_only_kinds_match_llama_cpp_completion(llama_server, kind):
    """Same templated prompt, same server, greedy sampling: /v1/completions must give /completion's text."""
    reference = "".join(await complete(cfg("llama.cpp/completion", llama_server)))
    stats = GenerationStats()
    text = "".join(await complete(cfg(kind, llama_server + "/v1", model="tiny"), stats))
    assert text == reference and text
    assert stats.hit_token_limit
    assert stats.generated_tokens == OPTIONS.max_decoding_tokens


async def test_openai_completion_with_suffix(llama_server):
    stats = GenerationStats()
    pieces = await complete(cfg("openai/completion", llama_server + "/v1", model="tiny"), stats)
    assert "".join(pieces)
    assert stats.hit_token_limit and stats.generated_tokens == OPTIONS.max_decoding_tokens
    assert stats.prompt_tokens and stats.prompt_tokens > 0


@pytest.mark.parametrize("kind", ["openai/chat", "llama.cpp/chat"])
async def test_chat_kinds(llama_server, kind):
    endpoint = llama_server + "/v1" if kind.startswith("openai") else llama_server
    stream = create_chat_stream(cfg(kind, endpoint, model="tiny"))
    request = ChatRequest(messages=(ChatMessage("user", "Say hi"),), max_tokens=6, temperature=0.0, seed=1,
                          presence_penalty=0.0)
    try:
        async with contextlib.aclosing(stream.chat(request)) as chunks:
            got = [c async for c in chunks]
    finally:
        await stream.close()
    assert "".join(c.content for c in got)
    assert got[-1].finish_reason == "length"


async def test_early_close_leaves_the_server_serving(llama_server):
    stream = create_completion_stream(cfg("openai/completion", llama_server + "/v1", model="tiny"))
    try:
        long = CompletionOptions(max_decoding_tokens=200, sampling_temperature=0.0, seed=1)
        async with contextlib.aclosing(stream.generate(PROMPT, long)) as chunks:
            async for _ in chunks:
                break
        assert len("".join([c async for c in stream.generate(PROMPT, OPTIONS)])) > 0
    finally:
        await stream.close()


# --- embeddings need their own server (--embedding restricts llama-server to embeddings) ----------------------------

@pytest.fixture(scope="module")
def embedding_server(llama_server_binary: str, tiny_model: Path) -> Iterator[str]:
    from engine.local.supervisor import LlamaServerSupervisor

    settings = LocalServerSettings(parallel=1, ctx_size=512, embedding=True, start_timeout=60.0)
    supervisor = LlamaServerSupervisor(llama_server_binary, tiny_model, settings)
    try:
        yield supervisor.start_blocking()
    finally:
        supervisor.stop_blocking()


@pytest.mark.parametrize("kind,suffix", [("llama.cpp/embedding", ""), ("openai/embedding", "/v1")])
async def test_embedding_kinds(embedding_server, kind, suffix):
    backend = create_embedding(cfg(kind, embedding_server + suffix, model="tiny"))
    try:
        first = await backend.embed("def add(a, b): return a + b")
        again = await backend.embed("def add(a, b): return a + b")
        other = await backend.embed("class Stack: pass  # something else entirely")
    finally:
        await backend.close()
    assert len(first) == 64  # the tiny model's hidden size
    assert first == again and first != other


async def test_both_embedding_routes_agree(embedding_server):
    text = "import os\nprint(os.getcwd())"
    vectors = []
    for kind, suffix in (("llama.cpp/embedding", ""), ("openai/embedding", "/v1")):
        backend = create_embedding(cfg(kind, embedding_server + suffix, model="tiny"))
        try:
            vectors.append(await backend.embed(text))
        finally:
            await backend.close()
    assert vectors[0] == pytest.approx(vectors[1], abs=1e-5)
