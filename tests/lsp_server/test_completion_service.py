"""CompletionService (lsp_server/pipeline.py) through its engine_factory seam: what it asks the engine for, what it
does with the answers (post-processing, cache, typing-through, several choices), and the engine's lifecycle."""

from __future__ import annotations

import dataclasses

from engine.config import EngineConfig, ModelConfig
from engine.types import Completion, CompletionOptions, CompletionRequest, StatusEvent, StopReason
from lsp_server.config import ServerSettings
from lsp_server.context import CursorContext, build_context
from lsp_server.documents import UTF32, Document
from lsp_server.pipeline import CompletionService

URI = "file:///p/m.py"


class ScriptedEngine:
    """Stands in for engine.api.Engine: answers from a script and records every call."""

    def __init__(self, config: EngineConfig, on_status, answers: list[str]):
        self.config = config
        self.on_status = on_status
        self.answers = answers
        self.requests: list[tuple[CompletionRequest, CompletionOptions, float]] = []
        self.started = 0
        self.closed = 0

    async def start(self) -> None:
        self.started += 1
        self.status = StatusEvent("ready", "scripted engine ready")
        self.on_status(self.status)

    async def wait_ready(self, timeout: float) -> None:
        assert self.started, "waited for an engine that was never started"

    async def complete(self, request: CompletionRequest, options: CompletionOptions,
                       ready_timeout: float = 120.0, deadline: float | None = None, on_text=None) -> Completion:
        self.requests.append((request, options, ready_timeout))
        return Completion(self.answers[(len(self.requests) - 1) % len(self.answers)], StopReason.END_OF_STREAM)

    async def complete_choices(self, request, options, count, ready_timeout=120.0):
        return None  # no choices from one prefill: the service makes separate requests

    async def close(self) -> None:
        self.closed += 1


class Factory:
    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.engines: list[ScriptedEngine] = []

    def __call__(self, config: EngineConfig, on_status) -> ScriptedEngine:
        engine = ScriptedEngine(config, on_status, self.answers)
        self.engines.append(engine)
        return engine


def context(text: str, line: int, col: int, multiline: bool = False) -> CursorContext:
    return build_context(Document(URI, text, "python"), line, col, UTF32, policy="always" if multiline else "never",
                         indent_unit="    ", filepath="/p/m.py")


async def test_single_line_request_options_and_post_processing():
    factory = Factory("return a + b\nprint('more')")
    statuses: list[StatusEvent] = []
    service = CompletionService(ServerSettings(max_tokens=12, temperature=0.3, ready_timeout=7.0), statuses.append,
                                engine_factory=factory)
    ctx = context("def add(a, b):\n    ", 1, 4)
    suggestions = await service.complete(ctx)
    engine = factory.engines[0]
    assert engine.started == 1 and [s.kind for s in statuses] == ["ready"]
    request, options, timeout = engine.requests[0]
    assert request == CompletionRequest(prefix="def add(a, b):\n    ", suffix="", language="python",
                                        filepath="/p/m.py")
    assert (options.max_decoding_tokens, options.sampling_temperature, options.stop_words) == (12, 0.3, ("\n",))
    assert timeout == 7.0
    # single line: the model's second line is cut before post-processing and caching
    assert [(s.text, s.source) for s in suggestions] == [("return a + b", "model")]
    await service.close()
    assert engine.closed == 1 and service.engine is None


async def test_multiline_request_has_no_newline_stop():
    factory = Factory("if x:\n        return 1\n    return 2")
    service = CompletionService(ServerSettings(), engine_factory=factory)
    ctx = context("def f(x):\n    \n", 1, 4, multiline=True)
    suggestions = await service.complete(ctx)
    assert factory.engines[0].requests[0][1].stop_words == ()
    assert suggestions and "\n" in suggestions[0].text
    await service.close()


