"""The streaming stop-word matcher against a whole-text oracle, plus the cases simpler designs get wrong (a stop word
followed by more text in the same chunk, a stop word split across chunks)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.decoding import StopCondition, StopConditions, ends_with_stop_word, first_stop, stop_condition, stop_trie
from engine.languages import default_table

PYTHON = default_table().lookup("python").stop_words()


def oracle(words, prefix_tail: str, generated: str) -> tuple[str, int | None]:
    """The earliest stop word in prefix_tail + generated. One that begins in the prefix tail counts only when its
    generated part is whitespace (a blank line); one lying wholly in the prefix tail never counts.
    Returns (the generated text before it, its start in the combined text or None)."""
    combined, n = prefix_tail + generated, len(prefix_tail)
    best = None
    for word in set(words):
        start = combined.find(word)
        while start != -1:
            end = start + len(word)
            if end > n and (start >= n or combined[n:end].isspace()):
                best = start if best is None else min(best, start)
                break
            start = combined.find(word, start + 1)
    if best is None:
        return generated, None
    return generated[:max(0, best - n)], best


def safe_to_show(words, seen: str) -> str:
    """What a streaming matcher can show once `seen` was generated: the text before the first place where a stop
    word begins, or where the rest of the text may still become one."""
    for p in range(len(seen)):
        rest = seen[p:]
        if any(rest.startswith(w) or w.startswith(rest) for w in words):
            return seen[:p]
    return seen


def earliest_is_whole(words, seen: str) -> bool:
    """Whether the first place where a stop word begins or may still begin holds a whole one. A whole stop word
    further on does not stop the stream yet: one that begins earlier may still complete."""
    for p in range(len(seen)):
        rest = seen[p:]
        if any(rest.startswith(w) for w in words):
            return True
        if any(w.startswith(rest) for w in words):
            return False
    return False


def run_chunks(words, prefix_tail: str, chunks: list[str], make=StopCondition) -> tuple[str, StopCondition, list[int]]:
    condition = make(words, prefix_tail)
    out, held = [], []
    for chunk in chunks:
        out.append(condition.feed(chunk))
        held.append(condition.held)
    out.append(condition.finish())
    return "".join(out), condition, held


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:])]


ALPHABET = "ab\n <|>"
words_st = st.lists(st.text(ALPHABET, min_size=1, max_size=5), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(words=words_st, prefix_tail=st.text(ALPHABET, max_size=6), generated=st.text(ALPHABET, max_size=40),
       cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=12))
def test_matches_the_whole_text_oracle_on_any_chunking(words, prefix_tail, generated, cuts):
    out, condition, held = run_chunks(words, prefix_tail, split(generated, cuts))
    expected, start = oracle(words, prefix_tail, generated)
    assert out == expected
    assert condition.stopped == (start is not None)
    if start is not None:
        assert (prefix_tail + generated)[start:].startswith(condition.stop_word)
    # While it runs it never holds back more than the longest stop word minus one character.
    longest = max(map(len, words))
    assert all(h <= longest - 1 for h in held[:-1] or [0])


two_starts_words_st = st.lists(st.tuples(st.sampled_from(["\n", "<"]), st.text(ALPHABET, max_size=5)).map("".join),
                               min_size=1, max_size=10)


@settings(max_examples=500, deadline=None)
@given(words=two_starts_words_st, prefix_tail=st.sampled_from(["", "", "a\n", "<"]),
       generated=st.lists(st.sampled_from(["\n", "<", "a", " ", "|", ">", "b", "\n  "]), max_size=30).map("".join),
       sizes=st.lists(st.integers(min_value=1, max_value=4), max_size=30))
@example(words=["\n\n", "\n  \n"], prefix_tail="", generated="a\n\nb", sizes=[2, 1, 1])  # held start completed
@example(words=["\n  \n"], prefix_tail="", generated="a\n  b", sizes=[2, 2, 1])  # held indentation ended
@example(words=["<", "<ab"], prefix_tail="", generated="b<ab", sizes=[3, 1])  # a whole word inside a longer start
@example(words=["<<a"], prefix_tail="", generated="<<<a", sizes=[2, 1, 1])  # a start inside what is held
@example(words=["\n<<", "<"], prefix_tail="", generated="\n<", sizes=[])  # a whole word after an earlier start
@example(words=["\n  \n", "\n<"], prefix_tail="", generated="a\n  a<", sizes=[2, 4])  # blanks, then a start
@example(words=["<>>>\n"], prefix_tail="", generated="<>>>\n", sizes=[3, 2])  # not blanks after what is held
def test_fast_paths_for_two_first_characters_match_the_oracle(words, prefix_tail, generated, sizes):
    """Stop words that all begin with "\n" or "<", like every language's defaults, take the matcher's fast paths
    (held indentation, a chunk ending in the start of a stop word, a held start ended by the next character)."""
    cuts = [sum(sizes[:k]) for k in range(1, len(sizes) + 1)]  # small chunks, as tokens are
    chunks = split(generated, cuts)
    out, condition, held = run_chunks(words, prefix_tail, chunks)
    if not prefix_tail:  # and nothing is shown later than it could be: only what may still be a stop word waits
        streamed = StopCondition(words)
        shown, seen = "", ""
        for chunk in chunks:
            shown, seen = shown + streamed.feed(chunk), seen + chunk
            assert shown == safe_to_show(words, seen)
            # and it stops as soon as the earliest stop word is whole (so the engine can close the stream at once)
            assert streamed.stopped == earliest_is_whole(words, seen)
    expected, start = oracle(words, prefix_tail, generated)
    assert out == expected
    assert condition.stopped == (start is not None)
    if start is not None:
        assert (prefix_tail + generated)[start:].startswith(condition.stop_word)
    assert all(h <= max(map(len, words)) - 1 for h in held[:-1] or [0])


@settings(max_examples=200, deadline=None)
@given(generated=st.text("def clas\n \t#<|>()", max_size=80), cuts=st.lists(st.integers(0, 100), max_size=20),
       prefix_tail=st.sampled_from(["", "\n", "x = 1\n", "def f():\n    "]))
def test_real_stop_words_match_the_oracle(generated, cuts, prefix_tail):
    out, _, _ = run_chunks(PYTHON, prefix_tail, split(generated, cuts))
    assert out == oracle(PYTHON, prefix_tail, generated)[0]


def test_stop_word_inside_a_chunk_followed_by_more_text():
    condition = StopCondition(PYTHON, "def f():\n")
    assert condition.feed("    return 1\n\ndef g():\n    pass") == "    return 1"
    assert condition.stopped and condition.stop_word == "\n\n"
    assert condition.feed("more") == "" and condition.finish() == ""


def test_stop_word_spanning_several_chunks():
    condition = StopCondition(PYTHON)
    emitted = [condition.feed(c) for c in ("x = 1<|en", "doft", "ext|", ">junk")]
    assert emitted == ["x = 1", "", "", ""]
    assert condition.stop_word == "<|endoftext|>"


def test_holds_back_only_what_may_start_a_stop_word_and_flushes_it_at_the_end():
    condition = StopCondition(PYTHON)
    assert condition.feed("abc<|end") == "abc"
    assert condition.held == len("<|end")
    assert condition.feed("ing") == "<|ending"  # no stop word starts with "<|endi": released at once
    assert condition.feed("\n    ") == ""  # may become a blank line
    assert condition.finish() == "\n    "
    assert not condition.stopped


def test_prefix_tail_completes_a_blank_line_but_is_never_output():
    text, word = first_stop("\nprint(1)", PYTHON, prefix_tail="x = 1\n")
    assert (text, word) == ("", "\n\n")
    text, word = first_stop("\n    \n", PYTHON, prefix_tail="x = 1\n    ")
    assert (text, word) == ("", "\n    \n")


def test_a_prefix_tail_shorter_than_the_longest_stop_word_is_used_whole():
    assert first_stop("  \nx", ["\n      \n"], prefix_tail="\n    ") == ("", "\n      \n")


def test_a_completion_may_begin_with_a_keyword_or_comment_at_column_zero():
    generated = "def g():\n    return 2\n\n\nclass C: pass"
    assert first_stop(generated, PYTHON, prefix_tail="x = 1\n") == ("def g():\n    return 2", "\n\n")
    assert first_stop("# note\nx = 2", PYTHON, prefix_tail="y\n") == ("# note\nx = 2", None)
    # ...but a keyword at column 0 later in the completion stops it.
    assert first_stop("x = 2\ndef h(): pass", PYTHON, prefix_tail="y\n") == ("x = 2", "\ndef")


def test_unknown_language_is_single_line():
    words = default_table().lookup("no-such-language").stop_words()
    assert first_stop("foo()\nbar()", words) == ("foo()", "\n")
    # The "\n" that ends the prefix is not a stop by itself.
    assert first_stop("foo()", words, prefix_tail="x\n") == ("foo()", None)


def test_state_stays_small_however_long_the_text():
    """The cost per chunk depends on the chunk: nothing but the held-back tail is kept between chunks."""
    condition = StopCondition(PYTHON)
    line = "    value = compute(a, b)  # no stop word here\n"
    for _ in range(2_000):
        for i in range(0, len(line), 3):
            condition.feed(line[i:i + 3])
            assert len(condition._buf) <= max(map(len, PYTHON)) - 1
    assert not condition.stopped


def test_no_stop_words_passes_everything_through():
    condition = StopCondition([])
    assert condition.feed("a\n\nb") == "a\n\nb" and condition.finish() == ""


@pytest.mark.parametrize("bad", [["ok", ""], "not-a-list", [None]])
def test_bad_stop_words_raise_value_error_naming_them(bad):
    with pytest.raises(ValueError, match="stop_words"):
        StopCondition(bad)
    with pytest.raises(ValueError, match="stop_words"):
        stop_trie(bad)


def test_stop_trie_is_reversed_and_cached_per_word_set():
    trie = stop_trie(["\n\n", "<EOT>"])
    assert trie is stop_trie(["<EOT>", "\n\n"])
    assert sorted(trie.keys()) == sorted(["\n\n", ">TOE<"])
    assert trie[">TOE<"] == "<EOT>"
    assert ends_with_stop_word("x = 1<EOT>", ["<EOT>", " <EOT>"]) == "<EOT>"
    assert ends_with_stop_word("x = 1 <EOT>", ["<EOT>", " <EOT>"]) == " <EOT>"
    assert ends_with_stop_word("x = 1", ["<EOT>"]) is None
    assert ends_with_stop_word("abc", ["abc", "longer-than-the-text"]) == "abc"


def test_benchmark_script_runs_and_records_every_size(tmp_path):
    """A smoke run, so the benchmark cannot rot; speed itself is judged by running the benchmark, not here."""
    import json

    from bench.latency import stop_condition

    out = tmp_path / "stop_condition.json"
    assert stop_condition.main(["--repeats", "1", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [row["generated_chars"] for row in report["rows"]] == [100, 1_000, 20_000, 200_000]
    assert all(row["ours_ns_per_char"] > 0 and row["naive_ns_per_char"] > 0 for row in report["rows"])
    assert "speedup_at_20000" in report and "ours_20000_vs_100" in report
    assert report["new_place_ms"]["union"] > 0 and report["new_place_ms"]["sets"] > 0


def test_matchers_kept_for_few_word_sets_as_each_place_brings_its_own():
    """Every request adds the line below the cursor to its stop words: a soak meets a new set at each place, and a
    matcher holds ~100 KB (issue 27). Only the last few sets stay cached, however many places were typed at."""
    from engine import decoding

    python = default_table().lookup("python").stop_words()
    for i in range(3 * decoding.MATCHERS_KEPT):
        first_stop("x = 1", [*python, f"\n    value_{i} = compute({i})\n"])
        ends_with_stop_word("x = 1", [*python, f"\n    value_{i} = compute({i})\n"])
    assert decoding._matcher.cache_info().currsize <= decoding.MATCHERS_KEPT
    assert decoding._reversed_trie.cache_info().currsize <= decoding.MATCHERS_KEPT
    # the set in use (the cursor still above the same line) is still served from the cache
    last = 3 * decoding.MATCHERS_KEPT - 1
    hits = decoding._matcher.cache_info().hits
    first_stop("y = 2", [*python, f"\n    value_{last} = compute({last})\n"])
    assert decoding._matcher.cache_info().hits == hits + 1


# ---------------------------------------------------------------------------------------------------------------------
# Several word sets checked as one (the language's fixed words, the request's own)


@settings(max_examples=500, deadline=None)
@given(sets=st.lists(words_st, min_size=2, max_size=3), prefix_tail=st.text(ALPHABET, max_size=6),
       generated=st.text(ALPHABET, max_size=40), cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=12))
@example(sets=[["\n\n"], ["\n"]], prefix_tail="a\n", generated="\nb", cuts=[])  # one begins in the prefix tail
@example(sets=[["ab"], ["a"]], prefix_tail="", generated="xab", cuts=[2])  # same start: the shorter word
@example(sets=[["b"], ["<ab"]], prefix_tail="", generated="<ab", cuts=[1, 2])  # a held start earlier than a stop
def test_several_sets_match_one_matcher_over_their_union(sets, prefix_tail, generated, cuts):
    union = [word for words in sets for word in words]
    chunks = split(generated, cuts)
    out, condition, held = run_chunks(sets, prefix_tail, chunks, StopConditions)
    single_out, single, _ = run_chunks(union, prefix_tail, chunks)
    assert out == single_out == oracle(union, prefix_tail, generated)[0]
    assert (condition.stopped, condition.stop_word, condition.after) == (single.stopped, single.stop_word,
                                                                          single.after)
    assert all(h <= max(map(len, union)) - 1 for h in held[:-1] or [0])
    if not prefix_tail:  # shown as early as one matcher shows it, and stopped as soon as it would stop
        streamed = StopConditions(sets)
        shown, seen = "", ""
        for chunk in chunks:
            shown, seen = shown + streamed.feed(chunk), seen + chunk
            assert shown == safe_to_show(union, seen)
            assert streamed.stopped == earliest_is_whole(union, seen)


@settings(max_examples=200, deadline=None)
@given(generated=st.text("def x=1\n \t#<|>()", max_size=80), cuts=st.lists(st.integers(0, 100), max_size=20),
       prefix_tail=st.sampled_from(["", "\n", "x = 1\n", "def f():\n    "]))
def test_the_language_words_and_a_rejoin_line_match_their_union(generated, cuts, prefix_tail):
    rejoin = ("\n", "\n    x = 1\n")
    chunks = split(generated, cuts)
    out, condition, _ = run_chunks([PYTHON, rejoin], prefix_tail, chunks, StopConditions)
    single_out, single, _ = run_chunks([*PYTHON, *rejoin], prefix_tail, chunks)
    assert (out, condition.stop_word, condition.after) == (single_out, single.stop_word, single.after)


def test_a_request_word_does_not_rebuild_the_language_matcher():
    """A new place to type at brings a new rejoin line; the language's matcher (the costly regex) is reused."""
    from engine import decoding

    python = default_table().lookup("python").stop_words()
    stop_condition([python, ["\n    start = 0\n"]]).feed("x")
    misses = decoding._matcher.cache_info().misses
    for i in range(5):
        condition = stop_condition([python, [f"\n    value_{i} = compute({i})\n"]])
        assert condition.feed(f"a = 1\n    value_{i} = compute({i})\nmore") == "a = 1"
        assert condition.stop_word == f"\n    value_{i} = compute({i})\n"
    assert decoding._matcher.cache_info().misses == misses + 5  # one small matcher per new line, none for python


def test_one_set_or_none_is_a_plain_condition():
    assert isinstance(stop_condition([["\n"]]), StopCondition)
    assert isinstance(stop_condition([["\n"], ()]), StopCondition)
    assert stop_condition([(), ()]).feed("a\n\nb") == "a\n\nb"
    assert isinstance(stop_condition([["\n"], ["x"]]), StopConditions)
