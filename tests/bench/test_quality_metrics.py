"""The scoring pieces of bench/quality/suites.py: exact match, edit similarity, the oracle cut and execution in a
child."""

from __future__ import annotations

import pytest

from bench.quality.metrics import (edit_similarity, exact_match, levenshtein_row, line_cut_candidates,
                                   oracle_edit_similarity, oracle_exact_match)


def test_exact_match_compares_the_whole_suggestion_stripped():
    assert exact_match("    return x\n", "return x")
    assert not exact_match("return x\nprint(x)", "return x")


def test_levenshtein_row_gives_the_distance_to_every_prefix():
    assert levenshtein_row("abc", "abxc") == [3, 2, 1, 1, 1]
    assert levenshtein_row("abc", "xyzabc") == [3, 3, 3, 3, 4, 4, 3]


def test_edit_similarity():
    assert edit_similarity("abc", "abc") == 100.0
    assert edit_similarity("", "") == 100.0
    assert edit_similarity("abd", "abc") == pytest.approx(100 * 2 / 3)
    assert edit_similarity("", "abc") == 0.0


def test_oracle_exact_match_finds_a_prefix_after_leading_blank_lines():
    assert oracle_exact_match("\n    return x)\nfoo", "    return x")
    assert not oracle_exact_match("    retur", "return x")
    assert oracle_exact_match("anything", "")


def test_oracle_edit_similarity_is_the_best_prefix_and_bounds_the_full_text():
    raw = "  return a + b\n  print(a)\n"
    best = oracle_edit_similarity(raw, "return a + b")
    assert best == 100.0
    assert oracle_edit_similarity("xyz", "abc") >= edit_similarity("xyz", "abc")
    assert oracle_edit_similarity("return a - b", "return a + b") == pytest.approx(edit_similarity("return a - b",
                                                                                                      "return a + b"))


def test_line_cut_candidates_are_line_prefixes_then_the_whole_text_without_duplicates():
    assert line_cut_candidates("a\nb\n\nc") == ["a", "a\nb", "a\nb\n", "a\nb\n\nc"]
    assert line_cut_candidates("a\n") == ["a", "a\n"]
    assert line_cut_candidates("") == [""]
