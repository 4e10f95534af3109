"""The completion flow shared by the LSP server and `infill complete`: cache and typing-through → engine →
post-processing → suggestions with their replace range.

Nothing here knows about JSON-RPC; the server turns Suggestions into InlineCompletionItems. Keeping one pipeline
means `infill complete` prints exactly what an editor would show."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

from engine.api import Engine, StatusEvent
from engine.types import CompletionOptions, CompletionRequest

from .cache import CompletionCache
from .config import ServerSettings, engine_changed
from .context import CursorContext
from .logging_setup import show_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Suggestion:
    text: str
    #: How many characters of the line's rest after the cursor the suggestion replaces (auto-closed brackets).
    replace_chars: int = 0
    source: str = "model"  # model | cache | typing-through


# --- post-processing (written in lsp_server/postprocess; guarded so this module works before it lands) -------------

def _load_postprocess() -> Any | None:
    try:
        from . import postprocess
    except Exception as exc:  # pragma: no cover - only while the package is being written
        log.warning("post-processing unavailable (%s); suggestions are shown unfiltered", exc)
        return None
    needed = ("PostprocessContext", "before_cache", "after_cache", "replace_range_end")
    return postprocess if all(hasattr(postprocess, name) for name in needed) else None


class Postprocessor:
    def __init__(self) -> None:
        self._pp = _load_postprocess()

    def _ctx(self, ctx: CursorContext) -> Any:
        return self._pp.PostprocessContext(prefix=ctx.prefix, suffix=ctx.suffix, language=ctx.language,
                                           indent_unit=ctx.indent_unit, multiline=ctx.multiline)

    def before_cache(self, text: str, ctx: CursorContext) -> str | None:
        if self._pp is None:
            return text if text.strip() else None
        return self._pp.before_cache(text, self._ctx(ctx))

    def after_cache(self, text: str, ctx: CursorContext) -> str | None:
        if self._pp is None:
            return text if text.strip() else None
        return self._pp.after_cache(text, self._ctx(ctx))

    def replace_chars(self, text: str, ctx: CursorContext) -> int:
        if self._pp is None:
            return 0
        return max(0, min(len(ctx.line_rest), int(self._pp.replace_range_end(text, self._ctx(ctx)))))


def single_line(text: str) -> str:
    cut = min((i for i in (text.find("\n"), text.find("\r")) if i >= 0), default=-1)
    return text if cut < 0 else text[:cut]


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

    # --- lifecycle ---------------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.engine is None:
            self.engine = self._engine_factory(self.settings.engine, self._on_status)
        await self.engine.start()

    async def apply_settings(self, new: ServerSettings) -> bool:
        """Apply new settings; returns True when the engine was restarted (model, backend or languages changed)."""
        old = self.settings
        self.settings = new
        self.cache.max_entries = new.cache_size
        self.cache.ttl = new.cache_ttl
        self.cache.typing_through_max = new.typing_through_max
        if new != old:  # token budget, multi-line policy, … change what a cached answer would be
            self.cache.clear()
        if not engine_changed(old, new) or self.engine is None:
            return False
        previous, self.engine = self.engine, None
        self.cache.clear()
        await previous.close()
        await self.start()
        return True

    async def close(self) -> None:
        if self.engine is not None:
            engine, self.engine = self.engine, None
            await engine.close()

    # --- requests ----------------------------------------------------------------------------------------------

    def lookup(self, ctx: CursorContext) -> list[Suggestion] | None:
        """Suggestions without a model call: typing through the shown suggestion, or an exact cache hit."""
        rests = self.cache.typing_through(ctx.uri, ctx.prefix, ctx.suffix)
        if rests:
            texts = [single_line(t) if not ctx.multiline else t for t in rests]
            return [Suggestion(t, self.post.replace_chars(t, ctx), "typing-through") for t in texts if t]
        cached = self.cache.get(ctx.uri, ctx.prefix, ctx.suffix)
        if cached is not None:
            return self._finish(list(cached), ctx, "cache")
        return None

    def _options(self, invoked: bool, multiline: bool, index: int, speculative: bool = False,
                 next_line: bool = False) -> CompletionOptions:
        s = self.settings
        several = invoked and s.invoked_choices > 1
        budget = s.speculation.invoked_time_budget_ms if invoked else s.speculation.time_budget_ms
        if next_line:
            multiline, budget = True, 0  # a time box of 0 keeps exactly the first line with content
        kwargs: dict[str, Any] = {
            "max_decoding_tokens": s.max_tokens,
            "sampling_temperature": s.invoked_temperature if several else s.temperature,
            "stop_words": () if multiline else ("\n",),
            "time_budget_ms": budget if budget or next_line else None,
        }
        if several:
            kwargs["seed"] = int(time.time() * 1000) % 2**31 + index
        if speculative and self.engine is not None:
            kwargs["slot"] = self.engine.speculative_slot
        return CompletionOptions(**kwargs)

    async def generate(self, ctx: CursorContext, invoked: bool = False) -> list[Suggestion]:
        """Ask the model (one choice, or several for invoked requests), post-process, cache."""
        return self._finish(await self.compute(ctx, invoked), ctx, "model")

    def finish(self, texts: list[str], ctx: CursorContext, source: str) -> list[Suggestion]:
        """Suggestions for `ctx` from texts kept before the cache (a prefetch, a generation joined in flight)."""
        return self._finish(texts, ctx, source)

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
        completions = None
        if count > 1:  # alternatives from one prefill where the backend can
            completions = await engine.complete_choices(request, self._options(invoked, ctx.multiline, 0),
                                                        count, self.settings.ready_timeout)
        if completions is not None:
            self.model_calls += 1
        elif count == 1:
            self.model_calls += 1
            completions = [await engine.complete(request, self._options(invoked, ctx.multiline, 0, speculative,
                                                                        next_line),
                                                 self.settings.ready_timeout, on_text=on_text)]
        else:
            self.model_calls += count
            completions = await asyncio.gather(*(
                engine.complete(request, self._options(invoked, ctx.multiline, i), self.settings.ready_timeout)
                for i in range(count)))
        debug = self.settings.debug
        texts: list[str] = []
        for completion in completions:
            raw = completion.text if ctx.multiline else single_line(completion.text)
            kept = self.post.before_cache(raw, ctx)
            log.debug("model gave %s (stop: %s) → %s", show_text(completion.text, debug),
                      completion.stop_reason.value, show_text(kept, debug) if kept is not None else "dropped")
            if kept:
                texts.append(kept)
        texts = _unique(texts)
        self.cache.put(ctx.uri, ctx.prefix, ctx.suffix, tuple(texts))
        log.debug("completion in %.0f ms, %d item(s)", (time.perf_counter() - started) * 1000, len(texts))
        return texts

    def _finish(self, texts: list[str], ctx: CursorContext, source: str) -> list[Suggestion]:
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
