"""CompletionService with a scripted engine: the stop words it asks for and where the shown text ends, by whether
the model saw the suffix and how it stopped (the decision itself is tabled in postprocess/test_line_mode.py)."""

from __future__ import annotations

import pytest

from engine.code import CodeGeneration
from engine.languages import default_table
from engine.prompt import PromptTemplate
from lsp_server.config import parse_settings
from lsp_server.context import build_context
from lsp_server.documents import Document
from lsp_server.pipeline import CompletionService


class Stream:
    native_fim = False

    def __init__(self, chunks: list[str], hit_limit: bool) -> None:
        self.chunks, self.hit_limit, self.options = chunks, hit_limit, []

    async def generate(self, prompt, options, stats=None):
        self.options.append(options)
        for chunk in self.chunks:
            yield chunk
        if stats is not None and self.hit_limit:
            stats.hit_token_limit = True

    async def close(self) -> None:
        pass


class Engine:
    def __init__(self, stream: Stream, template: str | None) -> None:
        self.stream = stream
        self.generation = CodeGeneration(stream, PromptTemplate.from_setting(template), default_table())

    async def start(self) -> None:
        pass

    async def wait_ready(self, timeout: float) -> None:
        pass

    async def complete(self, request, options, ready_timeout=0.0, deadline=None, on_text=None):
        return await self.generation.generate(request, options, deadline, on_text)

    async def complete_choices(self, *args):
        return None

    async def close(self) -> None:
        pass


DOCUMENT = "def f(a):\n    x = a\n    \n    return y\n"  # the cursor on line 2, after the indentation


async def shown(chunks: list[str], template: str | None, hit_limit: bool, line: int = 2, col: int = 4,
                document: str = DOCUMENT):
    stream = Stream(chunks, hit_limit)
    service = CompletionService(parse_settings({"temperature": 0.0}),
                                engine_factory=lambda config, on_status=None: Engine(stream, template))
    ctx = build_context(Document("file:///a.py", document, "python"), line, col, "utf-32")
    suggestions = await service.generate(ctx)
    await service.close()
    return (suggestions[0].text if suggestions else None), stream.options[0].stop_words, ctx.line_mode


@pytest.mark.parametrize("template,hit_limit,expected", [
    ("starcoder", False, "y = x + 1\n    y *= 2"),   # a FIM model that ended by itself: its whole answer
    ("starcoder", True, "y = x + 1"),                 # ... that ran into the token limit: one statement
    (None, False, "y = x + 1"),                       # a prefix-only model's end is not trusted
])
async def test_a_statement_hole(template, hit_limit, expected):
    text, stop_words, mode = await shown(["y = x + 1", "\n    y *= 2"], template, hit_limit)
    assert mode == "statement" and text == expected
    assert stop_words == ("\n    return y\n",)  # the rejoin word: the next line of code


async def test_any_model_that_reaches_the_code_below_keeps_what_came_before():
    text, _, _ = await shown(["y = x + 1\n    y *= 2", "\n    return y\n    more()"], None, True)
    assert text == "y = x + 1\n    y *= 2"


async def test_a_model_cut_off_while_it_retypes_the_code_below_keeps_what_came_before():
    # cobra (real-code benchmark): the token limit came inside the line below, before the rejoin stop word matched.
    chunks = ["y = x + 1\n    y *= 2", "\n    return"]
    text, _, _ = await shown(chunks + [" y"], None, True)
    assert text == "y = x + 1\n    y *= 2"
    text, _, _ = await shown(chunks, None, True)  # one word of it: no evidence, the statement rule cuts
    assert text == "y = x + 1"


FIB = "def fib(n):\n    if n == 0:\n\n        return 1\n    return fib(n - 1) + fib(n - 2)\n"


@pytest.mark.parametrize("template", [None, "starcoder"])
async def test_a_model_that_writes_the_opener_of_the_code_below_and_then_that_code_keeps_the_opener(template):
    # HumanEval/55: `return 1` below is too common a line to stop at by itself; the model wrote its opener, then it.
    model = "        return 0\n    elif n == 1:\n        return 1\n    elif n == 2:\n        return 2"
    text, _, _ = await shown([model], template, True, line=2, col=0, document=FIB)
    assert text == "        return 0\n    elif n == 1:"


GRADES = ("def grade(gpa):\n    if gpa > 3.0:\n        g = 'A'\n    elif gpa > 2.0:\n\n"
          "    elif gpa > 0.0:\n        g = 'D'\n    else:\n        g = 'E'\n    return g\n")


@pytest.mark.parametrize("template", [None, "starcoder"])
async def test_a_model_that_writes_the_rest_of_the_chain_and_skips_to_code_below_keeps_the_chain(template):
    # HumanEval/81: the missing branches, then the function's `return` from four lines below.
    model = "        g = 'B'\n    elif gpa > 1.0:\n        g = 'C'\n    return g\n\ndef other():"
    text, _, _ = await shown([model], template, True, line=4, col=0, document=GRADES)
    assert text == "        g = 'B'\n    elif gpa > 1.0:\n        g = 'C'"


async def test_a_prefix_only_model_asks_to_stop_at_the_line_end_only_in_a_line_situation():
    _, stop_words, mode = await shown(["1"], None, False, line=1, col=8)  # after `x = a`
    assert mode == "line" and stop_words[0] == "\n"
    _, stop_words, mode = await shown(["1"], "starcoder", False, line=1, col=8)
    assert mode == "line" and "\n" not in stop_words
