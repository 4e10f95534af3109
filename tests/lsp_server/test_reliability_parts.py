"""Request handling pieces: parallel choices end together, settings roll back, a waiting request keeps its text."""

from __future__ import annotations

import asyncio

from types import SimpleNamespace as types_namespace

import pytest
from lsprotocol import types

from lsp_server.config import SettingsStore
from lsp_server.pipeline import all_or_none
from lsp_server.inline_completion import handle_inline_completion
from lsp_server.server import build_server


async def test_one_failing_choice_cancels_the_others():
    cancelled = []

    async def slow(i: int):
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    async def fail():
        await asyncio.sleep(0)
        raise RuntimeError("backend failed")

    with pytest.raises(RuntimeError):
        await all_or_none([slow(0), fail(), slow(2)])
    assert sorted(cancelled) == [0, 2]


async def test_a_superseded_request_cancels_every_choice():
    started, cancelled = [], []

    async def slow(i: int):
        started.append(i)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    task = asyncio.ensure_future(all_or_none([slow(i) for i in range(3)]))
    while len(started) < 3:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == [0, 1, 2]


async def test_all_or_none_keeps_the_order():
    async def value(i: int):
        await asyncio.sleep(0)
        return i

    assert await all_or_none([value(i) for i in range(4)]) == [0, 1, 2, 3]


def test_settings_rollback():
    store = SettingsStore()
    state = store.checkpoint()
    store.update("change", {"max_tokens": 7})
    assert store.current.max_tokens == 7
    store.rollback(state)
    assert store.current.max_tokens == 64 and store.merged() == {}


class RecordingService:
    def __init__(self):
        self.contexts = []

    def lookup(self, ctx):
        return None

    async def generate(self, ctx, invoked):
        self.contexts.append(ctx)
        return []

    async def compute(self, ctx, invoked, **kwargs):  # the speculation layer's entry (lsp_server/speculation.py)
        self.contexts.append(ctx)
        return []

    def finish(self, texts, ctx, source):
        return []


async def test_a_request_waiting_for_the_config_lock_uses_its_own_document_version(monkeypatch):
    ls = build_server()
    ls.load()
    monkeypatch.setattr(type(ls), "encoding", property(lambda self: "utf-16"))
    ls.service = RecordingService()
    doc = ls.documents.open("file:///a.py", "abc\n", "python", 1)
    params = types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri="file:///a.py"), position=types.Position(line=0, character=3),
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked))
    await ls.config_lock.acquire()
    task = asyncio.ensure_future(handle_inline_completion(ls, params))
    await asyncio.sleep(0)  # the request is now waiting for the lock
    doc.apply_change("XYZ", (0, 0, 0, 0))  # an edit that arrives while it waits (version 2)
    ls.config_lock.release()
    await task
    assert [(c.prefix, c.suffix) for c in ls.service.contexts] == [("abc", "\n")]


class ChoicesEngine:
    """Choice 1 gets nothing before the deadline; the others answer."""

    async def start(self):
        pass

    async def complete_choices(self, request, options, count, ready_timeout=120.0):
        return None  # no choices from one prefill: the service makes separate requests

    async def complete(self, request, options, ready_timeout=120.0, deadline=None):
        from engine.errors import DeadlineExceeded
        from engine.types import Completion, StopReason

        if options.seed % 3 == 1:
            raise DeadlineExceeded("infill", "no completion within 1 s (setting request_timeout)")
        return Completion(text=f"x{options.seed % 3}", stop_reason=StopReason.END_OF_STREAM)


async def test_a_choice_that_misses_the_deadline_leaves_the_others(monkeypatch):
    from lsp_server.config import parse_settings
    from lsp_server.context import build_context
    from lsp_server.documents import Document
    from lsp_server.pipeline import CompletionService

    monkeypatch.setattr("lsp_server.pipeline.time.time", lambda: 0.0)  # seeds 0, 1, 2 for the three choices
    service = CompletionService(parse_settings({"invoked_choices": 3, "multiline": "never"}),
                                engine_factory=lambda config, on_status=None: ChoicesEngine())
    ctx = build_context(Document("file:///c.txt", "y = \n", "plaintext"), 0, 4)
    texts = sorted(s.text for s in await service.generate(ctx, invoked=True))
    assert texts == ["x0", "x2"]


class CachedService(RecordingService):
    """Every request is answered from the cache."""

    def __init__(self):
        super().__init__()
        self.cache = types_namespace(get=lambda *key: ("x",))  # the prefetcher finds the accepted state cached too

    def lookup(self, ctx):
        from lsp_server.pipeline import Suggestion

        return [Suggestion("x", 0, "cache")]


async def test_a_request_answered_from_the_cache_and_superseded_at_once_gets_an_empty_answer(monkeypatch):
    # Found by the LSP fuzzer (an InternalError): two requests for a document read in one loop turn, the first
    # served from the cache, was superseded by the second before its answer was sent.
    ls = build_server()
    ls.load()
    monkeypatch.setattr(type(ls), "encoding", property(lambda self: "utf-16"))
    ls.service = CachedService()
    ls.documents.open("file:///a.py", "abc\n", "python", 1)
    params = types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri="file:///a.py"), position=types.Position(line=0, character=3),
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic))
    first = asyncio.ensure_future(handle_inline_completion(ls, params))
    second = asyncio.ensure_future(handle_inline_completion(ls, params))
    results = await asyncio.gather(first, second)
    assert [len(r.items) for r in results] == [0, 1]


async def test_after_a_request_the_ready_status_keeps_the_engines_detail(monkeypatch):
    """The engine's ready status says who runs the model server and whether prefetch is on (the editors' tooltip);
    the request that followed a failed one sent a bare "Infill is ready", and that detail was gone from then on."""
    from engine.api import StatusEvent

    ls = build_server()
    ls.load()
    monkeypatch.setattr(type(ls), "encoding", property(lambda self: "utf-16"))
    ls.service = RecordingService()
    ls.status.on_engine_status(StatusEvent("ready", "Infill is ready", "this process runs the model server"))
    ls.status.publish(StatusEvent("error", "Infill completion failed: the backend went away"))
    ls.documents.open("file:///a.py", "abc\n", "python", 1)
    params = types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri="file:///a.py"), position=types.Position(line=0, character=3),
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked))
    await handle_inline_completion(ls, params)
    assert ls.status.current.kind == "ready"
    assert ls.status.current.detail is not None and "this process runs the model server" in ls.status.current.detail
