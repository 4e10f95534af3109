"""Faults for every kind, against loopback servers speaking each vendor's format (see vendor_formats.py for the
documentation each format follows): HTTP 500, 429 with Retry-After, a malformed chunk, a stall past the read timeout,
a connection reset before and after the first token, and an early close by the consumer."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Callable

import pytest

from engine.backends import CHAT_KINDS, COMPLETION_KINDS, EMBEDDING_KINDS, create_chat_stream, \
    create_completion_stream, create_embedding
from engine.config import HttpSettings, ModelConfig
from engine.errors import BackendError
from engine.types import ChatMessage, ChatRequest, CompletionOptions, GenerationStats, Prompt

from . import vendor_formats as vf

SETTINGS = HttpSettings(connect_timeout=2.0, read_timeout=2.0, max_retries=2)
STALL_SETTINGS = HttpSettings(connect_timeout=2.0, read_timeout=0.4, max_retries=2)
VECTOR = [0.25, -0.5, 1.0]


@dataclass(frozen=True)
class Case:
    kind: str
    path: str
    #: endpoint relative to the fake server's base URL
    endpoint_suffix: str = ""
    fmt: vf.StreamFormat | None = None
    embedding_body: Callable[[list[float]], object] | None = None
    extra: dict = field(default_factory=dict)

    def config(self, base: str, http: HttpSettings = SETTINGS) -> ModelConfig:
        return ModelConfig(kind=self.kind, api_endpoint=base + self.endpoint_suffix, http=http,
                           **{"model": "m", "api_key": "sk-test", **self.extra})


AZURE_CHAT = "/openai/deployments/m/chat/completions"
AZURE_EMBED = "/openai/deployments/m/embeddings"

STREAM_CASES = [
    Case("llama.cpp/completion", "/completion", fmt=vf.LLAMA),
    Case("llama.cpp/infill", "/infill", fmt=vf.LLAMA),
    Case("openai/completion", "/v1/completions", "/v1", vf.OPENAI_TEXT),
    Case("openai/legacy_completion_no_fim", "/v1/completions", "/v1", vf.OPENAI_TEXT),
    Case("vllm/completion", "/v1/completions", "/v1", vf.OPENAI_TEXT),
    Case("deepseek/completion", "/beta/completions", "/beta", vf.OPENAI_TEXT),
    Case("mistral/completion", "/v1/fim/completions", "", vf.CHAT),
    Case("ollama/completion", "/api/generate", "", vf.OLLAMA_GEN),
    Case("llama.cpp/chat", "/v1/chat/completions", "", vf.CHAT),
    Case("openai/chat", "/v1/chat/completions", "/v1", vf.CHAT),
    Case("azure/chat", AZURE_CHAT, "", vf.CHAT),
    Case("mistral/chat", "/v1/chat/completions", "", vf.CHAT),
    Case("ollama/chat", "/api/chat", "", vf.OLLAMA_CHAT),
]
EMBED_CASES = [
    Case("llama.cpp/embedding", "/embedding", embedding_body=lambda v: [{"index": 0, "embedding": v}]),
    Case("openai/embedding", "/v1/embeddings", "/v1", embedding_body=vf.openai_embedding_body),
    Case("azure/embedding", AZURE_EMBED, "", embedding_body=vf.openai_embedding_body),
    Case("mistral/embedding", "/v1/embeddings", "", embedding_body=vf.openai_embedding_body),
    Case("ollama/embedding", "/api/embed", "", embedding_body=vf.ollama_embedding_body),
    Case("voyage/embedding", "/v1/embeddings", "/v1", embedding_body=vf.openai_embedding_body),
]


def test_every_kind_has_a_fault_case():
    assert {c.kind for c in STREAM_CASES} == set(COMPLETION_KINDS) | set(CHAT_KINDS)
    assert {c.kind for c in EMBED_CASES} == set(EMBEDDING_KINDS)


# --- helpers ---------------------------------------------------------------------------------------------------------

PROMPT = Prompt(text="<PRE>def f(<SUF>)<MID>", prefix="def f(", suffix=")")
OPTIONS = CompletionOptions(max_decoding_tokens=8, sampling_temperature=0.0, seed=1)
CHAT_REQUEST = ChatRequest(messages=(ChatMessage("user", "hi"),), max_tokens=8)
# Long enough that llama.cpp/embedding does not pad it (which would call /tokenize first).
EMBED_TEXT = "def add(a, b):\n    return a + b  # a long enough input"


def open_stream(case: Case, base: str, http: HttpSettings = SETTINGS):
    cfg = case.config(base, http)
    return create_completion_stream(cfg) if case.kind in COMPLETION_KINDS else create_chat_stream(cfg)


def pieces(case: Case, backend, stats: GenerationStats | None = None):
    if case.kind in COMPLETION_KINDS:
        return backend.generate(PROMPT, OPTIONS, stats)
    return _chat_texts(backend)


async def _chat_texts(backend):
    agen = backend.chat(CHAT_REQUEST)
    try:
        async for chunk in agen:
            if chunk.content:
                yield chunk.content
    finally:
        await agen.aclose()


async def collect(case: Case, base: str, stats: GenerationStats | None = None,
                  http: HttpSettings = SETTINGS) -> tuple[list[str], Exception | None]:
    backend = open_stream(case, base, http)
    got: list[str] = []
    error = None
    try:
        async with contextlib.aclosing(pieces(case, backend, stats)) as stream:
            async for piece in stream:
                got.append(piece)
    except BackendError as exc:
        error = exc
    finally:
        await backend.close()
    return got, error


async def ok_stream(case: Case, responder) -> None:
    await responder.start(content_type=case.fmt.content_type)
    for token in ("Hel", "lo"):
        await responder.send(case.fmt.token(token))
    await responder.send(case.fmt.end())
    await responder.end()


def scripted(*steps):
    """A handler that runs steps[i] for the i-th request (the last step repeats)."""
    calls = {"n": 0}

    async def handler(request, responder):
        step = steps[min(calls["n"], len(steps) - 1)]
        calls["n"] += 1
        await step(request, responder)

    return handler


stream_cases = pytest.mark.parametrize("case", STREAM_CASES, ids=lambda c: c.kind)
embed_cases = pytest.mark.parametrize("case", EMBED_CASES, ids=lambda c: c.kind)


# --- streaming kinds -------------------------------------------------------------------------------------------------

@stream_cases
async def test_stream_ok(case, serve, sleeps):
    server, base = await serve(scripted(lambda rq, rs: ok_stream(case, rs)))
    stats = GenerationStats()
    got, error = await collect(case, base, stats)
    assert error is None
    assert "".join(got) == "Hello"
    assert [r.path for r in server.requests] == [case.path]
    if case.kind in COMPLETION_KINDS:
        assert stats.hit_token_limit, "the vendor reported the token limit"


@stream_cases
async def test_a_finished_stream_gives_its_connection_back_for_the_next_request(case, serve, sleeps):
    server, base = await serve(scripted(lambda rq, rs: ok_stream(case, rs)))
    backend = open_stream(case, base)
    try:
        for _ in range(3):
            async with contextlib.aclosing(pieces(case, backend)) as stream:
                assert "".join([p async for p in stream]) == "Hello"
    finally:
        await backend.close()
    assert len(server.requests) == 3
    assert server.connections == 1


@stream_cases
async def test_500_is_retried_before_the_first_token(case, serve, sleeps):
    async def fail(rq, rs):
        await rs.full(500, {"error": "boom"})

    server, base = await serve(scripted(fail, lambda rq, rs: ok_stream(case, rs)))
    got, error = await collect(case, base)
    assert error is None and "".join(got) == "Hello"
    assert len(server.requests) == 2
    assert sleeps == [0.25]


@stream_cases
async def test_500_every_time_gives_up_after_max_retries(case, serve, sleeps):
    async def fail(rq, rs):
        await rs.full(503, "overloaded: try later", content_type="text/plain")

    server, base = await serve(scripted(fail))
    got, error = await collect(case, base)
    assert got == []
    assert isinstance(error, BackendError) and error.status == 503
    assert "overloaded" in str(error)
    assert len(server.requests) == SETTINGS.max_retries + 1
    assert sleeps == [0.25, 0.5]


@stream_cases
async def test_429_waits_retry_after(case, serve, sleeps):
    async def limited(rq, rs):
        await rs.full(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "3"})

    server, base = await serve(scripted(limited, lambda rq, rs: ok_stream(case, rs)))
    got, error = await collect(case, base)
    assert error is None and "".join(got) == "Hello"
    assert sleeps == [3.0]
    assert len(server.requests) == 2


@stream_cases
async def test_malformed_chunk_ends_the_request_with_the_chunk(case, serve, sleeps):
    async def bad(rq, rs):
        await rs.start(content_type=case.fmt.content_type)
        await rs.send(case.fmt.token("Hel"))
        await rs.send(case.fmt.malformed)
        await rs.end()

    server, base = await serve(scripted(bad))
    got, error = await collect(case, base)
    assert got == ["Hel"]
    assert isinstance(error, BackendError)
    assert error.vendor in case.kind
    assert case.fmt.malformed.removeprefix("data: ").strip()[:10] in error.body
    assert len(server.requests) == 1


@stream_cases
async def test_stall_past_the_read_timeout(case, serve, sleeps):
    async def stall(rq, rs):
        await rs.start(content_type=case.fmt.content_type)
        await rs.send(case.fmt.token("Hel"))
        await asyncio.sleep(30)

    server, base = await serve(scripted(stall))
    got, error = await collect(case, base, http=STALL_SETTINGS)
    assert got == ["Hel"]
    assert isinstance(error, BackendError) and "read_timeout" in str(error)
    assert "0.4 s" in str(error)
    assert len(server.requests) == 1


@stream_cases
async def test_reset_mid_stream_is_reported_not_retried(case, serve, sleeps):
    async def reset(rq, rs):
        await rs.start(content_type=case.fmt.content_type)
        await rs.send(case.fmt.token("Hel"))
        await asyncio.sleep(0.05)
        rs.reset()

    server, base = await serve(scripted(reset))
    got, error = await collect(case, base)
    assert got == ["Hel"]
    assert isinstance(error, BackendError)
    assert len(server.requests) == 1
    assert sleeps == []


@stream_cases
async def test_reset_before_the_first_token_is_retried(case, serve, sleeps):
    async def reset(rq, rs):
        rs.reset()

    server, base = await serve(scripted(reset, lambda rq, rs: ok_stream(case, rs)))
    got, error = await collect(case, base)
    assert error is None and "".join(got) == "Hello"
    assert len(server.requests) == 2


@stream_cases
async def test_early_close_by_the_consumer_closes_the_connection(case, serve, sleeps):
    async def endless(rq, rs):
        await rs.start(content_type=case.fmt.content_type)
        await rs.send(case.fmt.token("Hel"))
        # return without ending: the fake server then waits for the client to drop the connection

    server, base = await serve(scripted(endless))
    backend = open_stream(case, base)
    try:
        async with contextlib.aclosing(pieces(case, backend)) as stream:
            async for piece in stream:
                assert piece == "Hel"
                break
        await asyncio.wait_for(server.client_closed.wait(), 10)
    finally:
        await backend.close()
    assert server.client_closed.is_set()


# --- embedding kinds -------------------------------------------------------------------------------------------------

async def ok_embedding(case: Case, rs) -> None:
    await rs.full(200, case.embedding_body(VECTOR))


async def embed_once(case: Case, base: str, http: HttpSettings = SETTINGS):
    backend = create_embedding(case.config(base, http))
    try:
        return await backend.embed(EMBED_TEXT), None
    except BackendError as exc:
        return None, exc
    finally:
        await backend.close()


@embed_cases
async def test_embedding_ok(case, serve, sleeps):
    server, base = await serve(scripted(lambda rq, rs: ok_embedding(case, rs)))
    vector, error = await embed_once(case, base)
    assert error is None and vector == VECTOR
    assert [r.path for r in server.requests] == [case.path]


@embed_cases
async def test_embeddings_reuse_the_connection(case, serve, sleeps):
    server, base = await serve(scripted(lambda rq, rs: ok_embedding(case, rs)))
    backend = create_embedding(case.config(base))
    try:
        for _ in range(3):
            assert await backend.embed(EMBED_TEXT) == VECTOR
    finally:
        await backend.close()
    assert len(server.requests) == 3 and server.connections == 1


@embed_cases
async def test_embedding_500_then_ok(case, serve, sleeps):
    async def fail(rq, rs):
        await rs.full(500, {"error": "boom"})

    server, base = await serve(scripted(fail, lambda rq, rs: ok_embedding(case, rs)))
    vector, error = await embed_once(case, base)
    assert error is None and vector == VECTOR
    assert len(server.requests) == 2 and sleeps == [0.25]


@embed_cases
async def test_embedding_429_waits_retry_after(case, serve, sleeps):
    async def limited(rq, rs):
        await rs.full(429, {"error": "slow down"}, headers={"Retry-After": "1.5"})

    server, base = await serve(scripted(limited, lambda rq, rs: ok_embedding(case, rs)))
    vector, error = await embed_once(case, base)
    assert error is None and vector == VECTOR
    assert sleeps == [1.5]


@embed_cases
async def test_embedding_malformed_body(case, serve, sleeps):
    async def bad(rq, rs):
        await rs.full(200, '{"data": [{"embedding": [0.1, ', content_type="application/json")

    server, base = await serve(scripted(bad))
    vector, error = await embed_once(case, base)
    assert vector is None and isinstance(error, BackendError)
    assert '{"data": [{"embedding"' in error.body
    assert len(server.requests) == 1


@embed_cases
async def test_embedding_stall(case, serve, sleeps):
    async def stall(rq, rs):
        await asyncio.sleep(30)

    server, base = await serve(scripted(stall))
    vector, error = await embed_once(case, base, STALL_SETTINGS)
    assert vector is None and isinstance(error, BackendError) and "read_timeout" in str(error)


@embed_cases
async def test_embedding_reset_is_retried_then_reported(case, serve, sleeps):
    async def reset(rq, rs):
        rs.reset()

    server, base = await serve(scripted(reset, reset, lambda rq, rs: ok_embedding(case, rs)))
    vector, error = await embed_once(case, base)
    assert error is None and vector == VECTOR
    assert len(server.requests) == 3

    server, base = await serve(scripted(reset))
    vector, error = await embed_once(case, base)
    assert vector is None and isinstance(error, BackendError)
    assert len(server.requests) == SETTINGS.max_retries + 1


@embed_cases
async def test_embedding_cancelled_closes_the_connection(case, serve, sleeps):
    async def stall(rq, rs):
        await rs.wait_client_close()

    server, base = await serve(scripted(stall))
    backend = create_embedding(case.config(base))
    try:
        task = asyncio.create_task(backend.embed(EMBED_TEXT))
        while not server.requests:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.client_closed.wait(), 10)
    finally:
        await backend.close()