async def test_cache_and_typing_through_cost_no_model_call():
    factory = Factory("total = a + b")
    service = CompletionService(ServerSettings(), engine_factory=factory)
    first = context("def add(a, b):\n    ", 1, 4)
    assert [s.text for s in await service.complete(first)] == ["total = a + b"]
    assert [s.source for s in await service.complete(first)] == ["cache"]
    typed = context("def add(a, b):\n    tot", 1, 7)
    assert [(s.text, s.source) for s in await service.complete(typed)] == [("al = a + b", "typing-through")]
    assert service.model_calls == 1 and len(factory.engines[0].requests) == 1
    await service.close()


async def test_invoked_request_samples_several_distinct_choices():
    factory = Factory("return a + b", "return a + b", "return b + a")
    settings = ServerSettings(invoked_choices=3, temperature=0.1, invoked_temperature=0.8)
    service = CompletionService(settings, engine_factory=factory)
    suggestions = await service.complete(context("def add(a, b):\n    ", 1, 4), invoked=True)
    options = [o for _, o, _ in factory.engines[0].requests]
    assert len(options) == 3 and {o.sampling_temperature for o in options} == {0.8}
    assert len({o.seed for o in options}) == 3
    assert [s.text for s in suggestions] == ["return a + b", "return b + a"]  # duplicates shown once
    assert service.model_calls == 3
    await service.close()


async def test_settings_change_restarts_the_engine_only_when_the_engine_settings_change():
    factory = Factory("total = a + b")
    service = CompletionService(ServerSettings(), engine_factory=factory)
    ctx = context("def add(a, b):\n    ", 1, 4)
    await service.start()
    await service.complete(ctx)

    restarted = await service.apply_settings(dataclasses.replace(service.settings, max_tokens=32))
    assert restarted is False and len(factory.engines) == 1
    await service.complete(ctx)  # a changed token budget changes the answer: the cache was cleared
    assert factory.engines[0].requests[-1][1].max_decoding_tokens == 32 and service.model_calls == 2

    new_engine = EngineConfig(completion=ModelConfig(kind="llama.cpp/infill", api_endpoint="http://127.0.0.1:9"))
    restarted = await service.apply_settings(dataclasses.replace(service.settings, engine=new_engine))
    assert restarted is True and factory.engines[0].closed == 1
    assert len(factory.engines) == 2 and factory.engines[1].config == new_engine and factory.engines[1].started == 1
    await service.complete(ctx)
    assert len(factory.engines[1].requests) == 1
    await service.close()
    assert factory.engines[1].closed == 1


async def test_empty_model_answers_give_no_suggestion_and_are_not_shown():
    factory = Factory("   ")
    service = CompletionService(ServerSettings(), engine_factory=factory)
    assert await service.complete(context("def add(a, b):\n    ", 1, 4)) == []
    await service.close()


class RejoiningEngine(ScriptedEngine):
    """Its model writes the answer, then the next line of code below the cursor: it stops at that stop word."""

    async def complete(self, request, options, ready_timeout=120.0, deadline=None, on_text=None) -> Completion:
        self.requests.append((request, options, ready_timeout))
        rejoin = next(w for w in options.stop_words if w.startswith("\n") and w.strip())
        return Completion(self.answers[0], StopReason.STOP_WORD, stop_word=rejoin)


async def test_an_answer_that_rejoins_the_code_below_is_shown_whole_across_blocks():
    """HumanEval multi-line: the hole ends the inner loop's body and goes on in the outer one; the model wrote
    `return p` next, so its text is exactly the hole and the scope filter must not cut it to the inner block."""
    text = ("def f(r):\n    p = []\n    for i in r:\n        q = True\n        for j in r:\n"
            "            if i % j == 0:\n\n    return p\n")
    answer = "                q = False\n        if q:\n            p.append(i)"
    service = CompletionService(ServerSettings(), engine_factory=lambda config, on_status: RejoiningEngine(
        config, on_status, [answer]))
    ctx = build_context(Document(URI, text, "python"), 6, 0, UTF32, policy="auto", indent_unit="    ")
    first = await service.complete(ctx)
    assert [s.text for s in first] == [answer]
    again = await service.complete(ctx)  # from the cache: still whole
    assert [(s.text, s.source) for s in again] == [(answer, "cache")]
    await service.close()
