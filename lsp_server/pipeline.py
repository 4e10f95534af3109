"""The completion flow shared by the LSP server and `infill complete`: cache and typing-through → engine →
post-processing → suggestions with their replace range.

Nothing here knows about JSON-RPC; the server turns Suggestions into InlineCompletionItems. Keeping one pipeline
means `infill complete` prints exactly what an editor would show."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar

from engine.api import Engine, StatusEvent
from engine.deadlines import wait_for
from engine.errors import DeadlineExceeded
from engine.types import Completion, CompletionOptions, CompletionRequest, StopReason

from . import postprocess
from .cache import CompletionCache
from .config import ServerSettings, engine_changed
from .context import CursorContext
from .logging_setup import show_text
from .postprocess import line_mode
from .postprocess.confidence import first_line_confidence
from .workspace.requests import attach as attach_context

if TYPE_CHECKING:
    from .workspace.provider import WorkspaceContext

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Suggestion:
    text: str
    #: How many characters of the line's rest after the cursor the suggestion replaces (auto-closed brackets).
    replace_chars: int = 0
    source: str = "model"  # model | cache | typing-through


class Postprocessor:
    """The post-processing steps (lsp_server/postprocess) applied to a cursor context.

    It remembers which cached items were written up to the code below the cursor (`rejoined`), keyed by the item
    and that code, because the scope filter runs after the cache, on every showing."""

    REMEMBERED = 64

    def __init__(self) -> None:
        self._rejoined: deque[tuple[str, str | None]] = deque(maxlen=self.REMEMBERED)

    @staticmethod
    def _ctx(ctx: CursorContext, model_ended: bool = False, rejoined: bool = False) -> postprocess.PostprocessContext:
        return postprocess.PostprocessContext(prefix=ctx.prefix, suffix=ctx.suffix, language=ctx.language,
                                              indent_unit=ctx.indent_unit, line_mode=ctx.line_mode,
                                              model_ended=model_ended, rejoined=rejoined)

    def before_cache(self, text: str, ctx: CursorContext, model_ended: bool = False,
                     rejoined: bool = False) -> str | None:
        kept = postprocess.before_cache(text, self._ctx(ctx, model_ended))
        if kept and rejoined:
            self._rejoined.append((kept, line_mode.rejoin_stop_word(ctx.suffix)))
        return kept

    def after_cache(self, text: str, ctx: CursorContext) -> str | None:
        # The code below is looked at only for a remembered item: this runs on every showing, also from the cache.
        rejoined = any(item == text for item, _ in self._rejoined) and (
            (text, line_mode.rejoin_stop_word(ctx.suffix)) in self._rejoined)
        return postprocess.after_cache(text, self._ctx(ctx, rejoined=rejoined))

    def replace_chars(self, text: str, ctx: CursorContext) -> int:
        return max(0, min(len(ctx.line_rest), int(postprocess.replace_range_end(text, self._ctx(ctx)))))


async def _sees_suffix(engine: Any, ready_timeout: float) -> bool:
    """Whether the engine's model is given the code after the cursor; known once the engine is ready (an engine
    that cannot tell counts as prefix-only, which only costs a FIM model its multi-line answers on one line)."""
    wait_ready = getattr(engine, "wait_ready", None)
    if wait_ready is not None:
        await wait_ready(ready_timeout)
    generation = getattr(engine, "generation", None)
    return bool(getattr(generation, "sees_suffix", False))


async def all_or_none(work: list[Awaitable[T]]) -> list[T]:
    """Run `work` concurrently; when one fails or the caller is cancelled (superseded), cancel the others and
    wait for them, so no stream keeps a model slot busy after the answer (asyncio.gather leaves them running)."""
    tasks = [asyncio.ensure_future(w) for w in work]
    for task in tasks:  # a failure after the first one is not news: mark it seen ("exception never retrieved")
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in tasks:
            if task in done and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        return [task.result() for task in tasks]
    finally:
        for task in tasks:
            task.cancel()
        # asyncio.wait, not gather: cancelled again while waiting, gather would cancel the tasks a second time and cut
        # their stream's close short; wait leaves them to finish their cleanup.
        await asyncio.wait(tasks)


def _unique(texts: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for text in texts:
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


class CompletionService:
    """Owns the engine, the cache and post-processing for one server (or one `infill complete` run)."""

    def __init__(self, settings: ServerSettings, on_status: Callable[[StatusEvent], None] | None = None,
                 engine_factory: Callable[..., Engine] = Engine) -> None:
        self.settings = settings
        self._on_status = on_status or (lambda event: None)
        self._engine_factory = engine_factory
        self.engine: Engine | None = None
        self.cache = CompletionCache(settings.cache_size, settings.cache_ttl, settings.typing_through_max)
        self.post = Postprocessor()
        self.model_calls = 0
        #: Workspace context (lsp_server.workspace.provider), set by the server; None: current file only.
        self.workspace: WorkspaceContext | None = None

    # --- lifecycle ---------------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.engine is None:
            self.engine = self._engine_factory(self.settings.engine, self._on_status)
        await self.engine.start()

    async def apply_settings(self, new: ServerSettings) -> bool:
        """Apply new settings; returns True when the engine was replaced (model, backend or languages changed).

        A new engine is started, and must be ready, before the old one is closed: when it cannot start, the
        exception propagates, the old engine and settings stay in force and completions go on."""
        old = self.settings
        replaced = False
        if engine_changed(old, new) and self.engine is not None:
            candidate = self._engine_factory(new.engine, self._on_status)
            try:
                await candidate.start()
                await candidate.wait_ready(new.ready_timeout)
            except BaseException:
                await candidate.close()
                self._on_status(self.engine.status)  # the old engine's state again (the candidate reported its own)
                raise
            previous, self.engine = self.engine, candidate
            await previous.close()
            replaced = True
        self.settings = new
        self.cache.max_entries = new.cache_size
        self.cache.ttl = new.cache_ttl
        self.cache.typing_through_max = new.typing_through_max
        if new != old:  # token budget, multi-line policy, … change what a cached answer would be
            self.cache.clear()
        return replaced

    async def close(self) -> None:
        if self.engine is not None:
            engine, self.engine = self.engine, None
            await engine.close()

    # --- requests ----------------------------------------------------------------------------------------------

    def lookup(self, ctx: CursorContext) -> list[Suggestion] | None:
        """Suggestions without a model call: typing through the shown suggestion, or an exact cache hit."""
        rests = self.cache.typing_through(ctx.uri, ctx.prefix, ctx.suffix)
        if rests:  # already cut where the suggestion may end, when it was generated
            return [Suggestion(t, self.post.replace_chars(t, ctx), "typing-through") for t in rests if t]
        cached = self.cache.get(ctx.uri, ctx.prefix, ctx.suffix)
        if cached is not None:
            return self.finish(list(cached), ctx, "cache")
        return None

    def _options(self, invoked: bool, stop_words: tuple[str, ...], index: int, speculative: bool = False,
                 next_line: bool = False) -> CompletionOptions:
        s = self.settings
        several = invoked and s.invoked_choices > 1
        budget = s.speculation.invoked_time_budget_ms if invoked else s.speculation.time_budget_ms
        if next_line:  # the next line whole, never stopped at its own line break
            stop_words = tuple(w for w in stop_words if w != "\n")
            budget = 0  # a time box of 0 keeps exactly the first line with content
        kwargs: dict[str, Any] = {
            "max_decoding_tokens": s.max_tokens,
            "sampling_temperature": s.invoked_temperature if several else s.temperature,
            "stop_words": stop_words,
            "time_budget_ms": budget if budget or next_line else None,
        }
        if several:
            kwargs["seed"] = int(time.time() * 1000) % 2**31 + index
        if speculative:
            kwargs["speculative"] = True
        if s.confidence_floor is not None:
            kwargs["logprobs"] = True
        return CompletionOptions(**kwargs)

    async def generate(self, ctx: CursorContext, invoked: bool = False) -> list[Suggestion]:
        """Ask the model (one choice, or several for invoked requests), post-process, cache."""
        return self.finish(await self.compute(ctx, invoked), ctx, "model")

    async def compute(self, ctx: CursorContext, invoked: bool = False, *, speculative: bool = False,
                      next_line: bool = False, on_text: Callable[[str], None] | None = None) -> list[str]:
        """The model's texts for `ctx` after the pre-cache filters, cached, not yet shown: a speculative
        computation must not become the document's shown suggestion (typing-through follows what the user sees).
        `next_line`: the cursor ends a line (`ctx` is multi-line); ask for the next line only.
        `on_text` sees the raw text so far of a single generation."""
        if self.engine is None:
            await self.start()
        assert self.engine is not None
        engine = self.engine
        request = CompletionRequest(prefix=ctx.prefix, suffix=ctx.suffix, language=ctx.language,
                                    filepath=ctx.filepath)
        count = self.settings.invoked_choices if invoked else 1
        started = time.perf_counter()
        settings = self.settings
        # Waits for the engine: the context is chosen for its model (prompt budgets, whether it sees the suffix),
        # which is known once it is ready. A request made while the model loads gets its context too.
        sees_suffix = await _sees_suffix(engine, settings.ready_timeout)
        if self.workspace is not None:
            request = await attach_context(self.workspace, request, ctx.uri, ctx.line, engine.generation)
        stop_words = line_mode.request_stop_words(ctx.line_mode, ctx.suffix, sees_suffix)
        completions: list[Completion] | None = None
        if count > 1:  # alternatives from one prefill where the backend can
            try:  # one non-streamed reply: the deadline covers the wait for the model and the generation
                completions = await wait_for(
                    engine.complete_choices(request, self._options(invoked, stop_words, 0), count,
                                            settings.ready_timeout),
                    settings.ready_timeout + settings.request_timeout)
            except asyncio.TimeoutError:
                raise DeadlineExceeded.after(settings.request_timeout) from None
        if completions is not None:
            self.model_calls += 1
        elif count == 1:
            self.model_calls += 1
            completions = [await engine.complete(request, self._options(invoked, stop_words, 0, speculative,
                                                                        next_line),
                                                 settings.ready_timeout, settings.request_timeout, on_text=on_text)]
        else:
            self.model_calls += count

            async def choice(i: int) -> Completion | None:
                try:
                    return await engine.complete(request, self._options(invoked, stop_words, i),
                                                 settings.ready_timeout, settings.request_timeout)
                except DeadlineExceeded:
                    return None  # this choice had nothing yet (e.g. waiting for a slot): the others are the answer

            completions = [c for c in await all_or_none([choice(i) for i in range(count)]) if c is not None]
            if not completions:
                raise DeadlineExceeded.after(settings.request_timeout)
        debug = self.settings.debug
        texts: list[str] = []
        for completion in completions:
            ended = line_mode.model_ended(completion.stop_reason, completion.stop_word, completion.saw_suffix,
                                          ctx.suffix)
            rejoined = line_mode.rejoined(completion.stop_reason, completion.stop_word, ctx.suffix)
            text = completion.text
            limited = completion.stop_reason in (StopReason.TOKEN_LIMIT, StopReason.TIME_BUDGET)
            hole = None if rejoined else line_mode.rejoined_later(text, ctx.line_prefix, ctx.suffix, limited)
            if hole is not None:
                text, ended, rejoined = hole, True, True
            kept = self.post.before_cache(text, ctx, ended, rejoined)
            if kept and settings.confidence_floor is not None:
                confidence = first_line_confidence(completion.text.replace("\r\n", "\n"),
                                                   completion.token_logprobs())
                if confidence is not None and confidence < settings.confidence_floor:
                    log.debug("model unsure of its first line (mean log-probability %.2f < %.2f)", confidence,
                              settings.confidence_floor)
                    kept = None
            log.debug("model gave %s (stop: %s, %s, %s) → %s", show_text(completion.text, debug),
                      completion.stop_reason.value, ctx.line_mode, "ended" if ended else "cut",
                      show_text(kept, debug) if kept is not None else "dropped")
            if kept:
                texts.append(kept)
        texts = _unique(texts)
        self.cache.put(ctx.uri, ctx.prefix, ctx.suffix, tuple(texts))
        log.debug("completion in %.0f ms, %d item(s)", (time.perf_counter() - started) * 1000, len(texts))
        return texts

    def finish(self, texts: list[str], ctx: CursorContext, source: str) -> list[Suggestion]:
        """Suggestions for `ctx` from texts kept before the cache (the model's, the cache's, a prefetch's, a
        generation joined in flight)."""
        out: list[Suggestion] = []
        for text in texts:
            final = self.post.after_cache(text, ctx)
            if final:
                out.append(Suggestion(final, self.post.replace_chars(final, ctx), source))
        unique: dict[str, Suggestion] = {}
        for s in out:
            unique.setdefault(s.text, s)
        suggestions = list(unique.values())
        self.cache.remember_shown(ctx.uri, ctx.prefix, ctx.suffix, tuple(s.text for s in suggestions))
        return suggestions

    async def complete(self, ctx: CursorContext, invoked: bool = False) -> list[Suggestion]:
        cached = self.lookup(ctx)
        if cached is not None:
            return cached
        return await self.generate(ctx, invoked)
