"""Client-side limits of a generation: the chunk/character cap and the deadline end any stream, whatever the server
does; request bodies survive lone surrogates; settings are checked whole before an engine is built."""

from __future__ import annotations

import asyncio
import json

import pytest

from engine.api import check_config
from engine.backends.http import json_post
from engine.code import CHARS_PER_TOKEN_CAP, CHUNK_SLACK, CHUNKS_PER_TOKEN, CodeGeneration
from engine.config import EngineConfig, ModelConfig, from_dict
from engine.errors import BackendError, ConfigError
from engine.languages import default_table
from engine.prompt import PromptTemplate
from engine.types import CompletionOptions, CompletionRequest, StopReason


class Endless:
    """Yields `chunk` for ever (optionally pausing), counting what it yielded and whether it was closed."""

    native_fim = False

    def __init__(self, chunk: str, pause: float = 0.0, pause_after: int | None = None):
        self.chunk, self.pause, self.pause_after = chunk, pause, pause_after
        self.yielded = 0
        self.closed = False

    async def generate(self, prompt, options, stats=None):
        try:
            while True:
                if self.pause_after is not None and self.yielded >= self.pause_after:
                    await asyncio.Event().wait()  # a stalled server
                self.yielded += 1
                yield self.chunk
                await asyncio.sleep(self.pause)
        finally:
            self.closed = True

    async def close(self):
        pass


def generation(stream) -> CodeGeneration:
    return CodeGeneration(stream, PromptTemplate.from_setting(None), default_table())


REQUEST = CompletionRequest(prefix="x = ", language="plaintext")


async def test_endless_stream_is_cut_at_the_chunk_cap():
    stream = Endless("a")
    completion = await generation(stream).generate(REQUEST, CompletionOptions(max_decoding_tokens=8))
    assert stream.yielded == 8 * CHUNKS_PER_TOKEN + CHUNK_SLACK and stream.closed
    assert completion.stop_reason == StopReason.TOKEN_LIMIT and completion.stats.hit_token_limit


async def test_huge_chunks_are_cut_at_the_character_cap():
    stream = Endless("b" * 1000)
    completion = await generation(stream).generate(REQUEST, CompletionOptions(max_decoding_tokens=4))
    assert len(completion.text) == 4 * CHARS_PER_TOKEN_CAP and stream.closed


async def test_deadline_keeps_the_text_so_far():
    stream = Endless("c", pause_after=3)
    completion = await generation(stream).generate(REQUEST, CompletionOptions(max_decoding_tokens=64), deadline=0.05)
    assert completion.text == "ccc" and completion.stats.hit_deadline and stream.closed
    assert completion.stop_reason == StopReason.TOKEN_LIMIT


async def test_deadline_with_nothing_generated_names_the_setting():
    stream = Endless("d", pause_after=0)
    with pytest.raises(BackendError, match="request_timeout"):
        await generation(stream).generate(REQUEST, CompletionOptions(), deadline=0.05)
    assert stream.closed


def test_lone_surrogates_become_replacement_characters():
    args = json_post({"prompt": "x = '\ud800'", "suffix": "\udfff"}, {"Authorization": "Bearer k"})
    assert json.loads(args["content"].decode("utf-8")) == {"prompt": "x = '\ufffd'", "suffix": "\ufffd"}
    assert args["headers"] == {"Authorization": "Bearer k", "Content-Type": "application/json"}
    assert json_post({"a": "é😀"}, {})["content"] == '{"a":"é😀"}'.encode()


@pytest.mark.parametrize("completion,key", [
    ({"kind": "nope"}, "completion.kind"),
    ({"kind": "openai/chat", "model": "m", "api_endpoint": "http://h"}, "completion.kind"),
    ({"kind": "openai/completion", "model": "m", "api_endpoint": "ftp://h"}, "completion.api_endpoint"),
    ({"kind": "openai/completion", "api_endpoint": "http://h"}, "completion.model"),
    ({"kind": "openai/completion", "model": "m", "api_endpoint": "http://h", "prompt_template": "{suffix}"},
     "completion.prompt_template"),
    ({"prompt_template": "no-such-family"}, "completion.prompt_template"),
    # endpoints urllib or httpx cannot parse: accepted, they made every completion fail with InternalError
    ({"kind": "openai/completion", "model": "m", "api_endpoint": "http://[::1"}, "completion.api_endpoint"),
    ({"kind": "openai/completion", "model": "m", "api_endpoint": "http://\ud800/v1"}, "completion.api_endpoint"),
    ({"kind": "openai/completion", "model": "m", "api_endpoint": "http://" + "a" * 70_000}, "completion.api_endpoint"),
    ({"kind": "openai/completion", "model": "m", "api_endpoint": "http://h:99999/v1"}, "completion.api_endpoint"),
])
def test_check_config_names_the_key(completion, key):
    with pytest.raises(ConfigError) as info:
        check_config(EngineConfig(completion=from_dict(ModelConfig, completion, "completion")))
    assert info.value.key == key


def test_check_config_checks_languages_and_other_roles():
    with pytest.raises(ConfigError, match="non-empty"):
        check_config(from_dict(EngineConfig, {"languages": {" ": {}}}))
    with pytest.raises(ConfigError) as info:
        check_config(from_dict(EngineConfig, {"chat": {"kind": "openai/completion", "model": "m",
                                                       "api_endpoint": "http://h"}}))
    assert info.value.key == "chat.kind"
    check_config(from_dict(EngineConfig, {"completion": {"kind": "openai/completion", "model": "m",
                                                         "api_endpoint": "http://127.0.0.1:1/v1"}}))
