"""CodeGeneration end to end over an in-process scripted completion stream (chunks chosen by each test)."""

from __future__ import annotations

import asyncio

import pytest

from engine.code import CodeGeneration
from engine.languages import default_table
from engine.prompt import PromptTemplate
from engine.streams import CompletionStream
from engine.types import CompletionOptions, CompletionRequest, StopReason


class ScriptedStream:
    """Yields the given chunks; records what it was asked and whether its generator's `finally` ran."""

    native_fim = False

    def __init__(self, chunks, hit_token_limit: bool = False, hang_after: int | None = None):
        self.chunks = list(chunks)
        self.hit_token_limit = hit_token_limit
        self.hang_after = hang_after
        self.prompts = []
        self.options = []
        self.yielded = 0
        self.finalized = 0
        self.closed = False

    async def generate(self, prompt, options, stats=None):
        self.prompts.append(prompt)
        self.options.append(options)
        try:
            for i, chunk in enumerate(self.chunks):
                if self.hang_after is not None and i == self.hang_after:
                    await asyncio.Event().wait()  # a model that is still thinking
                self.yielded += 1
                yield chunk
            if stats is not None and self.hit_token_limit:
                stats.hit_token_limit = True
                stats.generated_tokens = len(self.chunks)
        finally:
            self.finalized += 1

    async def close(self):
        self.closed = True


def generation(stream, template="starcoder", **kwargs) -> CodeGeneration:
    return CodeGeneration(stream, PromptTemplate.from_setting(template), default_table(), **kwargs)


def python(prefix: str, suffix: str = "", language: str = "python") -> CompletionRequest:
    return CompletionRequest(prefix=prefix, suffix=suffix, language=language, filepath="a.py")


OPTIONS = CompletionOptions(seed=1)


def test_scripted_stream_satisfies_the_protocol():
    assert isinstance(ScriptedStream([]), CompletionStream)


async def test_stop_word_inside_a_chunk_cuts_there_and_closes_the_stream_at_once():
    stream = ScriptedStream(["    return a", " + b\n\ndef other():", "\n    pass", "\n"])
    completion = await generation(stream, None).generate(python("def add(a, b):\n"), OPTIONS)
    assert completion.text == "    return a + b"
    assert completion.stop_reason is StopReason.STOP_WORD
    assert stream.yielded == 2  # nothing was pulled after the stop word
    assert stream.finalized == 1  # closed before generate() returned, not at garbage collection


async def test_stop_word_spanning_chunks():
    stream = ScriptedStream(["x = compute()<|end", "of", "text|>", "leaked"])
    completion = await generation(stream).generate(python("y = 0\n"), OPTIONS)
    assert completion.text == "x = compute()"
    assert completion.stop_reason is StopReason.END_SENTINEL  # the model's own end, written as text
    assert stream.yielded == 3 and stream.finalized == 1


async def test_template_and_configured_stop_words_apply():
    stream = ScriptedStream(["foo()", " <EOT>", " bar"])
    completion = await generation(stream, template="codellama").generate(python("x\n"), OPTIONS)
    assert completion.text == "foo()"
    stream = ScriptedStream(["foo() STOPHERE bar ENDX baz"])
    completion = await generation(stream, extra_stop_words=["ENDX"]).generate(python("x\n"), OPTIONS)
    assert completion.text == "foo() STOPHERE bar "
    options = CompletionOptions(seed=1, stop_words=("STOPHERE",))
    stream = ScriptedStream(["foo() STOPHERE bar ENDX baz"])
    completion = await generation(stream, extra_stop_words=["ENDX"]).generate(python("x\n"), options)
    assert completion.text == "foo() "


async def test_end_of_stream_flushes_held_back_text():
    stream = ScriptedStream(["x = 1", "\n    "])
    completion = await generation(stream).generate(python("def f():\n    "), OPTIONS)
    assert completion.text == "x = 1\n    "
    assert completion.stop_reason is StopReason.END_OF_STREAM
    assert stream.finalized == 1


async def test_token_limit_is_reported_when_the_backend_says_so():
    stream = ScriptedStream(["x = ", "1"], hit_token_limit=True)
    completion = await generation(stream).generate(python("def f():\n    "), OPTIONS)
    assert completion.text == "x = 1"
    assert completion.stop_reason is StopReason.TOKEN_LIMIT
    assert completion.stats.hit_token_limit and completion.stats.generated_tokens == 2


