"""The llama-server HTTP adapter: wire shapes against a mock transport, then the real thing with the tiny model."""

from __future__ import annotations

import contextlib
import json
import os
import signal

import httpx
import pytest

from engine.backends import http as http_util
from engine.backends.llama_cpp import (LlamaCppChat, LlamaCppCompletion, LlamaCppEmbedding, LlamaCppTokenizer,
                                       completion_body, fetch_props, fill_stats, parse_embedding, supports_infill)
from engine.errors import BackendError
from engine.streams import CompletionStream, generate_sync
from engine.types import ChatMessage, ChatRequest, CompletionOptions, GenerationStats, Prompt
from tests.fixtures.llama import predicted_tokens_when_idle

PROMPT = Prompt(text="<PRE>def add(a, b):<SUF>\n<MID>", prefix="def add(a, b):", suffix="\n    return c\n",
                language="python")
OPTIONS = CompletionOptions(max_decoding_tokens=8, sampling_temperature=0.0, seed=7)


@pytest.fixture(autouse=True)
def no_backoff_sleep(monkeypatch):
    slept: list[float] = []

    async def fake_sleep(delay: float) -> None:
        slept.append(delay)

    monkeypatch.setattr(http_util, "sleep", fake_sleep)
    return slept


def sse(*events: dict | str) -> bytes:
    out = []
    for event in events:
        out.append("data: " + (event if isinstance(event, str) else json.dumps(event)) + "\n\n")
    return "".join(out).encode()


def mock_client(handler) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://127.0.0.1:1")


def sse_response(body: bytes, status: int = 200) -> httpx.Response:
    return httpx.Response(status, content=body, headers={"content-type": "text/event-stream"})


FINAL = {"content": "", "stop": True, "stop_type": "limit", "tokens_evaluated": 19, "tokens_predicted": 3,
         "timings": {"cache_n": 12, "prompt_n": 7, "predicted_n": 3, "prompt_per_second": 100.0}}


# --- request bodies -----------------------------------------------------------------------------------------------


def test_completion_body_sends_sampling_and_no_stop_words():
    options = CompletionOptions(max_decoding_tokens=5, sampling_temperature=0.3, seed=42, presence_penalty=0.5,
                                stop_words=("\n\n",))
    body = completion_body(PROMPT, options, use_infill=False)
    assert body == {"prompt": PROMPT.text, "n_predict": 5, "temperature": 0.3, "seed": 42,
                    "presence_penalty": 0.5, "cache_prompt": True, "stream": True}
    infill = completion_body(PROMPT, options, use_infill=True)
    assert infill["input_prefix"] == PROMPT.prefix and infill["input_suffix"] == PROMPT.suffix
    assert "prompt" not in infill and "stop" not in infill


def test_infill_body_in_prefix_only_mode_has_empty_suffix():
    body = completion_body(Prompt(text="x", prefix="x", suffix=None), OPTIONS, use_infill=True)
    assert body["input_suffix"] == ""


def test_fill_stats_from_final_event():
    stats = GenerationStats()
    fill_stats(stats, FINAL)
    assert stats.prompt_tokens == 19 and stats.cached_prompt_tokens == 12 and stats.generated_tokens == 3
    assert stats.hit_token_limit and stats.timings["prompt_per_second"] == 100.0
    eos = GenerationStats()
    fill_stats(eos, {**FINAL, "stop_type": "eos"})
    assert not eos.hit_token_limit


# --- streaming over a mock transport ------------------------------------------------------------------------------


async def test_completion_streams_content_and_fills_stats():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return sse_response(sse({"content": "    ", "stop": False}, {"content": "return", "stop": False},
                                {"content": " a", "stop": False}, FINAL))

    async with mock_client(handler) as client:
        stream = LlamaCppCompletion("http://127.0.0.1:1", client=client, api_key="sk-secret")
        assert isinstance(stream, CompletionStream) and stream.native_fim is False
        stats = GenerationStats()
        assert await generate_sync(stream, PROMPT, OPTIONS, stats) == "    return a"
    assert seen[0].url.path == "/completion"
    assert json.loads(seen[0].content)["prompt"] == PROMPT.text
    assert seen[0].headers["authorization"] == "Bearer sk-secret"
    assert "sk-secret" not in repr(stream)
    assert stats.generated_tokens == 3 and stats.hit_token_limit


