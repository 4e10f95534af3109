"""The accepting user's pure parts: how much of a suggestion it takes, its keystrokes, and the summary."""

from __future__ import annotations

from bench.replay.accepting_user import (
    AcceptRecord,
    AcceptRequest,
    AcceptRun,
    accept_length,
    next_keystroke,
    summarise_accepting,
)


def test_a_right_suggestion_is_taken_whole():
    assert accept_length("return a + b", "return a + b\n") == (12, True)
    assert accept_length("\n    x = 1", "\n    x = 1\n    y = 2") == (10, True)


def test_a_partly_right_suggestion_is_taken_to_the_last_word_or_line_boundary_before_the_error():
    assert accept_length("foo(bar, baz)", "foo(bar, qux)") == (9, False)  # `foo(bar, ` : the next word is wrong
    assert accept_length("items.append(x)", "items.extend(x)") == (6, False)  # `items.`
    assert accept_length("x = 1\n    y = 3", "x = 1\n    y = 2") == (14, False)
    assert accept_length("value", "valid") == (0, False)  # wrong inside the first word: nothing to take
    assert accept_length("", "abc") == (0, False)


def test_enter_and_the_indentation_after_it_are_one_keystroke():
    assert next_keystroke("a:\n    b", 2) == "\n    "
    assert next_keystroke("a:\n    b", 0) == "a"


def test_summary():
    run = AcceptRun(variant="ours", settings={}, actions=10, typed_keystrokes=8, region_chars=40, accepted_chars=10)
    run.requests = [AcceptRequest(file="f", version=1, sent=0.0, answered=0.2, text="abc", shown=True),
                    AcceptRequest(file="f", version=2, sent=1.0, answered=1.1, text="x", shown=True, wrong=True),
                    AcceptRequest(file="f", version=3, sent=2.0, answered=2.5)]
    run.accepts = [AcceptRecord("f", 3.0, 8, True, next_latency_ms=20.0, next_shown=True),
                   AcceptRecord("f", 4.0, 2, False, next_latency_ms=5.0, next_shown=True)]
    summary = summarise_accepting(run)
    assert summary["keystrokes_saved_share"] == 25.0
    assert summary["shown_per_100_actions"] == 20.0 and summary["wrong_shown_per_100_actions"] == 10.0
    assert summary["accept_to_next_ms_median"] == 20.0  # after whole accepts only
    assert summary["answered_share"] == 100.0
