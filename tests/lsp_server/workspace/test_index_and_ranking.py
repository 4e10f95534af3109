"""Ranking: the window index (BM25 and Jaccard), what is dropped, and the order snippets keep in the prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.workspace.index import WindowIndex
from lsp_server.workspace.ranking import Candidate, dedupe, drop_shown, relevant, same_language, stable_order
from lsp_server.workspace.text import identifiers, jaccard, term_counts, windows


def add(index: WindowIndex, key: str, text: str, size: int = 20) -> None:
    lines = text.split("\n")
    index.add(key, key, lines, windows(lines, size, size), keep_text=True)


def test_identifiers_drop_keywords_and_one_letter_names():
    assert identifiers("def parse_header(self, x):\n    return self.parse_body(x) + 1") == ["parse_header",
                                                                                        "parse_body"]


def test_windows_cover_every_line_and_end_at_the_last():
    lines = [str(i) for i in range(45)]
    ranges = list(windows(lines, 20, 10))
    assert ranges[0] == (0, 20) and ranges[-1] == (25, 45)
    assert {i for start, end in ranges for i in range(start, end)} == set(range(45))
    assert list(windows(lines[:5], 20, 10)) == [(0, 5)]
    assert list(windows([], 20, 10)) == []


@pytest.mark.parametrize("method", ["bm25", "jaccard"])
def test_the_window_sharing_rare_identifiers_ranks_first(method):
    index = WindowIndex()
    add(index, "a.py", "def load_config(path):\n    return parse_toml(read_file(path))")
    add(index, "b.py", "def render_page(template):\n    return template.render(context)")
    add(index, "c.py", "def unrelated():\n    return compute_something(value)")
    found = index.search(term_counts("config = load_config(path)\nparse_toml"), method, limit=3)
    assert [w.key for _, w in found][0] == "a.py"
    assert all(w.key != "c.py" for _, w in found)  # no shared identifier: not a candidate at all


def test_bm25_weighs_rare_identifiers_over_common_ones():
    index = WindowIndex()
    for i in range(30):
        add(index, f"common{i}.py", f"value = helper(value)\nother_{i} = 1")
    add(index, "rare.py", "value = frobnicate_widget(value)")
    found = index.search(term_counts("result = frobnicate_widget(value)"), "bm25", limit=2)
    assert found[0][1].key == "rare.py"


def test_removing_a_file_removes_its_windows_and_compaction_keeps_the_rest():
    index = WindowIndex()
    add(index, "keep.py", "def kept_function():\n    pass")
    for i in range(1200):
        add(index, f"gone{i}.py", "def kept_function_caller():\n    kept_function()")
    for i in range(1200):
        index.remove(f"gone{i}.py")
    assert len(index) == 1
    found = index.search(term_counts("kept_function"), "bm25", limit=5)
    assert [w.key for _, w in found] == ["keep.py"]
    add(index, "new.py", "kept_function()")
    assert {w.key for _, w in index.search(term_counts("kept_function"), "jaccard", limit=5)} == {"keep.py", "new.py"}


def test_skip_leaves_windows_out():
    index = WindowIndex()
    add(index, "a.py", "alpha_beta = gamma_delta")
    add(index, "b.py", "alpha_beta = epsilon")
    found = index.search(term_counts("alpha_beta"), "bm25", skip=lambda w: w.key == "a.py")
    assert [w.key for _, w in found] == ["b.py"]


def cand(source: str, key: str, start: int, end: int, text: str, score: float = 1.0) -> Candidate:
    return Candidate(source, key, key, start, end, text, score)


def test_snippets_overlapping_the_cursor_window_are_dropped():
    cursor_words = frozenset(identifiers("current_code here_now"))
    inside = cand("open", "/w/main.py", 10, 30, "def other_stuff(): pass_value()")
    outside = cand("open", "/w/main.py", 200, 220, "def far_away(): distant_call()")
    other_file = cand("file", "/w/util.py", 10, 30, "def helper_util(): pass_value()")
    kept = drop_shown([inside, outside, other_file], "/w/main.py", (0, 50), cursor_words)
    assert kept == [outside, other_file]


def test_near_copies_of_the_cursor_window_are_dropped():
    window = "total_price = compute_total(items, discount_rate)\nreturn total_price"
    cursor_words = frozenset(identifiers(window))
    copy = cand("file", "/w/copy.py", 0, 2, window + "\nextra_word")
    related = cand("file", "/w/rel.py", 0, 2, "def compute_total(items, discount_rate):\n    subtotal = sum(items)")
    assert jaccard(copy.words, cursor_words) > 0.5
    assert drop_shown([copy, related], "/w/main.py", (0, 10), cursor_words) == [related]


def test_dedupe_keeps_one_per_place_and_text_definitions_first():
    window = cand("file", "/w/u.py", 0, 20, "def helper(): return 1\nx_value = 2", score=9.0)
    definition = cand("definition", "/w/u.py", 0, 1, "def helper(): return 1", score=0.5)
    same_text = cand("open", "/w/v.py", 0, 20, "def helper(): return 1\nx_value = 2", score=1.0)
    assert dedupe([window, definition, same_text]) == [definition, same_text]


def test_stable_order_keeps_earlier_snippets_in_place_and_appends_new_ones():
    order: dict = {}
    a, b, c = (cand("file", f"/w/{n}.py", 0, 5, f"text_{n} = 1") for n in "abc")
    assert stable_order([b, a], order) == [b, a]
    # b's score now lower than c's, a dropped: b keeps its place at the front, c comes after it
    assert stable_order([c, b], order) == [b, c]


def test_same_language_keeps_families_together():
    ts = Candidate("open", "/w/a.ts", "a.ts", 0, 5, "x")
    py = Candidate("edit", "/w/b.py", "b.py", 0, 5, "x")
    other = Candidate("file", "/w/Makefile", "Makefile", 0, 5, "x")
    yank = Candidate("yank", "/w/c.py", "c.py", -1, -1, "x")
    assert same_language(ts, "javascript") and same_language(ts, "typescriptreact")
    assert not same_language(py, "go") and same_language(py, "python")
    assert same_language(other, "go"), "a file of no known language is not judged"
    assert same_language(yank, "go"), "yanked text was copied to be pasted here"
    assert same_language(py, ""), "an unknown cursor language keeps everything"
    assert same_language(Candidate("open", "/w/x.hpp", "x.hpp", 0, 1, "x"), "c")


def test_similar_code_must_share_something_with_the_cursor():
    assert not relevant(Candidate("edit", "k", "k", 0, 1, "x", score=0.0))
    assert not relevant(Candidate("open", "k", "k", 0, 1, "x", score=-2.4))
    assert relevant(Candidate("file", "k", "k", 0, 1, "x", score=0.3))
    assert relevant(Candidate("definition", "k", "k", 0, 1, "x", score=0.0))
    assert relevant(Candidate("yank", "k", "k", -1, -1, "x", score=0.0))


def test_closed_files_never_make_scores_negative():
    """Closed files' windows stay in the postings until compaction; document frequencies and the window count both
    include them, so IDF stays positive (it went negative when only live windows were counted)."""
    index = WindowIndex()
    add(index, "open.py", "total = compute_total(order_lines)")
    for i in range(5):
        add(index, f"closed{i}.py", f"total = compute_total(order_lines)\nfiller_{i} = 0")
    for i in range(5):
        index.remove(f"closed{i}.py")
    query = term_counts("grand = compute_total(order_lines)")
    assert index.score_words(query, frozenset(identifiers("compute_total(order_lines)"))) > 0
    [(score, window)] = index.search(query, "bm25")
    assert window.key == "open.py" and score > 0


def test_postings_survive_growth_from_one_window_and_compaction():
    """A word's postings start as one packed entry and grow; compaction keeps ids and frequencies."""
    index = WindowIndex()
    add(index, "first.py", "rare_token = 1")
    add(index, "second.py", "rare_token = rare_token + rare_token")
    for i in range(1001):  # the 1,001st removal compacts (more dead windows than max(1000, live))
        add(index, f"gone{i}.py", f"filler_{i} = 0")
    for i in range(1001):
        index.remove(f"gone{i}.py")
    assert len(index.windows) == 2
    found = {w.key: score for score, w in index.search(term_counts("rare_token"), "bm25")}
    fresh = WindowIndex()
    add(fresh, "first.py", "rare_token = 1")
    add(fresh, "second.py", "rare_token = rare_token + rare_token")
    expected = {w.key: score for score, w in fresh.search(term_counts("rare_token"), "bm25")}
    assert found == pytest.approx(expected) and found["second.py"] > found["first.py"]



