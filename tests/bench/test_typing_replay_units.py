"""The typing replay's pure parts: which region is typed, keystrokes, and judging a suggestion."""

from __future__ import annotations

from bench.replay.editing import accepted_chars, choose_region, position_of
from bench.replay.typing_replay import (RequestRecord, VariantResult, covered_chars, first_line_matches,
                                        plan_keystrokes, ratios, suggestion_after_cursor, summarise)
from bench.replay.typing_replay_server import parse_prometheus

TEXT = "import os\n\ndef f(x):\n    y = x + 1\n    return y\n\nprint(f(1))\n"


def test_region_starts_after_indentation_and_ends_at_a_line_end():
    region = choose_region(TEXT, 0.3, max_keystrokes=5)
    typed = TEXT[region.start:region.end]
    assert TEXT[region.start - 1] == " " and typed.startswith("y = x")
    assert TEXT[region.end] == "\n"
    assert choose_region(TEXT, 0.0, 10_000) == choose_region(TEXT, 0.0, 10_000)
    whole = choose_region(TEXT, 0.0, 10_000)
    assert TEXT[whole.start:whole.end] == TEXT


def test_enter_and_the_following_indentation_are_one_keystroke():
    keys = plan_keystrokes("a:\n    b\n\nc")
    assert [k.text for k in keys] == ["a", ":", "\n    ", "b", "\n", "\n", "c"]
    assert [k.offset for k in keys] == [0, 1, 2, 7, 8, 9, 10]


def test_position_counts_utf16_code_units():
    assert position_of("ab\ncd") == (1, 2)
    assert position_of("x\n😀a") == (1, 3)


def test_suggestion_judgement():
    assert first_line_matches("return y", "return y\nprint(f(1))")
    assert first_line_matches("\n    return y\n", "\n    return y\n\nprint")
    assert not first_line_matches("return", "return y\n")
    assert not first_line_matches("   ", "   ")
    assert accepted_chars("return z", "return y") == 7
    assert suggestion_after_cursor("    return y", "    ") == "return y"
    assert suggestion_after_cursor("return y", "") == "return y"


def test_summary_counts_answers_latency_and_ratios():
    result = VariantResult(variant="ours", settings={}, keystrokes=4, typed_chars=4)
    result.requests = [
        RequestRecord(file="f", keystroke=0, sent=0.0, answered=0.1),
        RequestRecord(file="f", keystroke=1, sent=1.0, answered=1.2, text="abc", shown=True, first_line_exact=True,
                      accepted=3),
        RequestRecord(file="f", keystroke=2, sent=2.0, answered=2.4, text="x", shown=True, accepted=0),
        RequestRecord(file="f", keystroke=3, sent=3.0),
    ]
    result.stats_before = {"calls_started": 1, "prefilled_tokens": 10, "llama_server_metrics": None}
    result.stats_after = {"calls_started": 3, "prefilled_tokens": 50, "llama_server_metrics": None}
    summary = summarise(result)
    assert summary["answered_share"] == 75.0
    assert round(summary["latency_ms_median"]) == 300
    assert summary["shown_per_100_keystrokes"] == 50.0
    assert summary["first_line_exact_share"] == 50.0
    assert summary["model_calls_per_100_keystrokes"] == 50.0
    assert summary["prefilled_tokens_per_call"] == 20.0
    assert summary["prefilled_tokens_source"] == "timings"
    assert ratios(summary, {**summary, "prefilled_tokens_per_call": 40.0})["prefilled_tokens_per_call"] == 0.5


def test_typed_characters_offered_by_several_shown_suggestions_count_once():
    """Typing through a suggestion shows its rest again on each keystroke: the share of typed text covered must not
    count those characters twice (it once read 114 %)."""
    result = VariantResult(variant="ours", settings={}, keystrokes=4, typed_chars=10)
    result.requests = [
        RequestRecord(file="f", keystroke=0, sent=0.0, answered=0.1, text="abcd", shown=True, accepted=4, offset=1),
        RequestRecord(file="f", keystroke=1, sent=1.0, answered=1.1, text="bcd", shown=True, accepted=3, offset=2),
        RequestRecord(file="f", keystroke=2, sent=2.0, answered=2.1, text="xyz", shown=False, accepted=0, offset=3),
        RequestRecord(file="g", keystroke=0, sent=3.0, answered=3.1, text="ab", shown=True, accepted=2, offset=1),
    ]
    assert covered_chars([r for r in result.requests if r.shown]) == 6  # f: offsets 1-4, g: offsets 1-2
    assert summarise(result)["accepted_chars_share_of_typed"] == 60.0
    assert summarise(result)["accepted_chars_per_shown"] == 3.0


def test_prometheus_page_parsing_drops_namespace_comments_and_labels():
    page = "# HELP x\nllamacpp:prompt_tokens_total 12\nllamacpp:requests{a=\"b\"} 3\nbad line\n"
    assert parse_prometheus(page) == {"prompt_tokens_total": 12.0, "requests": 3.0}