async def test_infill_uses_the_infill_endpoint():
    paths = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        return sse_response(sse({"content": "x", "stop": False}, FINAL))

    async with mock_client(handler) as client:
        stream = LlamaCppCompletion("http://127.0.0.1:1", use_infill=True, client=client)
        assert stream.native_fim is True
        assert await generate_sync(stream, PROMPT, OPTIONS) == "x"
    assert paths == ["/infill"]


async def test_malformed_event_is_a_backend_error():
    def handler(request: httpx.Request) -> httpx.Response:
        return sse_response(sse({"content": "ok", "stop": False}, "{not json"))

    async with mock_client(handler) as client:
        stream = LlamaCppCompletion("http://127.0.0.1:1", client=client)
        with pytest.raises(BackendError) as info:
            await generate_sync(stream, PROMPT, OPTIONS)
    assert info.value.vendor == "llama.cpp" and "{not json" in info.value.body


async def test_content_that_is_not_text_is_a_backend_error():
    def handler(request: httpx.Request) -> httpx.Response:
        return sse_response(sse({"content": 42, "stop": False}))

    async with mock_client(handler) as client:
        with pytest.raises(BackendError, match="content"):
            await generate_sync(LlamaCppCompletion("http://127.0.0.1:1", client=client), PROMPT, OPTIONS)


async def test_http_error_carries_status_and_start_of_body():
    body = json.dumps({"error": {"code": 400, "message": "bad request " + "x" * 500}}).encode()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, content=body, headers={"content-type": "application/json"})

    async with mock_client(handler) as client:
        with pytest.raises(BackendError) as info:
            await generate_sync(LlamaCppCompletion("http://127.0.0.1:1", client=client), PROMPT, OPTIONS)
    assert info.value.status == 400 and info.value.vendor == "llama.cpp"
    assert info.value.body.startswith('{"error"') and len(info.value.body) == 200


async def test_infill_on_a_model_without_fim_tokens_says_so():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(501, json={"error": {"code": 501, "message": "Infill is not supported by this model"}})

    async with mock_client(handler) as client:
        with pytest.raises(BackendError, match="/infill is not supported") as info:
            await generate_sync(LlamaCppCompletion("http://127.0.0.1:1", use_infill=True, client=client),
                                PROMPT, OPTIONS)
    assert info.value.status == 501


async def test_stream_cut_off_before_the_final_event_is_an_error():
    def handler(request: httpx.Request) -> httpx.Response:
        return sse_response(sse({"content": "half", "stop": False}))

    async with mock_client(handler) as client:
        stream = LlamaCppCompletion("http://127.0.0.1:1", client=client)
        with pytest.raises(BackendError, match="ended before"):
            await generate_sync(stream, PROMPT, OPTIONS)


async def test_server_error_before_the_first_token_is_retried(no_backoff_sleep):
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            return httpx.Response(503, json={"error": {"message": "Loading model"}})
        return sse_response(sse({"content": "ok", "stop": False}, FINAL))

    async with mock_client(handler) as client:
        assert await generate_sync(LlamaCppCompletion("http://127.0.0.1:1", client=client), PROMPT, OPTIONS) == "ok"
    assert len(calls) == 2 and len(no_backoff_sleep) == 1


async def test_chat_streams_deltas_and_finish_reason():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return sse_response(sse(
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]},
            {"choices": [{"index": 0, "delta": {"content": "Hel"}}]},
            {"choices": [{"index": 0, "delta": {"content": "lo"}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, "[DONE]"))

    async with mock_client(handler) as client:
        chat = LlamaCppChat("http://127.0.0.1:1", model="m", client=client)
        request = ChatRequest(messages=(ChatMessage("user", "hi"),), max_tokens=4)
        chunks = [chunk async for chunk in chat.chat(request)]
    assert "".join(c.content for c in chunks) == "Hello" and chunks[-1].finish_reason == "stop"
    assert seen[0]["stream"] is True and seen[0]["model"] == "m" and seen[0]["max_tokens"] == 4


# --- embeddings ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reply", [
    {"embedding": [1.0, 2.0]},                                    # older /embedding
    [{"index": 0, "embedding": [1.0, 2.0]}],                      # newer /embedding, pooled
    [{"index": 0, "embedding": [[0.0, 1.0], [2.0, 3.0]]}],        # newer /embedding, per token → mean
    {"data": [{"embedding": [1.0, 2.0], "index": 0}]},            # /v1/embeddings
])
def test_parse_embedding_shapes(reply):
    assert parse_embedding(reply, "/embedding") == [1.0, 2.0]


