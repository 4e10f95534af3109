"""One next-edit prediction: render → generate → parse → one minimal edit → discard rules → Prediction.

Generation reads the model's stream and matches the form's stop strings itself (as the rest of the engine does,
see engine.backends.llama_cpp): it must know whether the end marker arrived (an answer without it is truncated),
which a server-side stop would hide, and closing the stream at the stop ends the server's generation at once.
Cancelling the task closes the stream too (the HTTP response is closed, so llama-server stops that slot)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import AsyncIterator

from ..code import CHARS_PER_TOKEN_CAP, CHUNK_SLACK, CHUNKS_PER_TOKEN, closing
from ..deadlines import wait_for
from ..errors import InfillError
from ..redact import redact
from ..streams import ChatCompletionStream, CompletionStream
from ..types import ChatRequest, CompletionOptions, GenerationStats, Prompt
from .diff import minimal_edit
from .discard import discard_reason
from .formats import PromptRefused, RenderedPrompt, parse, render, sentinel_tokens
from .types import NextEditOptions, NextEditRequest, Prediction

log = logging.getLogger(__name__)


@dataclass
class Output:
    """What the model said, cut before the first stop string."""

    text: str = ""
    #: The stop string that ended it, None when the stream ended without one.
    ended_by: str | None = None
    stats: GenerationStats = field(default_factory=GenerationStats)

    @property
    def hit_limit(self) -> bool:
        return self.stats.hit_token_limit


def _first_stop(text: str, stops: tuple[str, ...], start: int) -> tuple[int, str] | None:
    found: tuple[int, str] | None = None
    for word in stops:
        at = text.find(word, start)
        if at >= 0 and (found is None or at < found[0]):
            found = (at, word)
    return found


async def _read(chunks: AsyncIterator[str], stops: tuple[str, ...], max_tokens: int, out: Output) -> None:
    """Append the chunks to `out.text` until a stop string (cut off, noted in `ended_by`), the stream's end or the
    client-side cap (a server ignoring n_predict must not hold the request: noted as the token limit)."""
    longest = max((len(s) for s in stops), default=0)
    max_chunks = max_tokens * CHUNKS_PER_TOKEN + CHUNK_SLACK
    max_chars = max_tokens * CHARS_PER_TOKEN_CAP
    count = 0
    async for chunk in chunks:
        count += 1
        scan_from = max(0, len(out.text) - longest + 1)
        out.text += chunk
        hit = _first_stop(out.text, stops, scan_from)
        if hit is not None:
            out.text, out.ended_by = out.text[:hit[0]], hit[1]
            return
        if count >= max_chunks or len(out.text) >= max_chars:
            out.stats.hit_token_limit = True
            return


async def generate_completion(stream: CompletionStream, rendered: RenderedPrompt, options: NextEditOptions,
                              language: str = "plaintext") -> Output:
    """The raw prompt through a completion stream (llama-server `/completion`: temperature 0, n_predict =
    max_tokens, cache_prompt; prefix only, so any completion kind takes it as its prompt)."""
    prompt = Prompt(text=rendered.text, prefix=rendered.text, suffix=None, language=language)
    completion_options = CompletionOptions(max_decoding_tokens=options.max_tokens,
                                           sampling_temperature=options.temperature, seed=0)
    out = Output()
    async with closing(stream.generate(prompt, completion_options, out.stats)) as chunks:
        await _read(chunks, rendered.format.stop, options.max_tokens, out)
    return out


async def _chat_texts(stream: ChatCompletionStream, request: ChatRequest, out: Output) -> AsyncIterator[str]:
    """The chat stream's text; closed from the outside through `closing` (whose close is shielded)."""
    async with contextlib.aclosing(stream.chat(request)) as chunks:
        async for chunk in chunks:
            if chunk.finish_reason == "length":
                out.stats.hit_token_limit = True
            if chunk.content:
                yield chunk.content


async def generate_chat(stream: ChatCompletionStream, rendered: RenderedPrompt, options: NextEditOptions) -> Output:
    """The messages through a chat stream (the stop string is matched here too, see the module docstring)."""
    request = ChatRequest(messages=rendered.messages, max_tokens=options.max_tokens,
                          temperature=options.temperature, seed=0)
    out = Output()
    texts = _chat_texts(stream, request, out)
    async with closing(texts):
        await _read(texts, rendered.format.stop, options.max_tokens, out)
    return out


def interpret(request: NextEditRequest, rendered: RenderedPrompt, out: Output) -> Prediction:
    """The model's output → a Prediction (pure: the benchmark's scripted model goes through the same steps)."""
    name = rendered.format.name
    parsed = parse(rendered, out.text, out.ended_by, out.hit_limit)
    if parsed.window is None:
        return Prediction(None, parsed.reason, name, raw=out.text, prompt=rendered.shown)
    window = rendered.window
    edit = minimal_edit(window.text, parsed.window, request.center, window.start)
    reason = discard_reason(request, window.text, parsed.window, edit, sentinel_tokens())
    if reason is not None:
        return Prediction(None, reason, name, raw=out.text, prompt=rendered.shown)
    return Prediction(edit, "edit", name, raw=out.text, prompt=rendered.shown)


async def predict(request: NextEditRequest, options: NextEditOptions, format_name: str, *,
                  completion: CompletionStream | None = None, chat: ChatCompletionStream | None = None,
                  request_timeout: float | None = None) -> Prediction:
    """A prediction in `format_name` through `completion` (completion formats) or `chat` (the instruction form).
    Model failures are a Prediction with reason "model error: ..."; cancellation propagates (after the stream is
    closed)."""
    try:
        rendered = render(request, options, format_name)
    except PromptRefused as exc:
        return Prediction(None, f"refused: {exc}", format_name)
    try:
        if rendered.format.kind == "chat":
            if chat is None:
                raise ValueError(f"the {format_name} format needs a chat model")
            run = generate_chat(chat, rendered, options)
        else:
            if completion is None:
                raise ValueError(f"the {format_name} format needs a completion model, not a chat model")
            run = generate_completion(completion, rendered, options, request.language)
        out = await wait_for(run, request_timeout)
    except asyncio.TimeoutError:
        return Prediction(None, f"model error: no answer within {request_timeout:g} s", format_name,
                          prompt=rendered.shown)
    except (InfillError, ValueError) as exc:
        log.info("next edit: %s", redact(str(exc)))
        return Prediction(None, f"model error: {redact(str(exc))}", format_name, prompt=rendered.shown)
    return interpret(request, rendered, out)
