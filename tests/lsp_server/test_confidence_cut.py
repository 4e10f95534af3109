"""CompletionService with `confidence_cut`: the request asks for token log-probabilities only with the setting on and
where a suggestion may have several lines, and the shown text ends where the model was unsure."""

from __future__ import annotations

from engine.types import TokenLogprob
from lsp_server.config import parse_settings
from lsp_server.context import build_context
from lsp_server.documents import Document
from lsp_server.pipeline import CompletionService
from tests.lsp_server.test_pipeline_line_mode import Engine, Stream

DOCUMENT = "def f(a):\n    if a:\n        \n"  # the cursor in an empty block: a block situation
CHUNKS = [("x = 1", -0.1), ("\n", -0.1), ("        ", -0.1), ("y", -0.1), (" = 2", -0.1), ("\n", -0.1),
          ("        ", -0.1), ("z", -3.0), (" = 3", -0.1)]


class LogprobStream(Stream):
    async def generate(self, prompt, options, stats=None):
        self.options.append(options)
        for text, logprob in CHUNKS:
            if stats is not None and options.logprobs:
                stats.add_token(TokenLogprob(text, logprob))
            yield text


async def shown(confidence_cut: bool, document: str = DOCUMENT, line: int = 2, col: int = 8):
    stream = LogprobStream([], False)
    service = CompletionService(parse_settings({"temperature": 0.0, "confidence_cut": confidence_cut}),
                                engine_factory=lambda config, on_status=None: Engine(stream, None))
    ctx = build_context(Document("file:///a.py", document, "python"), line, col, "utf-32")
    suggestions = await service.generate(ctx)
    await service.close()
    return (suggestions[0].text if suggestions else None), stream.options[0].logprobs, ctx.line_mode


async def test_off_by_default_and_then_as_before():
    assert parse_settings({}).confidence_cut is False
    text, asked, mode = await shown(False)
    assert mode == "block" and not asked and text == "x = 1\n        y = 2\n        z = 3"


async def test_on_the_text_ends_before_the_line_the_model_was_unsure_of():
    text, asked, mode = await shown(True)
    assert mode == "block" and asked and text == "x = 1\n        y = 2"


async def test_a_one_line_situation_does_not_ask_for_logprobs():
    _, asked, mode = await shown(True, "def f(a):\n    return \n", 1, 11)
    assert mode == "line" and not asked
