"""CompletionService with `confidence_floor`: log-probabilities are asked for only with the setting, and a suggestion
whose first line the model was unsure of is not shown (nor cached)."""

from __future__ import annotations

import pytest

from engine.errors import ConfigError
from engine.types import TokenLogprob
from lsp_server.config import parse_settings
from lsp_server.context import build_context
from lsp_server.documents import Document
from lsp_server.pipeline import CompletionService
from tests.lsp_server.test_pipeline_line_mode import Engine, Stream

DOCUMENT = "def f(a):\n    return \n"


class LogprobStream(Stream):
    """Streams (chunk, log-probability) pairs, reporting the log-probabilities only when asked for them."""

    def __init__(self, chunks: list[tuple[str, float]], report: bool = True) -> None:
        super().__init__([text for text, _ in chunks], False)
        self.pairs, self.report = chunks, report

    async def generate(self, prompt, options, stats=None):
        self.options.append(options)
        for text, logprob in self.pairs:
            if stats is not None and options.logprobs and self.report:
                stats.add_token(TokenLogprob(text, logprob))
            yield text


async def shown(floor: float | None, chunks: list[tuple[str, float]], report: bool = True):
    stream = LogprobStream(chunks, report)
    service = CompletionService(parse_settings({"temperature": 0.0, "confidence_floor": floor}),
                                engine_factory=lambda config, on_status=None: Engine(stream, None))
    ctx = build_context(Document("file:///a.py", DOCUMENT, "python"), 1, 11, "utf-32")
    suggestions = await service.generate(ctx)
    cached = service.lookup(ctx)
    await service.close()
    return (suggestions[0].text if suggestions else None), stream.options[0].logprobs, cached


SURE = [("a", -0.1), (" *", -0.2), (" 2", -0.3), ("\n", -0.1)]
UNSURE = [("foo", -2.5), ("(", -1.0), ("a", -0.5), (")", -0.2), ("\n", -0.1)]


async def test_off_by_default_asks_for_nothing_and_shows_everything():
    assert parse_settings({}).confidence_floor is None
    text, asked, _ = await shown(None, UNSURE)
    assert text == "foo(a)" and not asked


async def test_a_sure_first_line_is_shown():
    text, asked, _ = await shown(-1.0, SURE)
    assert text == "a * 2" and asked


async def test_an_unsure_first_line_is_dropped_and_not_cached_as_a_suggestion():
    text, asked, cached = await shown(-1.0, UNSURE)  # mean of the line's tokens: -1.05
    assert text is None and asked
    assert not cached  # the cache remembers that this context has no suggestion, never the dropped text


async def test_a_backend_without_log_probabilities_shows_as_before():
    text, asked, _ = await shown(-1.0, UNSURE, report=False)
    assert text == "foo(a)" and asked


def test_the_floor_is_a_log_probability():
    with pytest.raises(ConfigError, match="confidence_floor"):
        parse_settings({"confidence_floor": 0.5})
