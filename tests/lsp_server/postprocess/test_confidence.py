"""The confidence cut (`line_mode.confident_end`, opt-in with the server's `confidence_cut`): a multi-line text ends
before the first line after its first whose first token of code the model was unsure of."""

from __future__ import annotations

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.line_mode import (CONFIDENCE_FLOOR, confident_end, cut_to_line_mode,
                                              first_token_logprobs)

SURE, UNSURE = -0.1, CONFIDENCE_FLOOR - 0.5


def logprobs(tokens: list[tuple[str, float]]) -> tuple[str, tuple[tuple[int, float], ...]]:
    """The text the tokens spell and (offset, log-probability) for each."""
    out, offset = [], 0
    for text, value in tokens:
        out.append((offset, value))
        offset += len(text)
    return "".join(t for t, _ in tokens), tuple(out)


# if x:\n    y = 1\nz = 2  — the `z` line unsure
BLOCK = [("if", SURE), (" x", SURE), (":", SURE), ("\n", SURE), ("    ", SURE), ("y", SURE), (" =", SURE),
         (" 1", SURE), ("\n", SURE), ("z", UNSURE), (" =", SURE), (" 2", SURE)]


def test_first_token_of_each_line():
    text, probs = logprobs([("a", -1.0), ("\n", -2.0), ("    ", -3.0), ("b", -4.0), ("\n\n", -5.0), ("c", -6.0)])
    assert first_token_logprobs(text, probs) == [-1.0, -4.0, None, -6.0]
    # an indentation written in the same token as the code: that token
    text, probs = logprobs([("a", -1.0), ("\n", -2.0), ("  b", -3.0)])
    assert first_token_logprobs(text, probs) == [-1.0, -3.0]


def test_the_text_ends_before_the_first_unsure_line():
    text, probs = logprobs(BLOCK)
    assert confident_end(text, probs) == "if x:\n    y = 1"


def test_an_unsure_first_line_and_sure_later_lines_stay():
    text, probs = logprobs([("a", UNSURE), ("\n", SURE), ("b", SURE)])
    assert confident_end(text, probs) == "a\nb"


def test_without_logprobs_nothing_changes():
    text, _ = logprobs(BLOCK)
    assert confident_end(text, None) == text and confident_end(text, ()) == text


def ctx(text_logprobs, line_mode: str, model_ended: bool = False) -> PostprocessContext:
    return PostprocessContext(prefix="def f(x):\n", suffix="", language="python", line_mode=line_mode,
                              model_ended=model_ended, token_logprobs=text_logprobs)


def test_the_filter_cuts_only_texts_the_model_did_not_end_in_multi_line_situations():
    text, probs = logprobs(BLOCK)
    assert cut_to_line_mode(text, ctx(probs, "block")) == "if x:\n    y = 1"
    assert cut_to_line_mode(text, ctx(None, "block")) == text  # no log-probabilities: as before
    assert cut_to_line_mode(text, ctx(probs, "block", model_ended=True)) == text
