"""Speculation without a model: prefetch of the accepted state, joining generations in flight, the burst debounce.

A scripted engine stands in for llama-server so that every step is decided by the test (which text the generation
has produced, when it ends); the assertions count events and engine calls, never time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from engine.types import Completion, CompletionOptions, CompletionRequest, StopReason
from lsp_server.config import ServerSettings
from lsp_server.context import build_context
from lsp_server.documents import UTF32, DocumentStore
from lsp_server.pipeline import CompletionService, Suggestion
from lsp_server.prefetch import Target
from lsp_server.speculation import Speculation

URI = "file:///work/a.py"
TEXT = "def add(a, b):\n    return \n\nprint(add(1, 2))\n"
CURSOR = TEXT.index("return ") + len("return ")


@dataclass
class Call:
    request: CompletionRequest
    options: CompletionOptions
    on_text: Callable[[str], None] | None
    future: asyncio.Future
    cancelled: bool = False


@dataclass
class ScriptedEngine:
    """Each `complete` waits until the test resolves its future; the log records starts and cancellations."""

    log: list[tuple[str, str]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    #: What a shared model server would say (`Engine.shared_server_busy`): None, not busy with others.
    busy: str | None = None

    async def start(self) -> None:
        pass

    async def shared_server_busy(self) -> str | None:
        return self.busy

    async def close(self) -> None:
        pass

    async def complete(self, request: CompletionRequest, options: CompletionOptions, ready_timeout: float = 120.0,
                       deadline: float | None = None, on_text: Callable[[str], None] | None = None) -> Completion:
        call = Call(request, options, on_text, asyncio.get_running_loop().create_future())
        self.calls.append(call)
        kind = "speculative" if options.speculative else "user"
        self.log.append((f"engine-start-{kind}", request.prefix[CURSOR:]))
        try:
            text = await call.future
        except asyncio.CancelledError:
            call.cancelled = True
            self.log.append((f"engine-cancelled-{kind}", request.prefix[CURSOR:]))
            raise
        return Completion(text=text, stop_reason=StopReason.STOP_WORD)


def make(settings: ServerSettings | None = None) -> tuple[Speculation, ScriptedEngine, Any]:
    settings = settings or ServerSettings()
    engine = ScriptedEngine()
    service = CompletionService(settings, engine_factory=lambda config, on_status: engine)
    server = SimpleNamespace(service=service, settings=settings, documents=DocumentStore())
    server.documents.open(URI, TEXT, "python", 1)
    return Speculation(server), engine, server


def ctx_after(server: Any, typed: str):
    """The cursor context after typing `typed` at the cursor (the document updated as a client would)."""
    doc = server.documents.get(URI)
    doc.apply_change(TEXT[:CURSOR] + typed + TEXT[CURSOR:], None)
    line, column = doc.position_at(CURSOR + len(typed), UTF32)
    return build_context(doc, line, column, UTF32, filepath="/work/a.py")


def doc_after(server: Any, typed: str):
    """The document after typing `typed` at the cursor, as the server's didChange handler hands it on."""
    ctx_after(server, typed)
    return server.documents.get(URI)


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until `condition` holds (counted turns, not time)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


async def test_prefetch_is_speculative_for_the_accepted_state_and_fills_the_cache():
    spec, engine, server = make()
    ctx = ctx_after(server, "")
    spec.answered(ctx, [Suggestion("a + b")])  # a client that does not report showing: prefetch on the answer
    await until(lambda: engine.calls)
    call = engine.calls[0]
    assert call.request.prefix == TEXT[:CURSOR] + "a + b" and call.options.speculative
    call.future.set_result("  # the sum")
    await until(lambda: spec.prefetcher.stats.completed == 1)
    accepted = ctx_after(server, "a + b")  # Tab
    served = server.service.lookup(accepted)
    assert served is not None and served[0].text == "  # the sum" and served[0].source == "cache"
    assert len(engine.calls) == 1


