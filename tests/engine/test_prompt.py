"""Templates, per-side clipping (characters and tokens), stable clip points and line endings."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.prompt import (CHARS_PER_TOKEN, CLIP_STEPS, PromptTemplate, build_prompt, clip_prefix, clip_suffix,
                           detect_crlf, families, restore_line_endings, to_lf)
from engine.types import CompletionRequest

FAMILIES = {
    "starcoder": "<fim_prefix>P<fim_suffix>S<fim_middle>",
    "starcoder2": "<fim_prefix>P<fim_suffix>S<fim_middle>",
    "codeqwen": "<fim_prefix>P<fim_suffix>S<fim_middle>",
    "granite": "<fim_prefix>P<fim_suffix>S<fim_middle>",
    "qwen2.5-coder": "<|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>",
    "codegemma": "<|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>",
    "codellama": "<PRE> P <SUF>S <MID>",
    "deepseek-coder": "<\uff5cfim\u2581begin\uff5c>P<\uff5cfim\u2581hole\uff5c>S<\uff5cfim\u2581end\uff5c>",
    "codestral": "[SUFFIX]S[PREFIX]P",
}


def code(lines: int, width: int = 7) -> str:
    return "".join(f"    value_{i} = compute({i % width})" + " " * (i % width) + "\n" for i in range(lines))


async def word_count(text: str) -> int:
    """A stand-in tokenizer: one token per whitespace-separated word, and one per line break."""
    return len(text.split()) + text.count("\n")


# --- templates ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, expected", FAMILIES.items())
def test_each_family_renders_its_fim_markers(name, expected):
    template = PromptTemplate.from_setting(name)
    assert template.name == name and not template.prefix_only
    assert template.render("P", "S") == expected


def test_every_packaged_family_is_tested():
    assert set(families()) == set(FAMILIES)


def test_family_names_and_aliases_ignore_case():
    assert PromptTemplate.from_setting("StarCoder2").name == "starcoder2"
    assert PromptTemplate.from_setting("Qwen2.5").name == "qwen2.5-coder"


def test_family_end_sentinels_are_its_stop_words():
    assert "<EOT>" in PromptTemplate.from_setting("codellama").stop_words
    assert "<|endoftext|>" in PromptTemplate.from_setting("qwen2.5-coder").stop_words
    assert "<\uff5cend\u2581of\u2581sentence\uff5c>" in PromptTemplate.from_setting("deepseek-coder").stop_words


def test_none_means_prefix_only():
    template = PromptTemplate.from_setting(None)
    assert template.prefix_only and template.render("abc", "ignored") == "abc"
    assert PromptTemplate.from_setting("prefix-only").prefix_only


def test_custom_template_with_every_placeholder():
    template = PromptTemplate.from_setting("<file {filepath} ({language})>{prefix}<hole>{suffix}<end>")
    assert template.name == "custom" and not template.prefix_only
    assert template.render("a", "b", filepath="x.py", language="python") == "<file x.py (python)>a<hole>b<end>"


def test_custom_template_without_suffix_is_prefix_only():
    template = PromptTemplate.from_setting("# {filepath}\n{prefix}")
    assert template.prefix_only
    assert template.render("x = ", "ignored", filepath="a.py") == "# a.py\nx = "


def test_placeholders_inside_the_code_are_left_alone():
    template = PromptTemplate.from_setting("starcoder")
    text = template.render('f"{suffix}{prefix}"', "{prefix}")
    assert text == '<fim_prefix>f"{suffix}{prefix}"<fim_suffix>{prefix}<fim_middle>'


@pytest.mark.parametrize("value, message", [
    ("<fim_prefix><fim_suffix>{suffix}", "must contain {prefix}"),
    ("{prefix}{sufix}", "unknown placeholder {sufix}"),
    ("no-such-family", "unknown template family"),
    ("", "unknown template family"),
    (42, "expected a family name"),
])
def test_bad_template_settings_raise_value_error_naming_the_setting(value, message):
    with pytest.raises(ValueError, match="prompt_template") as error:
        PromptTemplate.from_setting(value)
    assert message in str(error.value)


# --- clipping -------------------------------------------------------------------------------------------------------


async def test_text_within_the_budget_is_kept_whole():
    text = code(10)
    assert await clip_prefix(text, len(text)) == text
    assert await clip_suffix(text, len(text)) == text
    assert await clip_prefix(text, 10_000, word_count) == text


async def test_prefix_keeps_its_end_from_a_line_start_within_the_budget():
    text = code(200)
    budget = 1000
    clipped = await clip_prefix(text, budget)
    assert text.endswith(clipped)
    assert len(clipped) <= budget
    assert text[len(text) - len(clipped) - 1] == "\n"  # line-aligned
    assert len(clipped) >= budget - 2 * (budget // CLIP_STEPS) - 40  # little of the budget is wasted


async def test_suffix_keeps_its_start_up_to_a_line_end_within_the_budget():
    text = code(200)
    clipped = await clip_suffix(text, 1000)
    assert text.startswith(clipped)
    assert len(clipped) <= 1000 and clipped.endswith("\n")
    assert len(clipped) >= 1000 - 2 * (1000 // CLIP_STEPS) - 40


async def test_token_budget_uses_the_tokenizer_with_few_calls():
    text = code(2000)
    calls = []

    async def counting(chunk: str) -> int:
        calls.append(len(chunk))
        return await word_count(chunk)

    clipped = await clip_prefix(text, 300, counting)
    assert text.endswith(clipped) and 0 < await word_count(clipped) <= 300
    assert await word_count(clipped) >= 300 * 0.7
    assert len(calls) <= 16
    calls.clear()
    clipped = await clip_suffix(text, 300, counting)
    assert text.startswith(clipped) and 0 < await word_count(clipped) <= 300
    assert len(calls) <= 16


async def test_zero_budget_gives_nothing_and_negative_is_an_error():
    assert await clip_prefix("abc\n", 0) == "" and await clip_suffix("abc\n", 0) == ""
    with pytest.raises(ValueError, match="max_prefix_tokens"):
        await clip_prefix("abc", -1)
    with pytest.raises(ValueError, match="max_suffix_tokens"):
        await clip_suffix("abc", -1, word_count)


@pytest.mark.parametrize("count_tokens", [None, word_count], ids=["chars", "tokens"])
async def test_prompt_beginning_stays_put_while_typing(count_tokens):
    """Typing at the end of the prefix moves the clip point only once per budget/CLIP_STEPS characters, so the
    server can reuse its cached prompt between keystrokes."""
    document = code(400)
    budget = 1200 if count_tokens is None else 300
    step = (budget if count_tokens is None else budget * CHARS_PER_TOKEN) // CLIP_STEPS
    starts = []
    for end in range(len(document) - 600, len(document)):  # 600 keystrokes
        prefix = document[:end]
        starts.append(end - len(await clip_prefix(prefix, budget, count_tokens)))
    changes = sum(1 for a, b in zip(starts, starts[1:]) if a != b)
    assert starts == sorted(starts)  # it only ever moves forward
    assert 1 <= changes <= 600 // step + 2


@pytest.mark.parametrize("count_tokens", [None, word_count], ids=["chars", "tokens"])
async def test_without_stable_clip_points_the_prompt_is_clipped_afresh_to_the_exact_budget(count_tokens):
    """`stable=False` (the typing benchmark's naive pipeline): the most text that fits, wherever that starts, so the
    beginning of the prompt moves with every character (or token) typed once the prefix is over budget."""
    document = code(400)
    budget = 1200 if count_tokens is None else 300
    count = count_tokens or (lambda text: _as_awaitable(len(text)))
    starts = []
    for end in range(len(document) - 100, len(document)):
        prefix = document[:end]
        kept = await clip_prefix(prefix, budget, count_tokens, stable=False)
        assert prefix.endswith(kept) and await count(kept) <= budget
        assert await count(prefix[len(prefix) - len(kept) - 1:]) > budget  # one character more would not fit
        starts.append(end - len(kept))
    changes = sum(1 for a, b in zip(starts, starts[1:]) if a != b)
    assert changes >= (90 if count_tokens is None else 10)  # each character, or each token typed (stable: <= 2)
    suffix = document[:budget * 10]
    kept = await clip_suffix(suffix, budget, count_tokens, stable=False)
    assert suffix.startswith(kept) and await count(suffix[:len(kept) + 1]) > budget >= await count(kept)


async def _as_awaitable(value):
    return value


@settings(max_examples=150, deadline=None)
@given(text=st.lists(st.sampled_from(["a", "b", " ", "\n", "\r\n", "e\u0301", "\u00e9", "\U0001f600"]), max_size=150)
       .map("".join), budget=st.integers(min_value=1, max_value=120))
async def test_clips_never_split_a_character_or_a_line_break(text, budget):
    for clipped, kept_end in ((await clip_prefix(text, budget), True), (await clip_suffix(text, budget), False)):
        assert len(clipped) <= budget
        if kept_end:
            assert text.endswith(clipped)
            cut = len(text) - len(clipped)
        else:
            assert text.startswith(clipped)
            cut = len(clipped)
        if 0 < cut < len(text):
            assert not (text[cut - 1] == "\r" and text[cut] == "\n")
            assert not unicodedata.combining(text[cut])


# --- line endings ---------------------------------------------------------------------------------------------------


@given(st.lists(st.text(st.sampled_from("ab \t"), max_size=4), max_size=8))
def test_crlf_round_trip_is_exact(lines):
    original = "\r\n".join(lines)
    assert restore_line_endings(to_lf(original), crlf=True) == original


@pytest.mark.parametrize("completion, expected", [
    ("\n", "\r\n"), ("\n\n", "\r\n\r\n"), ("\nx\n\n\ny\n", "\r\nx\r\n\r\n\r\ny\r\n"), ("x", "x"), ("", ""),
    ("a\r\nb", "a\r\nb"),
])
def test_restore_converts_every_newline(completion, expected):
    assert restore_line_endings(completion, crlf=True) == expected
    assert restore_line_endings(completion, crlf=False) == completion


def test_detect_crlf():
    assert detect_crlf("a\r\nb\n") and not detect_crlf("a\nb\r\n") and not detect_crlf("abc")


# --- building -------------------------------------------------------------------------------------------------------


async def test_build_prompt_clips_each_side_before_templating():
    request = CompletionRequest(prefix=code(2000), suffix=code(2000), language="python", filepath="a.py")
    template = PromptTemplate.from_setting("qwen2.5-coder")
    prompt = await build_prompt(request, template, max_prefix_tokens=100, max_suffix_tokens=50)
    assert prompt.text.startswith("<|fim_prefix|>") and prompt.text.endswith("<|fim_middle|>")
    assert len(prompt.prefix) <= 100 * CHARS_PER_TOKEN and len(prompt.suffix) <= 50 * CHARS_PER_TOKEN
    assert request.prefix.endswith(prompt.prefix) and request.suffix.startswith(prompt.suffix)
    assert prompt.text == template.render(prompt.prefix, prompt.suffix)
    assert (prompt.language, prompt.filepath) == ("python", "a.py")


async def test_build_prompt_with_a_tokenizer_counts_tokens():
    request = CompletionRequest(prefix=code(500), suffix=code(500))
    prompt = await build_prompt(request, PromptTemplate.from_setting("starcoder"), max_prefix_tokens=64,
                                max_suffix_tokens=32, count_tokens=word_count)
    assert 0 < await word_count(prompt.prefix) <= 64 and 0 < await word_count(prompt.suffix) <= 32


async def test_build_prompt_prefix_only_and_crlf():
    request = CompletionRequest(prefix="a = 1\r\nb = ", suffix="\r\nc = 3\r\n")
    prompt = await build_prompt(request, PromptTemplate.from_setting(None), max_prefix_tokens=100,
                                max_suffix_tokens=100)
    assert prompt.suffix is None and prompt.text == prompt.prefix == "a = 1\nb = "
    prompt = await build_prompt(request, PromptTemplate.from_setting("starcoder"), max_prefix_tokens=100,
                                max_suffix_tokens=100)
    assert prompt.suffix == "\nc = 3\n" and "\r" not in prompt.text


async def test_build_prompt_rejects_negative_budgets():
    request = CompletionRequest(prefix="x")
    with pytest.raises(ValueError, match="max_suffix_tokens"):
        await build_prompt(request, PromptTemplate.from_setting(None), max_prefix_tokens=1, max_suffix_tokens=-1)


async def test_a_failing_tokenizer_falls_back_to_characters(caplog):
    async def broken(text: str) -> int:
        raise ConnectionError("llama-server /tokenize: connection refused")

    request = CompletionRequest(prefix=code(500), suffix=code(10))
    prompt = await build_prompt(request, PromptTemplate.from_setting("starcoder"), max_prefix_tokens=50,
                                max_suffix_tokens=50, count_tokens=broken)
    assert 0 < len(prompt.prefix) <= 50 * CHARS_PER_TOKEN
    assert "counting tokens failed" in caplog.text and "/tokenize" in caplog.text
