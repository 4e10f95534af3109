"""Code generation: clip → template → stream → stop words → completion text and why it ended.

The stream is closed as soon as a stop word shows up (not at garbage collection), so the model server stops
generating for that request at once."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import AsyncGenerator, AsyncIterator, Callable, Iterable

from .decoding import StopCondition, StopConditions, first_stop, stop_condition
from .deadlines import wait_for
from .errors import DeadlineExceeded
from .languages import Language, LanguageTable, default_sentinels, opens_multiline_string
from .prompt import CountTokens, PromptTemplate, build_prompt, detect_crlf, healed_prompt, restore_line_endings
from .streams import CompletionStream, generate_sync
from .timebox import TimeBox
from .types import Completion, CompletionOptions, CompletionRequest, GenerationStats, Prompt, StopReason
from .validation import check_stop_words, check_token_budget

#: The stream is closed after this many chunks per requested token (plus CHUNK_SLACK), whatever the server does:
#: a server that ignores `max_tokens` (or streams for ever) must not hold a request or a slot.
CHUNKS_PER_TOKEN = 2
CHUNK_SLACK = 16
#: ... and after this many characters per requested token (a server sending huge chunks).
CHARS_PER_TOKEN_CAP = 32


@contextlib.asynccontextmanager
async def closing(stream: AsyncIterator[str]) -> AsyncIterator[AsyncIterator[str]]:
    """Like `contextlib.aclosing`, but the close survives a second cancellation (a request superseded while its
    deadline fires, or cancelled by the client too): cut short, it would leave the HTTP response open and the model
    server generating into a connection nobody reads."""
    try:
        yield stream
    finally:
        await asyncio.shield(stream.aclose())  # type: ignore[attr-defined]


class Healer:
    """Token healing's second half (`engine.prompt.healing_split`): the model was sent the prompt without its
    trailing blanks, so its text should begin with them; they are taken off, since the document has them already. A
    model that writes something else (a line break, `(`) keeps its text as it is: right after `return ` the shown
    `(x)` still reads `return (x)`."""

    def __init__(self, removed: str) -> None:
        self.pending = removed
        self.buffer = ""
        #: How many characters were taken off the model's text (for aligning token log-probabilities).
        self.dropped = 0

    def feed(self, chunk: str) -> str:
        if not self.pending:
            return chunk
        self.buffer += chunk
        if self.buffer.startswith(self.pending):
            out, self.dropped, self.pending = self.buffer[len(self.pending):], len(self.pending), ""
            return out
        if self.pending.startswith(self.buffer):
            return ""  # not decided yet
        out, self.pending = self.buffer, ""
        return out

    def finish(self) -> str:
        """The stream ended before the text was decided: it wrote (part of) the blanks only, which is no text."""
        self.pending = ""
        return ""

    def heal(self, text: str) -> str:
        """A whole text at once (the choices of one prefill)."""
        return self.feed(text) + self.finish()


@dataclass
class _Run:
    """What one generation found out besides its text."""

    prompt: Prompt
    crlf: bool
    #: What the model is sent: `prompt` ended at its last whole token (token healing), or `prompt` itself.
    sent: Prompt | None = None
    healer: Healer = field(default_factory=lambda: Healer(""))
    stats: GenerationStats = field(default_factory=GenerationStats)
    stop: StopCondition | StopConditions | None = None
    sentinels: frozenset[str] = frozenset()
    timebox: TimeBox | None = None

    @property
    def stop_reason(self) -> StopReason:
        if self.stop is not None and self.stop.stopped:
            return StopReason.END_SENTINEL if self.stop.stop_word in self.sentinels else StopReason.STOP_WORD
        if self.timebox is not None and self.timebox.expired:
            return StopReason.TIME_BUDGET
        if self.stats.hit_token_limit or self.stats.hit_deadline:
            return StopReason.TOKEN_LIMIT
        return StopReason.END_OF_STREAM


class CodeGeneration:
    def __init__(self, stream: CompletionStream, template: PromptTemplate, languages: LanguageTable, *,
                 count_tokens: CountTokens | None = None, max_prefix_tokens: int = 1024,
                 max_suffix_tokens: int = 256, stable_clip: bool = True, extra_stop_words: Iterable[str] = ()):
        self.stream = stream
        self.template = template
        self.languages = languages
        self.count_tokens = count_tokens
        self.max_prefix_tokens = check_token_budget(max_prefix_tokens, "max_prefix_tokens")
        self.max_suffix_tokens = check_token_budget(max_suffix_tokens, "max_suffix_tokens")
        self.stable_clip = stable_clip
        self.extra_stop_words = check_stop_words(extra_stop_words, "additional_stop_words")
        #: End a prompt that ends mid-token at its last whole token (`engine.prompt.healing_split`). The replay of
        #: recorded model texts turns it off for texts generated without it.
        self.token_healing = True
        self.clock = time.monotonic  # the time box's clock (tests replace it)

    def stop_words(self, language_id: str, options: CompletionOptions, sees_suffix: bool = False) -> tuple[str, ...]:
        """The language's stop words, the template's end sentinels, the model's and the request's extra words.

        A model that sees the suffix knows where the hole ends and says so with its end token: the language's words
        (a blank line, a comment or a top-level keyword at a line start) would cut a hole of several statements or
        declarations short, so only the sentinels stop it (its text is then limited by post-processing)."""
        fixed, own = self.stop_word_sets(language_id, options, sees_suffix)
        return (*fixed, *own)

    def stop_word_sets(self, language_id: str, options: CompletionOptions,
                       sees_suffix: bool = False) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """`stop_words` as (the words every request of the language shares, the request's own): each set gets its
        own matcher, so a new place to type at (a new line of code below the cursor) compiles only its own words."""
        if sees_suffix:
            language_words = default_sentinels()
        else:
            language_words = self.languages.lookup(language_id).stop_words()
        fixed = tuple(dict.fromkeys((*language_words, *self.template.stop_words, *self.extra_stop_words)))
        return fixed, tuple(w for w in dict.fromkeys(options.stop_words) if w not in fixed)

    def _sentinels(self) -> frozenset[str]:
        """The words that are the model's own end (END_SENTINEL when one stops it), not a stop word's cut."""
        return frozenset(default_sentinels() + tuple(self.template.stop_words))

    @property
    def sees_suffix(self) -> bool:
        return not self.template.prefix_only

    async def _start(self, request: CompletionRequest, heal: bool = False) -> _Run:
        """The prompt; with `heal` (a suggestion at the cursor, not a next-edit rewrite) ended at its last whole
        token when it ends mid-token (`token_healing`)."""
        prompt = await build_prompt(request, self.template, max_prefix_tokens=self.max_prefix_tokens,
                                    max_suffix_tokens=self.max_suffix_tokens, count_tokens=self.count_tokens,
                                    stable_clip=self.stable_clip,
                                    line_comment=self.languages.lookup(request.language).line_comment,
                                    native_context=bool(getattr(self.stream, "native_context", False)))
        sent, removed = healed_prompt(prompt) if heal and self.token_healing else (prompt, "")
        return _Run(prompt=prompt, crlf=detect_crlf(request.prefix) or detect_crlf(request.suffix), sent=sent,
                    healer=Healer(removed))

    async def _pieces(self, run: _Run, options: CompletionOptions) -> AsyncGenerator[str, None]:
        """The completion (LF line endings) as it becomes safe to show, cut before the first stop word."""
        words = self.stop_word_sets(run.prompt.language, options, sees_suffix=run.prompt.suffix is not None)
        run.stop = stop_condition(words, prefix_tail=run.prompt.prefix)
        run.sentinels = self._sentinels()
        language = self.languages.lookup(run.prompt.language)
        shown: list[str] = []  # the text yielded so far, for `_past_string_stops`
        max_chunks = options.max_decoding_tokens * CHUNKS_PER_TOKEN + CHUNK_SLACK
        max_chars = options.max_decoding_tokens * CHARS_PER_TOKEN_CAP
        count = chars = 0
        run.timebox = timebox = TimeBox(options.time_budget_ms, self.clock)
        async with closing(self.stream.generate(run.sent or run.prompt, options, run.stats)) as chunks:
            async for chunk in chunks:
                count += 1
                chars += len(chunk)
                if chars > max_chars:
                    chunk = chunk[:len(chunk) - (chars - max_chars)]
                piece = self._past_string_stops(run, words, language, shown, run.stop.feed(run.healer.feed(chunk)))
                piece, over = timebox.cut(piece)
                if piece:
                    shown.append(piece)
                    yield piece
                if run.stop.stopped or over:
                    return  # leaving the block closes the stream, which cancels the request
                if count >= max_chunks or chars >= max_chars:
                    run.stats.hit_token_limit = True  # the client-side cap: the server went on past max_tokens
                    break
        piece = self._past_string_stops(run, words, language, shown, run.stop.feed(run.healer.finish()))
        if not run.stop.stopped:
            piece += run.stop.finish()
        piece, _ = timebox.cut(piece)
        if piece:
            yield piece

    @staticmethod
    def _past_string_stops(run: _Run, words: tuple[tuple[str, ...], ...], language: Language, shown: list[str],
                           piece: str) -> str:
        """`piece`, and when the stop word that ended it stands inside a multi-line string the completion opened
        (a blank line in a docstring: `languages.opens_multiline_string`), the stop word and what follows it too, cut
        by a fresh stop condition. A model's end sentinel always ends it."""
        stop = run.stop
        assert stop is not None
        while stop.stopped and stop.stop_word and stop.stop_word not in run.sentinels \
                and language.multiline_strings \
                and opens_multiline_string(language.multiline_strings, "".join(shown) + piece):
            after = stop.after
            piece += stop.stop_word
            run.stop = stop = stop_condition(words)
            piece += stop.feed(after)
        return piece

    async def generate(self, request: CompletionRequest, options: CompletionOptions,
                       deadline: float | None = None, on_text: Callable[[str], None] | None = None) -> Completion:
        """`deadline` (seconds) ends the generation however the server behaves (a trickling or endless stream):
        the text so far is the completion; with no text at all it is an error naming the setting.

        `on_text` is called with the text so far (LF line endings) each time it grows, so a caller can tell early
        whether a generation still fits what the user has typed meanwhile."""
        run = await self._start(request, heal=options.mode == "standard")
        if options.mode == "next_edit_suggestion":
            try:
                text = await wait_for(generate_sync(self.stream, run.prompt, options, run.stats), deadline)
            except asyncio.TimeoutError:
                assert deadline is not None  # wait_for times out only with one
                raise DeadlineExceeded.after(deadline) from None
        else:
            parts: list[str] = []

            async def read() -> None:
                async with contextlib.aclosing(self._pieces(run, options)) as pieces:
                    async for piece in pieces:
                        parts.append(piece)
                        if on_text is not None:
                            on_text("".join(parts))

            try:
                await wait_for(read(), deadline)
            except asyncio.TimeoutError:
                run.stats.hit_deadline = True
                if not "".join(parts):
                    assert deadline is not None  # wait_for times out only with one
                    raise DeadlineExceeded.after(deadline) from None
            text = "".join(parts)
            text = self._deferred_stop(run, text)
        return Completion(text=restore_line_endings(text, run.crlf), stop_reason=run.stop_reason, stats=run.stats,
                          prompt=run.prompt, stop_word=run.stop.stop_word if run.stop is not None else None,
                          healed_chars=run.healer.dropped)

    def _deferred_stop(self, run: _Run, text: str) -> str:
        """A model that saw the suffix but ran into the token limit did not find the hole's end: the language's
        stop words it was spared (see `stop_words`) apply after all, as they would to a prefix-only model. So do they
        when the time box (or the deadline) ended it: it did not end by itself either."""
        if run.prompt.suffix is None or run.stop_reason not in (StopReason.TOKEN_LIMIT, StopReason.TIME_BUDGET):
            return text
        words = self.languages.lookup(run.prompt.language).stop_words()
        cut, word = first_stop(text, words, prefix_tail=run.prompt.prefix)
        if word is not None:
            run.stop = StopCondition(words)
            run.stop.stopped, run.stop.stop_word = True, word
        return cut

    async def generate_choices(self, request: CompletionRequest, options: CompletionOptions,
                               count: int) -> list[Completion] | None:
        """`count` completions from one prefill when the backend can (llama-server's `n_cmpl`); None when it
        cannot, and the caller makes separate requests. Each text gets the same stop rules as a streamed one."""
        choices = getattr(self.stream, "generate_choices", None)
        if choices is None or count < 2 or options.mode != "standard":
            return None
        run = await self._start(request, heal=True)
        texts = await choices(run.sent or run.prompt, options, count, run.stats)
        words = self.stop_word_sets(run.prompt.language, options, sees_suffix=run.prompt.suffix is not None)
        sentinels = self._sentinels()
        out = []
        language = self.languages.lookup(run.prompt.language)
        for raw in texts:
            first = stop_condition(words, prefix_tail=run.prompt.prefix)
            one = _Run(prompt=run.prompt, crlf=run.crlf, stats=run.stats, stop=first, sentinels=sentinels)
            text = self._past_string_stops(one, words, language, [], first.feed(Healer(run.healer.pending).heal(raw)))
            stop = one.stop
            assert stop is not None
            text += "" if stop.stopped else stop.finish()
            text = self._deferred_stop(one, text)
            out.append(Completion(text=restore_line_endings(text, run.crlf), stop_reason=one.stop_reason,
                                  stats=run.stats, prompt=run.prompt,
                                  stop_word=one.stop.stop_word if one.stop is not None else None))
        return out

    async def stream_text(self, request: CompletionRequest, options: CompletionOptions) -> AsyncGenerator[str, None]:
        """The whole completion so far, each time it grows (document line endings), for streamed suggestions.

        Standard mode only: a next-edit suggestion is meaningful only when complete, so it comes as one item."""
        run = await self._start(request, heal=options.mode == "standard")
        if options.mode == "next_edit_suggestion":
            yield restore_line_endings(await generate_sync(self.stream, run.prompt, options, run.stats), run.crlf)
            return
        text = ""
        async with contextlib.aclosing(self._pieces(run, options)) as pieces:
            async for piece in pieces:
                text += piece
                yield restore_line_endings(text, run.crlf)

    async def warm(self, request: CompletionRequest) -> bool:
        """Have the model server prefill the prompt (the context block first) without generating, so the next
        request's prefill is only what changed. Only backends that can (llama-server) do it; returns whether one was
        sent. A request without a prefix is not sent: on the wire it would look like a completion that lost the text
        before the cursor."""
        warm = getattr(self.stream, "warm", None)
        if warm is None or not request.context or not request.prefix:
            return False
        run = await self._start(request)
        await warm(run.prompt)
        return True

    async def close(self) -> None:
        await self.stream.close()