async def test_prefetch_cancelled_when_the_document_diverges_and_not_while_typing_the_suggestion():
    spec, engine, server = make()
    spec.answered(ctx_after(server, ""), [Suggestion("a + b")])
    await until(lambda: engine.calls)
    for typed in ("a", "a +"):  # typing the suggestion's own characters keeps the accepted state ahead
        spec.on_change(URI, doc_after(server, typed))
    assert spec.prefetcher.stats.cancelled == 0
    spec.on_change(URI, doc_after(server, "a -"))
    assert spec.prefetcher.stats.cancelled == 1
    await until(lambda: engine.calls[0].cancelled)
    spec.on_change(URI, doc_after(server, "a - "))  # the next message finds none running
    assert spec.prefetcher.stats.stale_running == 0
    assert [e for e, _ in engine.log] == ["engine-start-speculative", "engine-cancelled-speculative"]


async def test_a_cancelled_prefetch_counts_as_stale_only_if_it_swallows_its_cancellation():
    """Two didChange messages read from one buffer are handled in the same loop turn, before the cancelled task has
    run: that is not a stale prefetch, nor is one whose close takes long. One that ignores its cancellation and runs
    on to a result is (a count of events, not of time: a loaded machine may take long to close a socket)."""
    spec, engine, server = make()
    spec.answered(ctx_after(server, ""), [Suggestion("a + b")])
    await until(lambda: engine.calls)
    spec.on_change(URI, doc_after(server, "x"))
    spec.on_change(URI, doc_after(server, "xy"))  # same turn: the cancelled task has not run yet
    await until(lambda: engine.calls[0].cancelled and not spec.prefetcher._watchers)
    assert spec.prefetcher.stats.cancelled == 1 and spec.prefetcher.stats.stale_running == 0

    release = asyncio.Event()
    entered: list[bool] = []

    async def stubborn(*args: Any, **kwargs: Any) -> Completion:
        entered.append(True)
        while True:
            try:
                await release.wait()
                return Completion(text="late", stop_reason=StopReason.STOP_WORD)
            except asyncio.CancelledError:
                continue  # keeps generating for nobody

    engine.complete = stubborn  # type: ignore[method-assign]
    spec.answered(ctx_after(server, "z"), [Suggestion("z2")])
    await until(lambda: bool(entered))
    spec.on_change(URI, doc_after(server, "zq"))
    await until(lambda: spec.prefetcher.stats.cancelled == 2)
    for _ in range(500):  # many loop turns: still closing, still no fault
        await asyncio.sleep(0)
    assert spec.prefetcher.stats.stale_running == 0 and spec.prefetcher._watchers
    flight = spec.prefetcher.flight
    release.set()
    await spec.prefetcher.close()  # waits for the late task
    assert flight is not None and flight.task is not None and flight.task.done()
    assert spec.prefetcher.stats.stale_running == 1 and not spec.prefetcher._watchers


async def test_in_a_long_file_the_path_is_checked_on_the_window_around_the_cursor():
    """The context is a window of the document: typing the suggestion 200 KB into a file keeps the prefetch, an edit
    that leaves the path cancels it, and an edit far outside the window (changing where the window lies) too."""
    spec, engine, server = make()
    head = "x = 1\n" * 40_000
    doc = server.documents.get(URI)
    doc.apply_change(head + TEXT, None)

    def ctx_typed(typed: str):
        doc.apply_change(head + TEXT[:CURSOR] + typed + TEXT[CURSOR:], None)
        line, column = doc.position_at(len(head) + CURSOR + len(typed), UTF32)
        return build_context(doc, line, column, UTF32, filepath="/work/a.py")

    shown = ctx_typed("")
    assert shown.offset - len(shown.prefix) > 0  # the window does not start at the top of the file
    spec.answered(shown, [Suggestion("a + b")])
    await until(lambda: engine.calls)
    for typed in ("a", "a +"):
        ctx_typed(typed)
        spec.on_change(URI, doc)
    assert spec.prefetcher.stats.cancelled == 0
    ctx_typed("a -")
    spec.on_change(URI, doc)
    assert spec.prefetcher.stats.cancelled == 1


