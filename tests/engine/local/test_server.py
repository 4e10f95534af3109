"""The local backend end to end with the real llama-server: sharing, FIM detection, crash recovery, give-up."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal

import pytest

from engine.config import EngineConfig, LocalServerSettings, ModelConfig
from engine.errors import BackendError, BackendUnavailable
from engine.local.server import start_local_server
from engine.streams import generate_sync
from engine.types import ChatMessage, ChatRequest, CompletionOptions, GenerationStats, Prompt
from tests.fixtures.tiny_model import build_tiny_model

from .test_supervisor import is_alive, wait_until_dead

pytestmark = pytest.mark.llama_server

PROMPT = Prompt(text="def add(a, b):", prefix="def add(a, b):", suffix="\n")
OPTIONS = CompletionOptions(max_decoding_tokens=6, sampling_temperature=0.0, seed=3)


def local_config(model, binary, **settings) -> ModelConfig:
    local = LocalServerSettings(binary=binary, parallel=1, ctx_size=1024, start_timeout=30.0, **settings)
    return ModelConfig(kind="local", model=str(model), local=local)


@pytest.fixture(scope="session")
def tiny_model_without_fim(tmp_path_factory) -> str:
    return str(build_tiny_model(tmp_path_factory.mktemp("no-fim") / "tiny-no-fim.gguf", fim=False))


async def test_shared_server_serves_infill_chat_and_tokens(llama_server_binary, tiny_model):
    cfg = local_config(tiny_model, llama_server_binary)
    events = []
    server = await start_local_server(cfg, EngineConfig(completion=cfg), on_status=events.append)
    pid = server.supervisor.pid
    try:
        again = await start_local_server(cfg, EngineConfig(completion=cfg))
        assert again is server  # one llama-server per model file and settings
        await again.close()
        assert is_alive(pid)  # still referenced once

        assert server.has_fim and server.failed_reason is None
        assert server.endpoint.startswith("http://127.0.0.1:")
        stream = server.completion_stream()
        assert stream.native_fim and stream.path == "/infill"
        stats = GenerationStats()
        try:
            text = await generate_sync(stream, PROMPT, OPTIONS, stats)
        finally:
            await stream.close()
        assert text and stats.generated_tokens == OPTIONS.max_decoding_tokens
        template = server.prompt_template()
        assert not template.prefix_only  # the suffix is kept and sent to /infill

        assert await server.count_tokens("def add(a, b):") > 1
        chat = server.chat_stream()
        try:
            chunks = [c async for c in chat.chat(ChatRequest(messages=(ChatMessage("user", "hi"),), max_tokens=2))]
        finally:
            await chat.close()
        assert "".join(c.content for c in chunks)
        assert any(event.kind == "ready" for event in events)
        with pytest.raises(BackendUnavailable, match="local.embedding = true"):
            server.embedding()
    finally:
        await server.close()
    assert wait_until_dead(pid) and server.supervisor.pid is None


async def test_model_without_fim_tokens_uses_completion(llama_server_binary, tiny_model_without_fim, caplog):
    cfg = local_config(tiny_model_without_fim, llama_server_binary)
    caplog.set_level(logging.WARNING)
    server = await start_local_server(cfg, EngineConfig(completion=cfg))
    try:
        assert not server.has_fim
        stream = server.completion_stream()
        assert not stream.native_fim and stream.path == "/completion"
        try:
            assert await generate_sync(stream, PROMPT, OPTIONS)
        finally:
            await stream.close()
        assert server.prompt_template().prefix_only
        # said once, not by both the model resolver and the server
        assert caplog.text.count("no FIM tokens and no prompt_template") == 1
    finally:
        await server.close()


async def test_configured_template_wins_over_fim_tokens(llama_server_binary, tiny_model):
    cfg = dataclasses.replace(local_config(tiny_model, llama_server_binary),
                              prompt_template="<PRE> {prefix} <SUF>{suffix} <MID>")
    server = await start_local_server(cfg, EngineConfig(completion=cfg))
    try:
        assert server.has_fim
        stream = server.completion_stream()
        assert stream.path == "/completion"
        await stream.close()
        template = server.prompt_template()
        assert template.render("a", "b") == "<PRE> a <SUF>b <MID>"
    finally:
        await server.close()


async def test_an_engine_for_a_changed_template_shares_the_server_with_its_own_template(llama_server_binary,
                                                                                       tiny_model):
    """A changed `prompt_template` makes a new engine (started before the old one is closed), which shares the old
    one's llama-server (same model file and server settings): it took the template of the configuration that had
    started the server, so the change did nothing until a restart."""
    from engine.api import Engine

    plain = local_config(tiny_model, llama_server_binary)
    templated = dataclasses.replace(plain, prompt_template="<PRE> {prefix} <SUF>{suffix} <MID>")
    old, new = Engine(EngineConfig(completion=plain)), Engine(EngineConfig(completion=templated))
    try:
        for engine in (old, new):
            await engine.start()
            await engine.wait_ready(60)
        assert old._local is new._local  # one llama-server
        assert old._generation.template.name == "model-fim-tokens" and old._generation.stream.path == "/infill"
        assert new._generation.template.render("a", "b") == "<PRE> a <SUF>b <MID>"
        assert new._generation.stream.path == "/completion"
    finally:
        await old.close()
        await new.close()


async def test_embedding_server(llama_server_binary, tiny_model):
    cfg = local_config(tiny_model, llama_server_binary, embedding=True)
    server = await start_local_server(cfg, EngineConfig(completion=cfg))
    embedding = server.embedding()
    try:
        short = await embedding.embed("hi")  # padded to 4 tokens
        longer = await embedding.embed("def add(a, b): return a + b")
        assert len(short) == len(longer) == 64
        assert short != longer
    finally:
        await embedding.close()
        await server.close()


async def test_kill_9_mid_stream_fails_that_request_then_recovers(llama_server_binary, tiny_model):
    cfg = local_config(tiny_model, llama_server_binary)
    server = await start_local_server(cfg, EngineConfig(completion=cfg))
    server.supervisor.restart_backoff = 0.05
    stream = server.completion_stream()
    try:
        long = CompletionOptions(max_decoding_tokens=900, sampling_temperature=0.0, seed=1)
        # On a loaded machine the whole answer can already be in the socket when the first chunk is read, so the
        # kill misses the request: then it is tried again on the restarted server.
        for attempt in range(3):  # noqa: B007 - read after the loop
            await server.supervisor.wait_ready(30)
            first_pid = server.supervisor.pid
            try:
                async with contextlib.aclosing(stream.generate(PROMPT, long)) as chunks:
                    async for _ in chunks:
                        if is_alive(first_pid):
                            os.kill(first_pid, signal.SIGKILL)
            except BackendError:
                break
        else:
            pytest.fail("the kill never landed during a request in 3 attempts")
        assert wait_until_dead(first_pid)
        # the next request waits for the automatic restart and succeeds
        assert await generate_sync(stream, PROMPT, OPTIONS)
        assert server.supervisor.restarts == attempt + 1 and server.supervisor.pid not in (None, first_pid)
        assert server.failed_reason is None
    finally:
        await stream.close()
        await server.close()


async def test_crash_loop_while_running_gives_up_and_requests_get_the_reason(llama_server_binary, tiny_model):
    cfg = local_config(tiny_model, llama_server_binary)
    server = await start_local_server(cfg, EngineConfig(completion=cfg))
    supervisor = server.supervisor
    supervisor.restart_backoff = 0.01
    stream = server.completion_stream()
    try:
        for crash in range(1, supervisor.crash_limit + 1):
            await supervisor.wait_ready(30)
            pid = supervisor.pid
            os.kill(pid, signal.SIGKILL)
            assert wait_until_dead(pid)
            await noticed_crashes(supervisor, crash)
        with pytest.raises(BackendUnavailable, match="crashed 5 times within 60 s") as info:
            await generate_sync(stream, PROMPT, OPTIONS)
        assert "killed by signal 9" in str(info.value)
        assert server.failed_reason and supervisor.pid is None and supervisor.state == "failed"
    finally:
        await stream.close()
        await server.close()
    # a fresh start after giving up is possible (the failed server is not reused)
    again = await start_local_server(cfg, EngineConfig(completion=cfg))
    try:
        assert again is not server and again.failed_reason is None
    finally:
        await again.close()


async def noticed_crashes(supervisor, count: int, attempts: int = 400) -> None:
    """Wait (bounded) until the monitor has counted `count` crashes (it restarts after each, or gives up)."""
    for _ in range(attempts):
        if supervisor.crashes >= count:
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"the supervisor did not notice crash {count} (state {supervisor.state})")


async def test_missing_binary_setting_is_a_clear_error(tiny_model, tmp_path):
    cfg = local_config(tiny_model, str(tmp_path / "no" / "llama-server"))
    with pytest.raises(BackendUnavailable, match=r"completion\.local\.binary.*bash scripts/setup\.sh"):
        await start_local_server(cfg, EngineConfig(completion=cfg))


async def test_requests_are_pinned_to_the_slot_holding_their_prompt(llama_server_binary, tiny_model):
    """What engine/local/slots.py relies on, with the real llama-server: a request pinned to a busy slot waits for
    it (llama-server defers it) instead of failing, and the next request for the same prompt runs where that prompt
    is cached."""
    cfg = dataclasses.replace(local_config(tiny_model, llama_server_binary),
                              local=LocalServerSettings(binary=llama_server_binary, parallel=2, ctx_size=1024,
                                                        start_timeout=30.0))
    server = await start_local_server(cfg, EngineConfig(completion=cfg))
    stream = server.completion_stream()
    try:
        assert stream.router is server.slot_router and server.slot_router.slots == 2
        prompt = Prompt(text="def add(a, b):\n" * 20, prefix="def add(a, b):\n" * 20, suffix="\n")
        long = CompletionOptions(max_decoding_tokens=200, sampling_temperature=0.0, seed=3)
        first = asyncio.ensure_future(generate_sync(stream, prompt, long))
        while not any(server.slot_router.open):
            await asyncio.sleep(0.005)
        busy = server.slot_router.open.index(1)
        # pinned to the busy slot: deferred until the first one ends, then served
        pinned = dataclasses.replace(OPTIONS, slot=busy)
        stats = GenerationStats()
        second = await generate_sync(stream, prompt, pinned, stats)
        assert await first and second
        assert stats.cached_prompt_tokens and stats.cached_prompt_tokens > 100  # the prompt was there
        # not pinned: the router sends the same prompt to the same slot, from the cache
        stats = GenerationStats()
        await generate_sync(stream, prompt, OPTIONS, stats)
        assert server.slot_router.used[busy] == max(server.slot_router.used) and stats.cached_prompt_tokens > 100
        assert server.slot_router.open == [0, 0]
    finally:
        await stream.close()
        await server.close()


async def test_a_failed_wait_for_the_shared_server_gives_its_reference_back(llama_server_binary, tiny_model,
                                                                            monkeypatch):
    """A second user of the running server whose wait for it fails (it gave up restarting, or the wait was cancelled)
    must not keep a reference: the first user's close() then stops llama-server (it ran until the process ended)."""
    cfg = local_config(tiny_model, llama_server_binary)
    server = await start_local_server(cfg, EngineConfig(completion=cfg))
    pid = server.supervisor.pid

    async def fails(timeout: float) -> str:
        raise BackendUnavailable("llama-server", "gave up")

    monkeypatch.setattr(server.supervisor, "wait_ready", fails)
    with pytest.raises(BackendUnavailable):
        await start_local_server(cfg, EngineConfig(completion=cfg))
    monkeypatch.undo()
    await server.close()
    assert server._closed and server.supervisor.pid is None
    assert wait_until_dead(pid)
