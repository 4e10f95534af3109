"""The two ways `bench/quality/suites.py` asks the model: as the LSP server does ("ours") and with no stop rule ("raw").

"ours" is the LSP server's own code for an automatic inline request: `lsp_server.context.build_context` on the
document (single-/multi-line decision, indentation), then `lsp_server.pipeline.CompletionService.generate` (engine
with stop rules, post-processing before and after the cache). Only the JSON-RPC transport, debounce and
supersession are skipped (the typing replay covers those). "raw" is the same engine and prompt in the engine's
`next_edit_suggestion` mode, which applies no stop words, so the output is cut only at the token limit.

Both use temperature 0, so a run is repeatable."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable

from engine.api import Engine
from engine.config import EngineConfig
from engine.types import Completion, CompletionOptions, CompletionRequest

from .suites_data import Task

SEED = 42


@dataclass(frozen=True)
class Generation:
    """One model call as the benchmark records it. `text` is what a user would see; `model_text` is before clean-up."""

    text: str
    model_text: str
    stop_reason: str
    prompt_tokens: int | None
    cached_prompt_tokens: int | None
    generated_tokens: int | None
    latency_ms: float
    multiline: bool | None = None
    #: "timings" (llama-server's count) or "tokenize" (the text re-tokenized: a stream closed at a stop word ends
    #: before the server's last event, which carries the counts).
    generated_tokens_source: str | None = None
    #: The model's tokens and their log-probabilities, `[[text, logprob], …]`, when asked for (`Pipeline(logprobs=
    #: True)`) and the backend reports them: what a confidence rule is replayed over.
    tokens: list[list[Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class RecordingEngine(Engine):
    """The engine, remembering the last Completion so the benchmark can read its stop reason and token counts
    (the LSP pipeline returns only the cleaned-up texts)."""

    last: Completion | None = None

    async def complete(self, request: CompletionRequest, options: CompletionOptions,
                       ready_timeout: float = 120.0, deadline: float | None = None,
                       on_text: Callable[[str], None] | None = None) -> Completion:
        self.last = None
        completion = await super().complete(request, options, ready_timeout, deadline, on_text)
        self.last = completion
        return completion


def _generation(completion: Completion | None, text: str, latency_ms: float, multiline: bool | None) -> Generation:
    if completion is None:  # no model call (cannot happen with the cache bypassed; recorded plainly if it does)
        return Generation(text=text, model_text="", stop_reason="no_model_call", prompt_tokens=None,
                          cached_prompt_tokens=None, generated_tokens=None, latency_ms=latency_ms,
                          multiline=multiline)
    stats = completion.stats
    reason = getattr(completion.stop_reason, "value", completion.stop_reason)
    tokens = None if stats.tokens is None else [[t.text, t.logprob] for t in stats.tokens]
    return Generation(text=text, model_text=completion.text, stop_reason=str(reason),
                      prompt_tokens=stats.prompt_tokens, cached_prompt_tokens=stats.cached_prompt_tokens,
                      generated_tokens=stats.generated_tokens, latency_ms=latency_ms, multiline=multiline,
                      tokens=tokens)


class Pipeline:
    """Owns one CompletionService (one engine, one llama-server start) for the whole run."""

    def __init__(self, engine_config: EngineConfig, *, max_tokens: int | None = None,
                 server_settings: dict[str, Any] | None = None, logprobs: bool = False):
        from lsp_server.config import parse_settings
        from lsp_server.pipeline import CompletionService

        settings = dict(server_settings or {})
        settings.setdefault("temperature", 0.0)
        # Quality is measured on whole generations: the interactive deadline must not cut them on a loaded machine.
        settings.setdefault("request_timeout", 600.0)
        # The time box cuts by wall-clock time, so scores would depend on the machine's load: quality is measured
        # without it (the typing replay measures what it does to latency).
        settings.setdefault("speculation", {"time_budget_ms": 0, "invoked_time_budget_ms": 0})
        if max_tokens is not None:
            settings["max_tokens"] = max_tokens
        parsed = parse_settings(settings)
        self.settings = replace(parsed, engine=engine_config)
        self.max_tokens = self.settings.max_tokens
        #: `raw` asks for each token's log-probability (recorded in `Generation.tokens`).
        self.logprobs = logprobs
        self.engines: list[RecordingEngine] = []

        def factory(config: EngineConfig, on_status: Any = None) -> RecordingEngine:
            engine = RecordingEngine(config, on_status)
            self.engines.append(engine)
            return engine

        self.service = CompletionService(self.settings, engine_factory=factory)

    @property
    def engine(self) -> RecordingEngine:
        assert self.service.engine is not None, "Pipeline.start() was not called"
        return self.service.engine  # type: ignore[return-value]

    async def start(self, ready_timeout: float = 300.0) -> None:
        await self.service.start()
        await self.engine.wait_ready(ready_timeout)

    async def close(self) -> None:
        await self.service.close()

    async def ours(self, task: Task) -> Generation:
        from lsp_server.context import Window, build_context
        from lsp_server.documents import Document

        uri = f"file:///bench/{task.suite}/{task.task_id.replace('/', '_')}"
        document = Document(uri=uri, text=task.prefix + task.suffix, language_id=task.language)
        line = task.prefix.count("\n")
        character = len(task.prefix) - (task.prefix.rfind("\n") + 1)  # column 0 for every task (an empty line)
        context = build_context(document, line, character, "utf-32", policy=self.settings.multiline,
                                indent_unit=self.settings.indent_unit,
                                window=Window.for_model(self.settings.engine.completion))
        started = time.perf_counter()
        suggestions = await self.service.generate(context)
        latency_ms = (time.perf_counter() - started) * 1000.0
        text = suggestions[0].text if suggestions else ""
        return await self._with_token_count(_generation(self.engine.last, text, latency_ms, context.multiline))

    async def _with_token_count(self, generation: Generation) -> Generation:
        if generation.generated_tokens is not None:
            return replace(generation, generated_tokens_source="timings")
        count = getattr(self.engine.generation, "count_tokens", None)
        if count is None or not generation.model_text:
            return generation
        return replace(generation, generated_tokens=await count(generation.model_text),
                       generated_tokens_source="tokenize")

    async def raw(self, task: Task) -> Generation:
        request = CompletionRequest(prefix=task.prefix, suffix=task.suffix, language=task.language,
                                    context=task.context, relative_path=task.relative_path)
        options = CompletionOptions(max_decoding_tokens=self.max_tokens, sampling_temperature=0.0, seed=SEED,
                                    mode="next_edit_suggestion", logprobs=self.logprobs)
        started = time.perf_counter()
        completion = await self.engine.complete(request, options)
        latency_ms = (time.perf_counter() - started) * 1000.0
        return await self._with_token_count(_generation(completion, completion.text, latency_ms, None))
