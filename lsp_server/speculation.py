"""Keeping suggestions up with typing: the glue between the inline-completion handler, generations in flight
(lsp_server/inflight.py) and the speculative prefetch (lsp_server/prefetch.py), plus the debounce rule for a
steady typing burst.

The handler asks three things: can this request be served by a generation already running (`join`), run a model
call for it (`model_call`), and an answer was sent (`answered`). Text-sync handlers report changes (`on_change`)."""

from __future__ import annotations

import asyncio
import ipaddress
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

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
                                     lambda: self.prefetch_decision().enabled)
        self._decision: tuple[Any, PrefetchDecision] | None = None
        #: The client has sent textDocument/didShowCompletion at least once: prefetch on that, not on answers.
        self.client_reports_shown = False
        self._last_answer: dict[str, tuple[CursorContext, Suggestion]] = {}
        self._last_model_call: float | None = None
        #: Requests the burst debounce let fire early (before the user pauses), and of those the ones that waited
        #: for the pause after all because a shared server was busy with others (`model_call`).
        self.early_calls = 0
        self.early_calls_held = 0

    def prefetch_decision(self) -> PrefetchDecision:
        """The decision for the current settings (made again only when they change)."""
        settings = self._server.settings
        if self._decision is None or self._decision[0] is not settings:
            self._decision = (settings, prefetch_decision(settings))
        return self._decision[1]

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

    async def model_call(self, ctx: CursorContext, invoked: bool,
                         wait_if_shared_busy_ms: float = 0.0) -> list[Suggestion]:
        """A new generation for `ctx`, held in flight so later requests can join it.

        `wait_if_shared_busy_ms` > 0: the call fires before the user pauses (`debounce_ms`), a bet that later
        keystrokes join it. On a model server others share, that bet takes a slot another user's request may need:
        when the server says it is busy with others, wait that much longer first (the pause the debounce would have
        waited for; a keystroke meanwhile supersedes the call)."""
        service = self._server.service
        assert service is not None
        if wait_if_shared_busy_ms > 0 and service.engine is not None:
            reason = await service.engine.shared_server_busy()
            if reason is not None:
                self.early_calls_held += 1
                self.prefetcher.events.append(("early-call-held", reason))
                await asyncio.sleep(wait_if_shared_busy_ms / 1000.0)
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
        item = _first_field(params, "item")
        text = _first_field(item, "insertText", "insert_text")
        if not isinstance(text, str):
            text = _first_field(text, "value")
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
        if min_ms < adaptive_ms:
            self.early_calls += 1
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
        out["early_calls"] = self.early_calls
        out["early_calls_held"] = self.early_calls_held
        out["speculation_events"] = [list(e) for e in self.prefetcher.events]
        out["prefetch_decision"] = self.prefetch_decision().describe()
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


def _first_field(obj: Any, *names: str) -> Any:
    """The first of `names` that `obj` (a dict or an object) has, e.g. "insertText" or "insert_text"; None without."""
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return None


#: Kinds that are model servers a user or a team runs (llama-server, vLLM, Ollama): a request costs no money. Every
#: other remote kind (openai/, deepseek/, mistral/) counts as a hosted vendor's API, billed per request, unless its
#: endpoint is on this machine or a local network or completion.self_hosted says otherwise (`prefetch_decision`).
SELF_HOSTED_KINDS = ("llama.cpp/", "vllm/", "ollama/")
#: Host names that only resolve on the machine or the local network.
LOCAL_NAMES = ("localhost", ".localhost", ".local", ".lan", ".home.arpa", ".internal")
#: RFC 6598 shared address space (carrier-grade NAT; Tailscale gives its machines addresses here): not `is_private`.
SHARED_SPACE = ipaddress.ip_network("100.64.0.0/10")


@dataclass(frozen=True)
class PrefetchDecision:
    """Whether speculative prefetch runs for the completion endpoint, and why (shown in the status and by
    `infill doctor`, so a user who loses prefetch knows which setting gives it back)."""

    enabled: bool
    self_hosted: bool
    reason: str

    def describe(self) -> str:
        return f"prefetch {'on' if self.enabled else 'off'}: {self.reason}"


def endpoint_locality(endpoint: str | None) -> str | None:
    """Why `endpoint` is on this machine or a local network ("loopback address 127.0.0.1", …); None when its host
    is a public address or a name that does not say (names are not resolved: that would block, and DNS may lie)."""
    if not endpoint:
        return None
    try:
        host = urlsplit(endpoint if "//" in endpoint else f"//{endpoint}").hostname
    except ValueError:
        return None
    if not host:
        return None
    host = host.lower().rstrip(".")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if host == "localhost" or host.endswith(LOCAL_NAMES):
            return f"local host name {host}"
        return None
    if address.is_loopback:
        return f"loopback address {host}"
    if address.is_link_local:
        return f"link-local address {host}"
    if address.is_private:
        return f"private network address {host}"
    if isinstance(address, ipaddress.IPv4Address) and address in SHARED_SPACE:
        return f"shared (CGNAT/VPN) address {host}"
    return None


def prefetch_decision(settings: ServerSettings) -> PrefetchDecision:
    """Prefetch costs a hosted vendor's user money and rate limit, and a self-hosted server's user nothing: it is
    on for Infill's own llama-server, the self-hosted kinds, and any endpoint on a loopback, link-local or private
    address or marked `self_hosted = true`; off for hosted vendors unless `speculation.prefetch_hosted` asks."""
    spec = settings.speculation
    cfg = settings.engine.completion
    if not spec.prefetch:
        return PrefetchDecision(False, cfg.kind == "local", "speculation.prefetch = false")
    if cfg.kind == "local":
        return PrefetchDecision(True, True, "Infill's own llama-server")
    endpoint = cfg.api_endpoint
    if cfg.self_hosted is not None:
        where = f"completion.self_hosted = {str(cfg.self_hosted).lower()}"
        self_hosted, reason = cfg.self_hosted, where
    elif cfg.kind.startswith(SELF_HOSTED_KINDS):
        self_hosted, reason = True, f"{cfg.kind} is a self-hosted server kind"
    else:
        locality = endpoint_locality(endpoint)
        if locality is not None:
            self_hosted, reason = True, f"the {cfg.kind} endpoint is self-hosted ({locality})"
        else:
            self_hosted = False
            reason = (f"the {cfg.kind} endpoint {endpoint or '(the vendor default)'} counts as a hosted API "
                      "(set completion.self_hosted = true if it is yours)")
    if self_hosted:
        return PrefetchDecision(True, True, reason)
    if spec.prefetch_hosted:
        return PrefetchDecision(True, False, f"{reason}; speculation.prefetch_hosted = true")
    return PrefetchDecision(False, False, f"{reason}; each prefetch would be a billed request "
                                          "(speculation.prefetch_hosted = true turns it on)")


def prefetch_enabled(settings: ServerSettings) -> bool:
    return prefetch_decision(settings).enabled