async def test_in_a_long_file_the_prefetch_context_is_for_the_real_line():
    """The accepted state is built from the request's window, but its line is the document's: the workspace context
    is chosen for it (a prefetch at line 40,001 chose context for a line near the window's top)."""
    spec, engine, server = make()
    head = "x = 1\n" * 40_000
    doc = server.documents.get(URI)
    doc.apply_change(head + TEXT, None)
    line, column = doc.position_at(len(head) + CURSOR, UTF32)
    shown = build_context(doc, line, column, UTF32, filepath="/work/a.py")
    assert shown.offset - len(shown.prefix) > 0 and shown.line == 40_001
    spec.answered(shown, [Suggestion("a + b")])
    await until(lambda: engine.calls)
    assert spec.prefetcher.flight is not None and spec.prefetcher.flight.ctx.line == 40_001


async def test_prefetch_yields_before_a_user_model_call_and_never_starts_during_one():
    spec, engine, server = make()
    spec.answered(ctx_after(server, ""), [Suggestion("a + b")])
    await until(lambda: engine.calls)
    elsewhere = ctx_after(server, "max(")  # the user went another way: a model call is needed
    user = asyncio.ensure_future(spec.model_call(elsewhere, False))
    await until(lambda: len(engine.calls) == 2)
    # The guess was cancelled before the user's generation began: they never compete.
    assert [e for e, _ in engine.log] == ["engine-start-speculative", "engine-cancelled-speculative",
                                          "engine-start-user"]
    spec.answered(elsewhere, [Suggestion("a, b)")])  # shown while the user's generation still runs (other doc)
    assert spec.prefetcher.stats.skipped_busy == 1 and len(engine.calls) == 2
    engine.calls[1].future.set_result("a, b)")
    assert [s.text for s in await user] == ["a, b)"]


async def test_a_request_for_the_accepted_state_joins_the_running_prefetch():
    spec, engine, server = make()
    spec.answered(ctx_after(server, ""), [Suggestion("a + b")])
    await until(lambda: engine.calls)
    accepted = ctx_after(server, "a + b")
    spec.on_change(URI, server.documents.get(URI))
    join = spec.join(accepted, invoked=False)
    assert join is not None
    waiting = asyncio.ensure_future(join())
    spec.prefetcher.cancel("a later divergence check")  # a waiting user request makes it no longer a guess
    assert spec.prefetcher.stats.cancelled == 0
    engine.calls[0].future.set_result("  # the sum")
    assert [s.text for s in await waiting] == ["  # the sum"]
    assert [s.source for s in server.service.lookup(accepted) or []] == ["cache"]
    assert len(engine.calls) == 1 and spec.prefetcher.stats.joined == 1


async def test_typing_what_the_generation_produced_reuses_it():
    spec, engine, server = make()
    first = ctx_after(server, "")
    older = asyncio.ensure_future(spec.model_call(first, False))
    await until(lambda: engine.calls)
    engine.calls[0].on_text("a + b")  # streamed so far
    typed = ctx_after(server, "a +")
    join = spec.join(typed, invoked=False)
    assert join is not None
    newer = asyncio.ensure_future(join())
    older.cancel()  # the older request is superseded by the newer one
    await until(older.done)
    assert not engine.calls[0].cancelled  # somebody still waits for the generation
    engine.calls[0].future.set_result("a + b")
    assert [(s.text, s.source) for s in await newer] == [(" b", "in-flight")]
    assert len(engine.calls) == 1 and spec.inflight.reused == 1