def test_stable_order_forgets_the_oldest_places_and_keeps_the_order_of_the_rest():
    """Every new window or chunk is a new place; the map stays bounded (issue 27's soak) and what it forgets does not
    reorder the snippets still in use."""
    from lsp_server.workspace import ranking

    order: dict = {}
    kept = cand("file", "/w/kept.py", 0, 5, "kept_value = 1")
    assert stable_order([kept], order) == [kept]
    for i in range(3 * ranking.ORDER_KEPT):
        new = cand("edit", "/w/typed.py", i, i + 16, f"typed_{i} = {i}")
        assert stable_order([kept, new], order) == [kept, new]  # the snippet shown first stays first
    assert len(order) <= ranking.ORDER_KEPT
    a, b = (cand("file", f"/w/{n}.py", 0, 5, f"text_{n} = 1") for n in "ab")
    assert stable_order([b, a, kept], order) == [kept, b, a]


def test_identifier_sets_memoised_within_a_few_megabytes_however_many_texts_were_ranked():
    """The edited document's chunks are new text after every tick: the memo must not keep them all session
    (4096 kept chunk-sized texts held about 4 MB, issue 27)."""
    import sys

    from lsp_server.workspace import ranking

    source = (Path(__file__).parents[3] / "bench/replay/replay_files/language_server.py").read_text().split("\n")
    ranking._WORDS.clear()
    for i in range(5000):  # chunks of 16 lines of real code, as the ring takes them, each edited a little
        start = i % (len(source) - 16)
        text = "\n".join(source[start:start + 16]) + f"\ntyped_{i} = 1"
        cand("edit", "/w/typed.py", start, start + 16, text)
    held = sum(sys.getsizeof(text) + sys.getsizeof(words) for text, words in ranking._WORDS.items())
    assert held < 2 * 2 ** 20, (len(ranking._WORDS), held)
