"""Per-token log-probabilities as optional stream data: asked for with `CompletionOptions.logprobs` (llama-server's
`n_probs`), collected in `GenerationStats.tokens`, and aligned to the completion's text (`Completion.token_logprobs`)
after token healing and stop words."""

from __future__ import annotations

import json

import httpx

from engine.backends.llama_cpp import LlamaCppCompletion, completion_body
from engine.streams import generate_sync
from engine.types import Completion, CompletionOptions, GenerationStats, StopReason, TokenLogprob
from tests.engine.test_code import ScriptedStream, generation, python
from tests.engine.test_llama_cpp import FINAL, PROMPT, mock_client, sse, sse_response


def _probs(token: str, logprob: float) -> dict:
    return {"content": token, "stop": False,
            "completion_probabilities": [{"id": 1, "token": token, "logprob": logprob, "top_logprobs": []}]}


def test_n_probs_is_sent_only_when_asked():
    assert "n_probs" not in completion_body(PROMPT, CompletionOptions(seed=1), use_infill=False)
    assert completion_body(PROMPT, CompletionOptions(seed=1, logprobs=True), use_infill=False)["n_probs"] == 1


async def test_llama_server_tokens_and_logprobs_are_collected():
    bodies: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return sse_response(sse(_probs("    ", -0.5), _probs("return", -0.25), {"content": " a", "stop": False},
                                {**_probs(" b", -2.0), "completion_probabilities": "junk"}, FINAL))

    async with mock_client(handler) as client:
        stream = LlamaCppCompletion("http://127.0.0.1:1", client=client)
        stats = GenerationStats()
        options = CompletionOptions(seed=1, logprobs=True)
        assert await generate_sync(stream, PROMPT, options, stats) == "    return a b"
        assert stats.tokens == [TokenLogprob("    ", -0.5), TokenLogprob("return", -0.25)]
        plain = GenerationStats()  # not asked: none kept, whatever the server sends
        await generate_sync(stream, PROMPT, CompletionOptions(seed=1), plain)
        assert plain.tokens is None
    assert bodies[0]["n_probs"] == 1 and "n_probs" not in bodies[1]


def _completion(text: str, tokens: list[tuple[str, float]] | None, healed: int = 0) -> Completion:
    stats = GenerationStats(tokens=None if tokens is None else [TokenLogprob(t, lp) for t, lp in tokens])
    return Completion(text=text, stop_reason=StopReason.STOP_WORD, stats=stats, healed_chars=healed)


def test_token_logprobs_are_offsets_into_the_text():
    tokens = [("a", -0.1), (" +", -0.2), (" b", -0.3), ("\n", -0.4), ("c", -0.5)]
    assert _completion("a + b\nc", tokens).token_logprobs() == ((0, -0.1), (1, -0.2), (3, -0.3), (5, -0.4),
                                                                 (6, -0.5))
    # a stop word cut the text: the tokens past it are not the text's
    assert _completion("a + b", tokens).token_logprobs() == ((0, -0.1), (1, -0.2), (3, -0.3))
    # token healing took the prompt's blank off the start of the model's text
    assert _completion("a + b", [(" a", -0.1), (" +", -0.2), (" b", -0.3)], healed=1).token_logprobs() == (
        (0, -0.1), (1, -0.2), (3, -0.3))
    # CRLF documents: offsets are in the LF text the filters see
    assert _completion("a\r\nb", [("a", -0.1), ("\n", -0.2), ("b", -0.3)]).token_logprobs() == (
        (0, -0.1), (1, -0.2), (2, -0.3))


def test_no_token_logprobs_without_tokens_or_when_they_do_not_spell_the_text():
    assert _completion("a", None).token_logprobs() is None
    assert _completion("ab", [("a", -0.1), ("\ufffd", -0.2)]).token_logprobs() is None


class _LogprobStream(ScriptedStream):
    async def generate(self, prompt, options, stats=None):
        async for chunk in super().generate(prompt, options, stats):
            if stats is not None and options.logprobs:
                stats.add_token(TokenLogprob(chunk, -1.0))
            yield chunk


async def test_generation_aligns_the_logprobs_after_token_healing():
    stream = _LogprobStream([" a", " + b", "\n\ndef g():"])
    completion = await generation(stream, None).generate(python("def add(a, b):\n    return "),
                                                         CompletionOptions(seed=1, logprobs=True))
    assert completion.text == "a + b" and completion.healed_chars == 1
    assert completion.token_logprobs() == ((0, -1.0), (1, -1.0))
    assert stream.options[0].logprobs