async def test_crlf_document_round_trip():
    stream = ScriptedStream(["\n", "    a = 1\n", "    b = 2\n", "    return a + b"])
    request = python("def f():\r\n    x = 0", suffix="\r\n\r\nprint(f())\r\n")
    completion = await generation(stream).generate(request, OPTIONS)
    assert completion.text == "\r\n    a = 1\r\n    b = 2\r\n    return a + b"
    sent = stream.prompts[0]
    assert "\r" not in sent.text and sent.prefix == "def f():\n    x = 0" and sent.suffix == "\n\nprint(f())\n"


async def test_suffix_never_seeds_the_stop_check():
    """The suffix ends with a newline and the completion starts with one: that is no blank line (no stop).

    Seeding the stop check with the suffix instead of the prefix would see "\n\n" here and stop at once."""
    stream = ScriptedStream(["\n", "    return x"])
    completion = await generation(stream, template="codestral").generate(
        python("def f(x):", suffix="\n\nprint(f(1))\n"), OPTIONS)
    assert completion.text == "\n    return x"


async def test_prefix_tail_ending_a_line_plus_a_newline_is_a_blank_line():
    stream = ScriptedStream(["\n", "print(1)"])
    completion = await generation(stream, None).generate(python("x = 1\n"), OPTIONS)
    assert completion.text == "" and completion.stop_reason is StopReason.STOP_WORD


async def test_unknown_language_gives_one_line():
    stream = ScriptedStream(["first line", "\nsecond line"])
    completion = await generation(stream, None).generate(python("x", language="brainfunk"), OPTIONS)
    assert completion.text == "first line"  # prefix-only; a FIM model's own end decides (and at its token limit,
    # the language's words, this "\n" among them, apply after all: test_a_model_that_sees_the_suffix_...)


async def test_next_edit_suggestion_mode_ignores_stop_words():
    stream = ScriptedStream(["a = 1\n\n", "def g():", "<|endoftext|>"])
    options = CompletionOptions(seed=1, mode="next_edit_suggestion")
    completion = await generation(stream).generate(python("x\n"), options)
    assert completion.text == "a = 1\n\ndef g():<|endoftext|>"
    assert completion.stop_reason is StopReason.END_OF_STREAM
    assert stream.finalized == 1


async def test_prompt_is_clipped_and_templated_for_the_stream():
    prefix = "".join(f"line_{i} = {i}\n" for i in range(2000))
    stream = ScriptedStream(["x"])
    completion = await generation(stream, max_prefix_tokens=50, max_suffix_tokens=10).generate(
        python(prefix, suffix="tail = 1\n" * 100), OPTIONS)
    sent = stream.prompts[0]
    assert completion.prompt == sent
    assert sent.text.startswith("<fim_prefix>") and sent.text.endswith("<fim_middle>")
    assert len(sent.prefix) <= 200 and prefix.endswith(sent.prefix)
    assert len(sent.suffix) <= 40
    assert stream.options[0] is OPTIONS


@pytest.mark.parametrize("stable_clip", [True, False])
async def test_stable_clip_setting_reaches_the_prompt(stable_clip):
    """Stable clip points start the kept prefix at a line start; without them it holds exactly the budget."""
    prefix = "".join(f"line_{i} = {i}\n" for i in range(2000)) + "x = "
    stream = ScriptedStream(["x"])
    await generation(stream, max_prefix_tokens=50, stable_clip=stable_clip).generate(python(prefix), OPTIONS)
    kept = stream.prompts[0].prefix
    assert prefix.endswith(kept)
    if stable_clip:
        assert kept.startswith("line_") and len(kept) < 200
    else:
        assert len(kept) == 200  # 50 tokens at 4 characters each, cut mid-line


async def test_count_tokens_sets_the_budget():
    calls = []

    async def count(text: str) -> int:
        calls.append(text)
        return len(text.split())

    stream = ScriptedStream(["x"])
    prefix = "word " * 1000
    await generation(stream, count_tokens=count, max_prefix_tokens=20).generate(python(prefix), OPTIONS)
    assert calls and len(stream.prompts[0].prefix.split()) <= 20


