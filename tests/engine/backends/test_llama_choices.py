"""Several choices from one prefill (llama-server `n_cmpl`), against the real llama-server with the tiny model.

Counted on llama-server's /metrics: the prompt is processed once for all the choices, where separate requests
process it once each."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from engine.backends.llama_cpp import LlamaCppCompletion
from engine.code import CodeGeneration
from engine.config import HttpSettings
from engine.languages import default_table
from engine.prompt import PromptTemplate
from engine.types import CompletionOptions, CompletionRequest, GenerationStats, Prompt

pytestmark = pytest.mark.llama_server

HTTP = HttpSettings(read_timeout=30.0, max_retries=0)


async def prompt_tokens_when_idle(base_url: str) -> int:
    async with httpx.AsyncClient(timeout=5.0, trust_env=False) as http:
        for _ in range(6000):  # a safety net for a server that never goes idle, not a speed assertion
            text = (await http.get(f"{base_url}/metrics")).text
            metrics = {name: float(value) for name, value in
                       (line.split()[:2] for line in text.splitlines() if line.startswith("llamacpp:"))}
            if metrics["llamacpp:requests_processing"] == 0:
                return int(metrics["llamacpp:prompt_tokens_total"])
            await asyncio.sleep(0.01)
    raise AssertionError("llama-server kept processing")


async def test_n_cmpl_gives_distinct_choices_from_one_prefill(llama_server):
    stream = LlamaCppCompletion(llama_server, use_infill=True, http=HTTP)
    # A prompt no other test sends, so none of it is in a slot's prompt cache.
    prefix = "def choices_from_one_prefill(alpha, beta, gamma):\n    return"
    prompt = Prompt(text=prefix, prefix=prefix, suffix="\n")
    options = CompletionOptions(max_decoding_tokens=8, sampling_temperature=0.9, seed=7)
    try:
        before = await prompt_tokens_when_idle(llama_server)
        stats = GenerationStats()
        texts = await stream.generate_choices(prompt, options, 2, stats)
        one_prefill = await prompt_tokens_when_idle(llama_server) - before
        assert len(texts) == 2 and all(texts) and texts[0] != texts[1]
        assert stats.prompt_tokens and one_prefill <= stats.prompt_tokens  # processed once, not twice
    finally:
        await stream.close()


async def test_code_generation_applies_stop_rules_to_each_choice(llama_server):
    stream = LlamaCppCompletion(llama_server, use_infill=True, http=HTTP)
    gen = CodeGeneration(stream, PromptTemplate(name="model-fim-tokens", template="{prefix}{suffix}"),
                         default_table())
    request = CompletionRequest(prefix="def f(x):\n    return", suffix="\n", language="python")
    options = CompletionOptions(max_decoding_tokens=12, sampling_temperature=0.9, seed=3, stop_words=("\n",))
    try:
        completions = await gen.generate_choices(request, options, 2)
        assert completions is not None and len(completions) == 2
        assert all("\n" not in c.text for c in completions)
        assert await gen.generate_choices(request, options, 1) is None  # one choice: the streamed path
    finally:
        await stream.close()
