"""Code generation: clip → template → stream → stop words → completion text and why it ended.

The stream is closed as soon as a stop word shows up (not at garbage collection), so the model server stops
generating for that request at once."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import AsyncIterator, Iterable

from .decoding import StopCondition, first_stop
from .languages import LanguageTable, default_sentinels
from .prompt import CountTokens, PromptTemplate, build_prompt, detect_crlf, restore_line_endings
from .streams import CompletionStream, generate_sync
from .types import Completion, CompletionOptions, CompletionRequest, GenerationStats, Prompt, StopReason


@dataclass
class _Run:
    """What one generation found out besides its text."""

    prompt: Prompt
    crlf: bool
    stats: GenerationStats = field(default_factory=GenerationStats)
    stop: StopCondition | None = None
    sentinels: frozenset[str] = frozenset()

    @property
    def stop_reason(self) -> StopReason:
        if self.stop is not None and self.stop.stopped:
            return StopReason.END_SENTINEL if self.stop.stop_word in self.sentinels else StopReason.STOP_WORD
        return StopReason.TOKEN_LIMIT if self.stats.hit_token_limit else StopReason.END_OF_STREAM


class CodeGeneration:
    def __init__(self, stream: CompletionStream, template: PromptTemplate, languages: LanguageTable, *,
                 count_tokens: CountTokens | None = None, max_prefix_tokens: int = 1024,
                 max_suffix_tokens: int = 256, stable_clip: bool = True, extra_stop_words: Iterable[str] = ()):
        extra = tuple(extra_stop_words)
        if any(w == "" for w in extra):
            raise ValueError("additional_stop_words must not contain an empty string")
        if max_prefix_tokens < 0 or max_suffix_tokens < 0:
            raise ValueError("max_prefix_tokens and max_suffix_tokens must not be negative")
        self.stream = stream
        self.template = template
        self.languages = languages
        self.count_tokens = count_tokens
        self.max_prefix_tokens = max_prefix_tokens
        self.max_suffix_tokens = max_suffix_tokens
        self.stable_clip = stable_clip
        self.extra_stop_words = extra

    def stop_words(self, language_id: str, options: CompletionOptions, sees_suffix: bool = False) -> tuple[str, ...]:
        """The language's stop words, the template's end sentinels, the model's and the request's extra words.

        A model that sees the suffix knows where the hole ends and says so with its end token: the language's words
        (a blank line, a comment or a top-level keyword at a line start) would cut a hole of several statements or
        declarations short, so only the sentinels stop it (its text is then limited by post-processing)."""
        if sees_suffix:
            language_words = default_sentinels()
        else:
            language_words = self.languages.lookup(language_id).stop_words()
        words = (*language_words, *self.template.stop_words, *self.extra_stop_words, *options.stop_words)
        return tuple(dict.fromkeys(words))

    @property
    def sees_suffix(self) -> bool:
        return not self.template.prefix_only

    async def _start(self, request: CompletionRequest) -> _Run:
        prompt = await build_prompt(request, self.template, max_prefix_tokens=self.max_prefix_tokens,
                                    max_suffix_tokens=self.max_suffix_tokens, count_tokens=self.count_tokens,
                                    stable_clip=self.stable_clip)
        return _Run(prompt=prompt, crlf=detect_crlf(request.prefix) or detect_crlf(request.suffix))

    async def _pieces(self, run: _Run, options: CompletionOptions) -> AsyncIterator[str]:
        """The completion (LF line endings) as it becomes safe to show, cut before the first stop word."""
        words = self.stop_words(run.prompt.language, options, sees_suffix=run.prompt.suffix is not None)
        run.stop = stop = StopCondition(words, prefix_tail=run.prompt.prefix)
        run.sentinels = frozenset(default_sentinels() + self.template.stop_words)
        async with contextlib.aclosing(self.stream.generate(run.prompt, options, run.stats)) as chunks:
            async for chunk in chunks:
                piece = stop.feed(chunk)
                if piece:
                    yield piece
                if stop.stopped:
                    return  # leaving the block closes the stream, which cancels the request
        piece = stop.finish()
        if piece:
            yield piece

    async def generate(self, request: CompletionRequest, options: CompletionOptions) -> Completion:
        run = await self._start(request)
        if options.mode == "next_edit_suggestion":
            text = await generate_sync(self.stream, run.prompt, options, run.stats)
        else:
            parts = []
            async with contextlib.aclosing(self._pieces(run, options)) as pieces:
                async for piece in pieces:
                    parts.append(piece)
            text = "".join(parts)
            text = self._deferred_stop(run, text)
        return Completion(text=restore_line_endings(text, run.crlf), stop_reason=run.stop_reason, stats=run.stats,
                          prompt=run.prompt, stop_word=run.stop.stop_word if run.stop is not None else None)

    def _deferred_stop(self, run: _Run, text: str) -> str:
        """A model that saw the suffix but ran into the token limit did not find the hole's end: the language's
        stop words it was spared (see `stop_words`) apply after all, as they would to a prefix-only model."""
        if run.prompt.suffix is None or run.stop_reason is not StopReason.TOKEN_LIMIT:
            return text
        words = self.languages.lookup(run.prompt.language).stop_words()
        cut, word = first_stop(text, words, prefix_tail=run.prompt.prefix)
        if word is not None:
            run.stop = StopCondition(words)
            run.stop.stopped, run.stop.stop_word = True, word
        return cut

    async def stream_text(self, request: CompletionRequest, options: CompletionOptions) -> AsyncIterator[str]:
        """The whole completion so far, each time it grows (document line endings), for streamed suggestions.

        Standard mode only: a next-edit suggestion is meaningful only when complete, so it comes as one item."""
        run = await self._start(request)
        if options.mode == "next_edit_suggestion":
            yield restore_line_endings(await generate_sync(self.stream, run.prompt, options, run.stats), run.crlf)
            return
        text = ""
        async with contextlib.aclosing(self._pieces(run, options)) as pieces:
            async for piece in pieces:
                text += piece
                yield restore_line_endings(text, run.crlf)

    async def close(self) -> None:
        await self.stream.close()
