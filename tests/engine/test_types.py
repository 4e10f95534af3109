"""engine.types: option validation names the field; plain data round trips."""

from __future__ import annotations

import time

import pytest

from engine.types import (ChatMessage, ChatRequest, Completion, CompletionOptions, CompletionRequest,
                          GenerationStats, Prompt, StopReason)


def test_option_defaults():
    before = int(time.time() * 1000)
    options = CompletionOptions()
    after = int(time.time() * 1000)
    assert options.sampling_temperature == 0.1 and options.presence_penalty == 0.0
    assert options.mode == "standard" and options.stop_words == ()
    assert before <= options.seed <= after  # the current time in milliseconds
    assert options.max_decoding_tokens > 0


@pytest.mark.parametrize("field, value", [
    ("max_decoding_tokens", 0), ("max_decoding_tokens", -5), ("max_decoding_tokens", 1.5),
    ("max_decoding_tokens", True),
    ("sampling_temperature", -0.1), ("sampling_temperature", 2.5), ("sampling_temperature", "hot"),
    ("seed", -1), ("seed", 1.0), ("seed", False),
    ("presence_penalty", 3), ("presence_penalty", -2.1), ("presence_penalty", None),
    ("stop_words", "\n"), ("stop_words", ("ok", "")), ("stop_words", (1,)),
    ("mode", "fast"),
])
def test_invalid_options_raise_value_error_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        CompletionOptions(**{field: value})


def test_valid_edge_values_are_accepted():
    options = CompletionOptions(max_decoding_tokens=1, sampling_temperature=0, seed=0, presence_penalty=-2,
                                stop_words=["a", "b"], mode="next_edit_suggestion")
    assert options.stop_words == ("a", "b")  # lists become tuples: options stay hashable and frozen
    assert hash(options) == hash(CompletionOptions(max_decoding_tokens=1, sampling_temperature=0, seed=0,
                                                   presence_penalty=-2, stop_words=("a", "b"),
                                                   mode="next_edit_suggestion"))


def test_request_prompt_and_completion_defaults():
    request = CompletionRequest(prefix="a")
    assert (request.suffix, request.language, request.filepath) == ("", "plaintext", None)
    prompt = Prompt(text="t", prefix="p")
    assert prompt.suffix is None
    completion = Completion(text="x", stop_reason=StopReason.END_OF_STREAM)
    assert completion.stats == GenerationStats() and completion.prompt is None
    assert StopReason.STOP_WORD == "stop_word"


def test_stats_are_per_instance():
    a, b = GenerationStats(), GenerationStats()
    a.timings["x"] = 1
    assert b.timings == {}


def test_chat_request_to_openai_omits_unset_fields():
    request = ChatRequest(messages=(ChatMessage("system", "s"), ChatMessage("user", "u")), model="m",
                          temperature=0.0, stop=("\n",))
    assert request.to_openai() == {
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        "model": "m", "temperature": 0.0, "stop": ["\n"]}
    assert "stop" not in ChatRequest(messages=()).to_openai()