async def test_stream_text_yields_the_growing_text_and_stops_at_a_stop_word():
    stream = ScriptedStream(["    total = 0\n", "    for x in xs:\n", "        total += x\n", "\n", "def more():"])
    request = python("def total(xs):\r\n")
    seen = [text async for text in generation(stream, None).stream_text(request, OPTIONS)]
    assert seen == ["    total = 0", "    total = 0\r\n    for x in xs:",
                    "    total = 0\r\n    for x in xs:\r\n        total += x"]
    assert stream.yielded == 4 and stream.finalized == 1


async def test_cancelling_the_consumer_closes_the_stream():
    stream = ScriptedStream(["a", "b", "c"], hang_after=1)
    task = asyncio.create_task(generation(stream).generate(python("x = "), OPTIONS))
    for _ in range(50):
        await asyncio.sleep(0)
        if stream.yielded:
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert stream.finalized == 1


async def test_close_closes_the_stream():
    stream = ScriptedStream([])
    await generation(stream).close()
    assert stream.closed


def test_bad_construction_values_raise_value_error():
    with pytest.raises(ValueError, match="additional_stop_words"):
        generation(ScriptedStream([]), extra_stop_words=[""])
    with pytest.raises(ValueError, match="max_prefix_tokens"):
        generation(ScriptedStream([]), max_prefix_tokens=-1)


# --- over the real llama-server (tiny deterministic model) ------------------------------------------------------------


@pytest.mark.llama_server
@pytest.mark.parametrize("use_infill, template", [(False, "starcoder"), (True, None)], ids=["completion", "infill"])
async def test_real_server_completion_is_cut_where_the_oracle_cuts(llama_server, use_infill, template):
    from engine.backends.llama_cpp import LlamaCppCompletion
    from engine.decoding import first_stop

    stream = LlamaCppCompletion(llama_server, use_infill=use_infill)
    prompt_template = (PromptTemplate.from_setting(template) if template
                       else PromptTemplate(name="model-fim", template="{prefix}{suffix}"))
    gen = CodeGeneration(stream, prompt_template, default_table())
    request = python("def add(a, b):\n    ", suffix="\n\nprint(add(1, 2))\n")
    try:
        # Greedy and without stop words first, to learn what the model says.
        free = await gen.generate(request, CompletionOptions(max_decoding_tokens=24, sampling_temperature=0.0,
                                                             seed=1, mode="next_edit_suggestion"))
        assert free.stop_reason is StopReason.TOKEN_LIMIT and free.stats.generated_tokens == 24
        middle = len(free.text) // 2
        options = CompletionOptions(max_decoding_tokens=24, sampling_temperature=0.0, seed=1,
                                    stop_words=(free.text[middle:middle + 3],))
        cut = await gen.generate(request, options)
        expected, word = first_stop(free.text, gen.stop_words("python", options), prefix_tail=free.prompt.prefix)
        assert word is not None
        assert cut.text == expected
        assert cut.stop_reason is StopReason.STOP_WORD
        assert len(cut.text) < len(free.text)
    finally:
        await gen.close()


async def test_a_model_that_sees_the_suffix_is_not_stopped_by_a_blank_line():
    """A FIM model knows where the hole ends: a blank line inside its answer is part of it, its end sentinel ends it
    (reported as END_SENTINEL, so the pipeline can trust the text); a prefix-only model stops at the blank line."""
    chunks = ["a = 1\n", "\n", "b = 2", "<|endoftext|>", "junk"]
    fim = await generation(ScriptedStream(chunks)).generate(python("x = 0\n", "\nprint(x)\n"), OPTIONS)
    assert (fim.text, fim.stop_reason, fim.stop_word) == ("a = 1\n\nb = 2", StopReason.END_SENTINEL, "<|endoftext|>")
    assert fim.saw_suffix
    plain = await generation(ScriptedStream(chunks), None).generate(python("x = 0\n", "\nprint(x)\n"), OPTIONS)
    assert (plain.text, plain.stop_reason, plain.stop_word) == ("a = 1", StopReason.STOP_WORD, "\n\n")
    assert not plain.saw_suffix


class ChoicesStream(ScriptedStream):
    """Answers several choices from one prefill (as llama-server's n_cmpl)."""

    def __init__(self, texts, hit_token_limit: bool = False):
        super().__init__([], hit_token_limit)
        self.texts = texts

    async def generate_choices(self, prompt, options, count, stats):
        if self.hit_token_limit:
            stats.hit_token_limit = True
        return self.texts[:count]