def test_parse_embedding_rejects_a_reply_without_a_vector():
    with pytest.raises(BackendError, match="no embedding vector"):
        parse_embedding({"data": []}, "/v1/embeddings")


async def test_embedding_pads_short_input_and_retries_a_reset(no_backoff_sleep):
    seen: list[tuple[str, dict]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append((request.url.path, body))
        if request.url.path == "/tokenize":
            return httpx.Response(200, json={"tokens": [1] * 2})
        if sum(1 for path, _ in seen if path == "/embedding") == 1:
            raise httpx.ReadError("Connection reset by peer")
        return httpx.Response(200, json=[{"index": 0, "embedding": [0.5, 0.25]}])

    async with mock_client(handler) as client:
        embedding = LlamaCppEmbedding("http://127.0.0.1:1", client=client)
        assert await embedding.embed("hi") == [0.5, 0.25]
    embedding_bodies = [body for path, body in seen if path == "/embedding"]
    assert len(embedding_bodies) == 2 and no_backoff_sleep  # one reset, one retry after a backoff
    assert embedding_bodies[-1]["content"] == "hi . ."  # 2 tokens + 2 pads


async def test_embedding_falls_back_to_v1_when_embedding_is_missing():
    paths = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        if request.url.path == "/embedding":
            return httpx.Response(404, text="Not Found")
        return httpx.Response(200, json={"data": [{"embedding": [3.0]}]})

    async with mock_client(handler) as client:
        embedding = LlamaCppEmbedding("http://127.0.0.1:1", client=client)
        text = "a long enough text that needs no padding at all"
        assert await embedding.embed(text) == [3.0]
        assert await embedding.embed(text) == [3.0]
    assert paths == ["/embedding", "/v1/embeddings", "/v1/embeddings"]


# --- the real llama-server ----------------------------------------------------------------------------------------

@pytest.mark.llama_server
async def test_real_completion_is_deterministic_and_reports_timings(llama_server):
    stream = LlamaCppCompletion(llama_server)
    try:
        first_stats, second_stats = GenerationStats(), GenerationStats()
        first = await generate_sync(stream, PROMPT, OPTIONS, first_stats)
        second = await generate_sync(stream, PROMPT, OPTIONS, second_stats)
    finally:
        await stream.close()
    assert first and first == second
    assert first_stats.generated_tokens == OPTIONS.max_decoding_tokens and first_stats.hit_token_limit
    assert first_stats.prompt_tokens and first_stats.prompt_tokens > 0
    assert "predicted_per_second" in first_stats.timings
    # the second request shares the whole prompt with the first: cache_prompt reuses it
    assert second_stats.cached_prompt_tokens and second_stats.cached_prompt_tokens > 0


@pytest.mark.llama_server
async def test_real_infill(llama_server):
    assert await supports_infill(llama_server)
    stream = LlamaCppCompletion(llama_server, use_infill=True)
    try:
        stats = GenerationStats()
        text = await generate_sync(stream, PROMPT, OPTIONS, stats)
    finally:
        await stream.close()
    assert text and stats.generated_tokens == OPTIONS.max_decoding_tokens
    # the server added the FIM tokens around prefix and suffix: more tokens than the prefix alone
    tokenizer = LlamaCppTokenizer(llama_server)
    try:
        assert stats.prompt_tokens > await tokenizer.count_tokens(PROMPT.prefix)
    finally:
        await tokenizer.close()


@pytest.mark.llama_server
async def test_real_tokenizer_and_props(llama_server):
    tokenizer = LlamaCppTokenizer(llama_server)
    try:
        ids = await tokenizer.tokenize("def add(a, b):")
        assert await tokenizer.count_tokens("def add(a, b):") == len(ids) > 1
        assert await tokenizer.count_tokens("") == 0
    finally:
        await tokenizer.close()
    props = await fetch_props(llama_server)
    assert props["total_slots"] == 2


@pytest.mark.llama_server
async def test_real_chat(llama_server):
    chat = LlamaCppChat(llama_server)
    try:
        request = ChatRequest(messages=(ChatMessage("user", "hello"),), max_tokens=3, temperature=0.0)
        chunks = [chunk async for chunk in chat.chat(request)]
    finally:
        await chat.close()
    assert "".join(c.content for c in chunks)
    assert chunks[-1].finish_reason == "length"


@pytest.mark.llama_server
async def test_real_embedding_without_embedding_mode_is_a_clear_error(llama_server):
    embedding = LlamaCppEmbedding(llama_server)
    try:
        with pytest.raises(BackendError, match="not supported") as info:
            await embedding.embed("some text that is long enough to skip padding")
    finally:
        await embedding.close()
    assert info.value.status == 501 and "--embeddings" in info.value.body


@pytest.mark.llama_server
async def test_closing_a_stream_early_stops_generation(llama_server, llama_server_supervisor):
    """After aclose() llama-server stops the task: it goes idle having generated fewer tokens than the same request
    read to its end (counted exactly on /metrics). llama-server is held still (SIGSTOP) from the third chunk until the
    stream is closed: the tiny model writes some thousand tokens a second, and on a busy machine the close itself
    took long enough for it to write 1,111 of 1,800 before it could notice (CI beside a busy loop); what is tested is
    that it notices, not how fast this process closes."""
    n_predict = 1800
    stream = LlamaCppCompletion(llama_server)
    options = CompletionOptions(max_decoding_tokens=n_predict, sampling_temperature=0.0, seed=1)
    prompt = Prompt(text="cancel me please", prefix="cancel me please")
    before = await predicted_tokens_when_idle(llama_server)
    try:
        stopped = False
        try:
            async with contextlib.aclosing(stream.generate(prompt, options)) as chunks:
                received = 0
                async for _ in chunks:
                    received += 1
                    if received == 3:
                        os.kill(llama_server_supervisor.pid, signal.SIGSTOP)
                        stopped = True
                        break
        finally:
            if stopped:
                os.kill(llama_server_supervisor.pid, signal.SIGCONT)
        generated = await predicted_tokens_when_idle(llama_server) - before
        # the same request read to its end, for comparison
        async for _ in stream.generate(prompt, options):
            pass
        full = await predicted_tokens_when_idle(llama_server) - before - generated
    finally:
        await stream.close()
    # Left alone the generation goes on to n_predict (or, on some CPUs, perhaps to an end-of-text token well past
    # half of it); closed after 3 chunks it stops before that.
    assert full >= n_predict // 2, full
    assert 3 <= generated < full, (generated, full)


@pytest.mark.llama_server
async def test_token_counts_known_when_the_consumer_stops_early(llama_server):
    """A consumer that stops at a stop word never sees the last event; the counts so far must still be there."""
    stream = LlamaCppCompletion(llama_server, use_infill=True)
    stats = GenerationStats()
    received = 0
    try:
        async with contextlib.aclosing(stream.generate(PROMPT, OPTIONS, stats)) as chunks:
            async for _ in chunks:
                received += 1
                if received == 3:
                    break
    finally:
        await stream.close()
    assert 3 <= stats.generated_tokens < OPTIONS.max_decoding_tokens
    assert stats.prompt_tokens and stats.prompt_tokens > 0
    assert not stats.timings  # the final event (with timings) was never read


async def test_infills_own_server_pins_each_request_to_a_slot_and_frees_it():
    """With a slot router (Infill's own server) every body names `id_slot`; the stream's slot counts as open only
    while it is read."""
    from engine.local.slots import SlotRouter

    bodies: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return sse_response(sse({"content": "x", "stop": False}, FINAL))

    async with mock_client(handler) as client:
        stream = LlamaCppCompletion("http://127.0.0.1:1", client=client)
        assert await generate_sync(stream, PROMPT, OPTIONS) == "x"
        assert "id_slot" not in bodies[-1]  # a user's llama-server chooses itself
        stream.router = SlotRouter(2)
        await generate_sync(stream, PROMPT, OPTIONS)
        first = bodies[-1]["id_slot"]
        assert stream.router.open == [0, 0] and stream.router.texts[first] == PROMPT.text
        await generate_sync(stream, PROMPT, OPTIONS)
        assert bodies[-1]["id_slot"] == first
        guess = Prompt(text="unrelated", prefix="unrelated")
        await generate_sync(stream, guess, CompletionOptions(max_decoding_tokens=8, speculative=True))
        assert bodies[-1]["id_slot"] == 1 - first == 1