async def test_typing_what_the_generation_shows_joins_it_when_the_shown_text_drops_a_leading_space():
    """After "return " the model's own leading space is not shown (the item would give two spaces): the user who
    types the item's first characters types what the generation produced, and its rest serves the request."""
    spec, engine, server = make()
    older = asyncio.ensure_future(spec.model_call(ctx_after(server, ""), False))
    await until(lambda: engine.calls)
    engine.calls[0].on_text(" a + b")
    join = spec.join(ctx_after(server, "a"), invoked=False)
    assert join is not None
    newer = asyncio.ensure_future(join())
    older.cancel()
    await until(older.done)
    engine.calls[0].future.set_result(" a + b")
    assert [(s.text, s.source) for s in await newer] == [(" + b", "in-flight")]
    assert len(engine.calls) == 1 and spec.inflight.reused == 1
    # Typing the space itself is not typing what is shown ("return  a"): no waiting for this generation.
    again = asyncio.ensure_future(spec.model_call(ctx_after(server, ""), False))
    await until(lambda: len(engine.calls) == 2)
    engine.calls[1].on_text(" a + b")
    assert spec.join(ctx_after(server, " a"), invoked=False) is None
    engine.calls[1].future.set_result(" a + b")
    await again


async def test_a_generation_that_contradicts_the_typing_is_dropped_for_a_fresh_one():
    spec, engine, server = make()
    older = asyncio.ensure_future(spec.model_call(ctx_after(server, ""), False))
    await until(lambda: engine.calls)
    engine.calls[0].on_text("a")
    assert spec.join(ctx_after(server, "b"), invoked=False) is None  # typed something it did not produce
    join = spec.join(ctx_after(server, "a "), invoked=False)
    assert join is not None  # nothing contradicts "a " yet
    newer = asyncio.ensure_future(join())
    older.cancel()
    await until(older.done)
    engine.calls[0].on_text("a*b")  # now it does: the newer request stops waiting and asks afresh
    await until(lambda: len(engine.calls) == 2)
    await until(lambda: engine.calls[0].cancelled)  # nobody waits for the old generation any more
    assert engine.calls[1].request.prefix.endswith("return a ")
    engine.calls[1].future.set_result("+ b")
    assert [(s.text, s.source) for s in await newer] == [("+ b", "model")]
    assert spec.inflight.reused == 0  # joined, but served by a model call of its own
    assert spec.join(ctx_after(server, "a "), invoked=True) is None  # an invoked request never joins


async def test_no_waiter_left_cancels_the_user_generation():
    spec, engine, server = make()
    older = asyncio.ensure_future(spec.model_call(ctx_after(server, ""), False))
    await until(lambda: engine.calls)
    older.cancel()
    await until(lambda: engine.calls[0].cancelled)
    assert not spec.inflight.busy()


def test_target_path():
    target = Target(URI, "x = ", "f(1)", ")\n", "\n")
    assert target.on_path("x = )\n") and target.on_path("x = f()\n") and target.on_path("x = f(1)\n")
    assert not target.on_path("x = g)\n") and not target.on_path("x = f(2)\n")


def test_burst_debounce_fires_early_only_when_the_model_is_idle():
    now = [100.0]
    spec, _, _ = make()
    spec._clock = lambda: now[0]
    assert spec.debounce_ms(150.0, 25, [300.0]) == 25.0  # idle, no call yet
    spec._last_model_call = 99.9  # 100 ms ago, a call takes 300 ms: keep waiting for a pause
    assert spec.debounce_ms(150.0, 25, [300.0]) == 150.0
    now[0] = 100.5
    assert spec.debounce_ms(150.0, 25, [300.0]) == 25.0



async def test_after_a_line_is_completed_the_prefetch_asks_for_the_next_line():
    spec, engine, server = make()
    ctx = ctx_after(server, "")
    spec.answered(ctx, [Suggestion("a + b")])  # accepting it ends the line: `    return a + b`
    await until(lambda: engine.calls)
    call = engine.calls[0]
    assert call.options.time_budget_ms == 0 and "\n" not in call.options.stop_words  # one line, the next one
    call.future.set_result("\n\n\nassert add(2, 2) == 4")  # (a line after the `return` would be dead code)
    await until(lambda: spec.prefetcher.stats.completed == 1)
    served = server.service.lookup(ctx_after(server, "a + b"))
    assert served is not None and served[0].text == "\n\n\nassert add(2, 2) == 4"