async def test_choices_get_the_streamed_stop_rules_sentinel_and_suffix_aware():
    """Each choice of one prefill is cut and reported as a streamed one: a FIM model is not stopped by a blank line,
    its end sentinel is END_SENTINEL with the word; a prefix-only model stops at the blank line (STOP_WORD)."""
    texts = ["a = 1\n\nb = 2<|endoftext|>junk", "c = 3"]
    fim = await generation(ChoicesStream(texts)).generate_choices(python("x = 0\n", "\nprint(x)\n"), OPTIONS, 2)
    assert fim is not None
    assert [(c.text, c.stop_reason, c.stop_word) for c in fim] == [
        ("a = 1\n\nb = 2", StopReason.END_SENTINEL, "<|endoftext|>"), ("c = 3", StopReason.END_OF_STREAM, None)]
    plain = await generation(ChoicesStream(texts), None).generate_choices(python("x = 0\n", "\nprint(x)\n"),
                                                                          OPTIONS, 2)
    assert plain is not None
    assert [(c.text, c.stop_reason, c.stop_word) for c in plain][0] == ("a = 1", StopReason.STOP_WORD, "\n\n")


async def test_a_fim_choice_that_hit_the_token_limit_gets_the_language_stop_words():
    texts = ["a = 1\n\nb = 2"]
    out = await generation(ChoicesStream(texts * 2, hit_token_limit=True)).generate_choices(
        python("x = 0\n", "\nprint(x)\n"), OPTIONS, 2)
    assert out is not None and [(c.text, c.stop_reason) for c in out] == [("a = 1", StopReason.STOP_WORD)] * 2


async def test_a_fim_model_cut_by_the_time_box_gets_the_language_stop_words():
    """The time box ended it, not the model: like the token limit, the language's stop words apply after all."""
    gen = generation(ScriptedStream(["a = 1\n", "\n", "b = 2\n", "c = 3\n"]))
    ticks = iter(range(0, 10_000, 100))
    gen.clock = lambda: next(ticks) / 1000.0
    options = CompletionOptions(seed=1, time_budget_ms=150)
    out = await gen.generate(python("x = 0\n", "\nprint(x)\n"), options)
    assert (out.text, out.stop_reason, out.stop_word) == ("a = 1", StopReason.STOP_WORD, "\n\n")


DOCSTRING = '"""Get the bottom of a box.\n\n    Args:\n        widths: Widths.\n    """\n    return widths\n'


@pytest.mark.parametrize("chunks", [
    [DOCSTRING + "\n\ndef other():\n    pass\n"],                                 # all in one chunk
    [c for c in DOCSTRING + "\n\ndef other():\n    pass\n"],                     # a character a chunk
    ['"""Get the bottom of a box.\n', "\n", "    Args:\n        widths: Widths.\n    ", '"""\n    return widths\n',
     "\n\ndef other():\n"],
])
async def test_a_blank_line_inside_a_docstring_the_completion_opened_does_not_stop_it(chunks):
    """A prefix-only model writing a docstring: its first blank line is text, not the end of the suggestion (it was
    cut to '\"\"\"Get the bottom of a box.', an unterminated string in the editor); the blank line after the string
    is closed stops it as usual."""
    stream = ScriptedStream(chunks)
    completion = await generation(stream, None).generate(python("def bottom(widths):\n    "), OPTIONS)
    assert completion.text == DOCSTRING.rstrip("\n")
    assert completion.stop_reason is StopReason.STOP_WORD


async def test_a_keyword_line_inside_a_template_literal_does_not_stop_it_but_a_sentinel_does():
    text = "`\nimport x\n\nlet y`;\nfoo()"
    stream = ScriptedStream([text + "\n\nfunction other() {}\n"])
    completion = await generation(stream, None).generate(python("const s = ", language="typescript"), OPTIONS)
    assert completion.text == text
    stream = ScriptedStream(["`\nfirst line<|endoftext|>\n\nmore`"])
    completion = await generation(stream, None).generate(python("const s = ", language="typescript"), OPTIONS)
    assert completion.text == "`\nfirst line"
    assert completion.stop_reason is StopReason.END_SENTINEL


async def test_a_language_without_multiline_strings_stops_at_the_blank_line():
    stream = ScriptedStream(['x = "a\n\nb"\n'])
    completion = await generation(stream, None).generate(python("", language="c"), OPTIONS)
    assert completion.text == 'x = "a'
