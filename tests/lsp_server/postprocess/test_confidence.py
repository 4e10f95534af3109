"""first_line_confidence: the mean log-probability of the tokens that write a text's first line of code."""

from __future__ import annotations

import pytest

from lsp_server.postprocess.confidence import first_line_confidence


def test_the_tokens_of_the_first_line_only():
    # "a + b\nc": the tokens a, " +", " b" write the first line; the line break and "c" do not count
    tokens = ((0, -0.1), (1, -0.2), (3, -0.3), (5, -4.0), (6, -5.0))
    assert first_line_confidence("a + b\nc", tokens) == pytest.approx(-0.2)


def test_leading_blank_lines_and_indentation_do_not_count():
    text = "\n    x = 1\ny"
    # "\n" and the indentation are near-certain and would make any line look sure; "x = 1" is written by two tokens
    tokens = ((0, 0.0), (1, 0.0), (5, -1.0), (7, -3.0), (10, -9.0), (11, -9.0))
    assert first_line_confidence(text, tokens) == pytest.approx(-2.0)


def test_a_token_that_carries_the_indentation_with_code_counts():
    assert first_line_confidence("  return x", ((0, -0.5), (8, -1.5))) == pytest.approx(-1.0)


def test_none_without_log_probabilities_or_code():
    assert first_line_confidence("x = 1", None) is None
    assert first_line_confidence("x = 1", ()) is None
    assert first_line_confidence("  \n ", ((0, -1.0),)) is None