async def test_an_early_call_waits_for_the_pause_while_a_shared_server_is_busy_with_others():
    """The in-burst call is a bet that later keystrokes join it; on a server others fill it waits for the pause."""
    spec, engine, server = make()
    await server.service.start()
    engine.busy = "2 of 2 slots busy"
    task = asyncio.ensure_future(spec.model_call(ctx_after(server, ""), False, wait_if_shared_busy_ms=1.0))
    await until(lambda: engine.calls)
    assert spec.early_calls_held == 1
    events = [e[0] for e in spec.prefetcher.events]
    assert events.index("early-call-held") < events.index("model-call")
    engine.calls[0].future.set_result("a + b")
    await task
    # Not busy, or a call that is not early: no wait.
    engine.busy = None
    task = asyncio.ensure_future(spec.model_call(ctx_after(server, ""), False, wait_if_shared_busy_ms=1.0))
    await until(lambda: len(engine.calls) == 2)
    engine.calls[1].future.set_result("a + b")
    await task
    engine.busy = "2 of 2 slots busy"
    task = asyncio.ensure_future(spec.model_call(ctx_after(server, "a"), False))
    await until(lambda: len(engine.calls) == 3)
    engine.calls[2].future.set_result(" + b")
    await task
    assert spec.early_calls_held == 1 and spec.stats()["early_calls_held"] == 1


def test_burst_debounce_waits_in_the_middle_of_a_word():
    spec, _, server = make()
    assert spec.debounce_ms(150.0, 25, [300.0], ctx_after(server, "a")) == 150.0
    assert spec.debounce_ms(150.0, 25, [300.0], ctx_after(server, "a.")) == 25.0


async def test_a_client_that_reports_showing_triggers_the_prefetch_once_per_accepted_state():
    spec, engine, server = make()
    ctx = ctx_after(server, "")
    spec.on_did_show({"item": {"insertText": "nothing was answered"}})  # the client reports showing
    spec.answered(ctx, [Suggestion("a + b")])
    for _ in range(10):
        await asyncio.sleep(0)
    assert not engine.calls  # it waits for the client to say it showed the item
    spec.on_did_show({"item": {"insertText": "a + b"}})
    spec.on_did_show({"item": {"insertText": "a + b"}})
    await until(lambda: engine.calls)
    assert spec.prefetcher.stats.started == 1
    typed = ctx_after(server, "a")  # typing through: the rest is shown, the accepted state is the same
    spec.answered(typed, [Suggestion(" + b")])
    spec.on_did_show({"item": {"insertText": " + b"}})
    assert spec.prefetcher.stats.started == 1 and len(engine.calls) == 1


async def test_an_answer_for_an_older_text_starts_no_prefetch():
    spec, _, server = make()
    ctx = ctx_after(server, "")
    ctx_after(server, "x")  # the user typed on before the answer was sent
    spec.answered(ctx, [Suggestion("a + b")])
    assert spec.prefetcher.stats.started == 0


def test_prefetch_is_off_by_default_for_hosted_vendor_apis_only():
    from engine.config import EngineConfig, ModelConfig
    from lsp_server.config import SpeculationSettings
    from lsp_server.speculation import prefetch_enabled

    def settings(kind: str, **speculation) -> ServerSettings:
        return ServerSettings(engine=EngineConfig(completion=ModelConfig(kind=kind)),
                              speculation=SpeculationSettings(**speculation))

    assert prefetch_enabled(settings("local"))
    assert prefetch_enabled(settings("vllm/completion"))
    assert not prefetch_enabled(settings("openai/completion"))  # each prefetch is a billed request
    assert prefetch_enabled(settings("openai/completion", prefetch_hosted=True))
    assert not prefetch_enabled(settings("local", prefetch=False))
