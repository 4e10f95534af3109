"""Token healing: a prefix-only prompt ending in blanks after code is sent without them, and the model's text has
to begin with them again (engine.prompt.healing_split / healed_prompt, engine.code.Healer)."""

from __future__ import annotations

import pytest

from engine.code import Healer
from engine.prompt import healed_prompt, healing_split
from engine.types import CompletionOptions, Prompt, StopReason
from tests.engine.test_code import ScriptedStream, generation, python

OPTIONS = CompletionOptions(seed=1)


@pytest.mark.parametrize("prefix,kept,removed", [
    ("def f():\n    return ", "def f():\n    return", " "),
    ("x =  ", "x =", "  "),
    ("a = new\t", "a = new", "\t"),
    ("def f():\n    ", "def f():\n    ", ""),      # the indentation an editor inserts: whole tokens, left alone
    ("def f():\n", "def f():\n", ""),
    ("return x", "return x", ""),                 # no blank at the end
    ("   ", "   ", ""),
    ("", "", ""),
])
def test_healing_split(prefix, kept, removed):
    assert healing_split(prefix) == (kept, removed)


def test_only_prefix_only_prompts_are_healed():
    prompt = Prompt(text="# Path: a.py\nx = ", prefix="x = ")
    sent, removed = healed_prompt(prompt)
    assert (sent.text, sent.prefix, removed) == ("# Path: a.py\nx =", "x =", " ")
    fim = Prompt(text="<fim_prefix>x = <fim_suffix>\n<fim_middle>", prefix="x = ", suffix="\n")
    assert healed_prompt(fim) == (fim, "")


@pytest.mark.parametrize("chunks,text", [
    ([" 4", "2"], "42"),                # the blank comes back with the word: taken off
    ([" ", "42"], "42"),                # alone in its own chunk
    (["(a)"], "(a)"),                   # the model did not write it: its text as it is
    (["\n", "y"], "\ny"),
])
def test_healer(chunks, text):
    healer = Healer(" ")
    assert "".join(healer.feed(c) for c in chunks) + healer.finish() == text


def test_healer_of_a_text_that_is_only_the_blank():
    healer = Healer("  ")
    assert healer.feed(" ") == "" and healer.finish() == ""


async def test_generation_after_a_space_is_asked_without_it_and_shows_the_rest():
    stream = ScriptedStream([" a", " + b", "\n\ndef g():"])
    completion = await generation(stream, None).generate(python("def add(a, b):\n    return "), OPTIONS)
    assert stream.prompts[0].text.endswith("return")  # the prompt ends at the last whole token
    assert completion.text == "a + b"  # the blank is the document's already
    assert completion.prompt is not None and completion.prompt.prefix.endswith("return ")
    assert completion.stop_reason is StopReason.STOP_WORD


async def test_a_model_that_sees_the_suffix_gets_the_prompt_as_it_is():
    stream = ScriptedStream(["a + b"])
    await generation(stream, "starcoder").generate(python("def add(a, b):\n    return ", "\n"), OPTIONS)
    assert "return <fim_suffix>" in stream.prompts[0].text


async def test_token_healing_can_be_turned_off():
    stream = ScriptedStream(["a"])
    gen = generation(stream, None)
    gen.token_healing = False
    completion = await gen.generate(python("x = "), OPTIONS)
    assert stream.prompts[0].text == "x = " and completion.text == "a"


async def test_next_edit_mode_is_not_healed():
    stream = ScriptedStream(["a"])
    await generation(stream, None).generate(python("x = "), CompletionOptions(seed=1, mode="next_edit_suggestion"))
    assert stream.prompts[0].text == "x = "
