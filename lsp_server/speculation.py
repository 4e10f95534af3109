"""Keeping suggestions up with typing: the glue between the inline-completion handler, generations in flight
(lsp_server/inflight.py) and the speculative prefetch (lsp_server/prefetch.py), plus the debounce rule for a
steady typing burst.

The handler asks three things: can this request be served by a generation already running (`join`), run a model
call for it (`model_call`), and an answer was sent (`answered`). Text-sync handlers report changes (`on_change`)."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any, Protocol

from .context import build_context
from .documents import UTF32, Document
from .inflight import Flight, InflightGenerations
from .pipeline import Suggestion
from .prefetch import Prefetcher
from .secrets import uri_to_path

if TYPE_CHECKING:
    from .config import ServerSettings
    from .context import CursorContext
    from .documents import DocumentStore
    from .pipeline import CompletionService


class Host(Protocol):
    """What speculation reads of the server (the server owns it; naming InfillServer here would be an import
    circle)."""

    @property
    def settings(self) -> ServerSettings: ...

    documents: DocumentStore
    service: CompletionService | None


class Speculation:
    def __init__(self, server: Host, clock: Callable[[], float] = time.monotonic) -> None:
        self._server = server
        self._clock = clock
        self.inflight = InflightGenerations()
        self.prefetcher = Prefetcher(lambda: server.service, self._hypothetical_context, self.inflight,
                                     lambda: prefetch_enabled(server.settings))
        #: The client has sent textDocument/didShowCompletion at least once: prefetch on that, not on answers.
        self.client_reports_shown = False
        self._last_answer: dict[str, tuple[CursorContext, Suggestion]] = {}
        self._last_model_call: float | None = None

    # --- requests ----------------------------------------------------------------------------------------------

    def join(self, ctx: CursorContext, invoked: bool) -> Join | None:
        """Work that serves `ctx` from a running generation (a prefetch or the document's last model call) whose
        text so far fits what was typed since; None when there is none. Decided (and the generation held) now,
        before the older request is superseded; the caller must `release()` it when the request ends."""
        settings = self._server.settings
        if invoked or not settings.speculation.reuse_inflight:
            return None
        limit = settings.typing_through_max
        found = self.prefetcher.joinable(ctx, limit) or self.inflight.joinable(ctx, limit)
        if found is None:
            return None
        flight, typed = found
        flight.waiters += 1
        return Join(self, flight, ctx, typed)

    async def model_call(self, ctx: CursorContext, invoked: bool) -> list[Suggestion]:
        """A new generation for `ctx`, held in flight so later requests can join it."""
        service = self._server.service
        assert service is not None
        self.prefetcher.before_model_call(ctx)
        self.prefetcher.events.append(("model-call", ctx.uri))
        self._last_model_call = self._clock()
        flight = self.inflight.start(ctx, invoked,
                                     lambda on_text: service.compute(ctx, invoked, on_text=on_text))
        try:
            assert flight.task is not None
            texts = await asyncio.shield(flight.task)
        finally:
            self._release(flight)
        return service.finish(texts, ctx, "model")

    def _release(self, flight: Flight) -> None:
        if flight.speculative:
            flight.waiters -= 1
        else:
            self.inflight.release(flight)

    def answered(self, ctx: CursorContext, suggestions: list[Suggestion]) -> None:
        """An answer is being sent; a client that does not report showing shows it now."""
        if not suggestions:
            return
        self._last_answer[ctx.uri] = (ctx, suggestions[0])
        if not self.client_reports_shown and self._current(ctx):  # an editor drops answers for an older text
            self.prefetcher.on_shown(ctx, suggestions[0].text, suggestions[0].replace_chars, self._tail(ctx))

    def _current(self, ctx: CursorContext) -> bool:
        """The document still holds `ctx`'s window at its place (read in O(window), never the whole file)."""
        doc = self._server.documents.get(ctx.uri)
        start = ctx.offset - len(ctx.prefix)
        return doc is not None and start >= 0 and \
            doc.text_range(start, ctx.offset + len(ctx.suffix)) == ctx.prefix + ctx.suffix

    def _tail(self, ctx: CursorContext) -> int:
        doc = self._server.documents.get(ctx.uri)
        return 0 if doc is None else max(0, doc.char_count - ctx.offset - len(ctx.suffix))

    def note_cache_hit(self, ctx: CursorContext) -> None:
        self.prefetcher.note_cache_hit(ctx)

    # --- notifications -----------------------------------------------------------------------------------------

    def on_did_show(self, params: Any) -> None:
        """`textDocument/didShowCompletion {item}`: prefetch for the item if it is the last answer's first item and
        the document is still in the state it was given for."""
        self.client_reports_shown = True
        item = _get(params, "item")
        text = _get(item, "insertText", "insert_text")
        if not isinstance(text, str):
            text = _get(text, "value")
        for ctx, suggestion in self._last_answer.values():
            if suggestion.text != text:
                continue
            if self._current(ctx):
                self.prefetcher.on_shown(ctx, suggestion.text, suggestion.replace_chars, self._tail(ctx))
            return

    def on_change(self, uri: str, doc: Document | None) -> None:
        """The document changed (None: closed). The prefetch target's window is read in O(window)."""
        target = self.prefetcher.target
        if doc is None or target is None or target.uri != uri:
            self.prefetcher.on_change(uri, None if doc is None else "")
        else:
            end = doc.char_count - target.tail
            self.prefetcher.on_change(uri, doc.text_range(target.start, end) if end >= target.start else None)
        if doc is None:
            self.inflight.forget(uri)
            self._last_answer.pop(uri, None)

    # --- debounce ----------------------------------------------------------------------------------------------

    def debounce_ms(self, adaptive_ms: float, min_ms: float, latencies_ms: list[float],
                    ctx: CursorContext | None = None) -> float:
        """Within a steady typing burst the adaptive debounce never fires (it waits for a pause). When the model
        is idle and the last call is at least a typical call's time ago, fire after `min_ms`: the keystrokes that
        follow join that generation while it fits what they type (at most one call per model latency).
        Only at a word boundary: in the middle of a word the prompt ends inside a token, and models complete such
        prompts poorly (measured with the default model: a quarter of mid-word completions were right for even
        three characters)."""
        if not self._server.settings.speculation.reuse_inflight:
            return adaptive_ms  # without joining, an early call would be superseded by the next keystroke
        if self.inflight.busy() or (self.prefetcher.flight is not None and self.prefetcher.flight.running):
            return adaptive_ms
        if ctx is not None and ctx.line_prefix[-1:].isalnum():
            return adaptive_ms
        typical = statistics.median(latencies_ms) if latencies_ms else adaptive_ms
        if self._last_model_call is not None and (self._clock() - self._last_model_call) * 1000.0 < typical:
            return adaptive_ms
        return min(adaptive_ms, float(min_ms))

    # --- the hypothetical accepted state -----------------------------------------------------------------------

    def _hypothetical_context(self, uri: str, prefix: str, suffix: str, start: int = 0) -> CursorContext | None:
        """The context of the document state `prefix + suffix`, a window starting at offset `start` of the real
        document: its line is the real document's (the workspace context is chosen for that line)."""
        real = self._server.documents.get(uri)
        if real is None:
            return None
        settings = self._server.settings
        doc = Document(uri, prefix + suffix, real.language_id, real.version)
        line, column = doc.position_at(len(prefix), UTF32)
        ctx = build_context(doc, line, column, UTF32, policy=settings.multiline, indent_unit=settings.indent_unit,
                            filepath=uri_to_path(uri))
        return replace(ctx, line=ctx.line + real.position_at(start, UTF32)[0]) if start else ctx

    def stats(self) -> dict[str, Any]:
        out = {f"prefetch_{k}": v for k, v in asdict(self.prefetcher.stats).items()}
        out["reused_inflight"] = self.inflight.reused
        out["speculation_events"] = [list(e) for e in self.prefetcher.events]
        return out

    async def close(self) -> None:
        await self.prefetcher.close()


class Join:
    """A request waiting for a generation in flight; holds it (one waiter) until `release()`."""

    def __init__(self, owner: Speculation, flight: Flight, ctx: CursorContext, typed: str) -> None:
        self._owner = owner
        self._flight = flight
        self._ctx = ctx
        self._typed = typed
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._owner._release(self._flight)

    async def __call__(self) -> list[Suggestion]:
        ctx, flight = self._ctx, self._flight
        try:
            rests = await flight.rests_after(self._typed)
        finally:
            self.release()
        service = self._owner._server.service
        if rests and service is not None:
            # Already cut where the suggestion may end (line_mode), for the flight's context, as typing-through
            # a shown suggestion is; a prefetched next line stays whole.
            suggestions = service.finish(rests, ctx, "prefetch" if flight.speculative else "in-flight")
            if suggestions:
                if not flight.speculative:
                    self._owner.inflight.reused += 1
                return suggestions
        return await self._owner.model_call(ctx, False)


def _get(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return None


#: Kind prefixes of hosted vendor APIs (billed per request): see SpeculationSettings.prefetch_hosted.
HOSTED_KINDS = ("openai/", "azure/", "deepseek/", "mistral/")


def prefetch_enabled(settings: ServerSettings) -> bool:
    spec = settings.speculation
    hosted = settings.engine.completion.kind.startswith(HOSTED_KINDS)
    return spec.prefetch and (spec.prefetch_hosted or not hosted)
